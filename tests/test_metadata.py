"""The --domain-key lookup shared by the Inspect and Every Eval Ever sample readers."""

from __future__ import annotations

import pytest

from jagged.errors import JaggedInputError
from jagged.readers.reader import metadata_domain, metadata_keys, metadata_value

RECORDS = [{"metadata": {"subject": " law ", "meta": {"area": "stem"}, "a.b": "literal"}},
           {"metadata": {"level": 3}}, {"no": "metadata"}]


def test_keys_are_listed_in_first_seen_order_with_nested_keys_dotted():
    assert metadata_keys(RECORDS) == ["subject", "meta", "meta.area", "a.b", "level"]


def test_a_key_as_written_wins_over_the_dotted_path():
    assert metadata_value(RECORDS[0], "a.b") == "literal"
    assert metadata_value(RECORDS[0], "meta.area") == "stem"
    with pytest.raises(KeyError):
        metadata_value(RECORDS[2], "subject")


def test_domain_is_stripped_and_bad_values_name_the_record():
    assert metadata_domain(RECORDS[0], "subject", "f.jsonl: line 1", []) == "law"
    with pytest.raises(JaggedInputError,
                       match=r"^f.jsonl: line 1: no metadata key 'topic'; available keys: subject, meta$"):
        metadata_domain(RECORDS[0], "topic", "f.jsonl: line 1", ["subject", "meta"])
    with pytest.raises(JaggedInputError, match="metadata 'meta' is .* not a domain name"):
        metadata_domain(RECORDS[0], "meta", "f.jsonl: line 1", [])
