"""File names from model names: safe, unique, bounded, never outside the output folder."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jagged.errors import JaggedInputError
from jagged.report.slug import EMPTY_STEM, MAX_LENGTH, WINDOWS_RESERVED, output_path, slug, unique_slugs

SAFE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")

HOSTILE = [
    "../../x", "/abs/path", "<b>", "CON", "con", "NUL", "com1", "LPT9", ".", "..", "", " ", "🤖", "😀😀",
    "<script>alert(1)</script>", '"><svg onload=alert(1)>', "a/../../b", "C:\\Windows\\system32", "x" * 300,
    "Ünïcödé", "日本語モデル", "Привет мир", "it's \"quoted\"", "tab\tand\nnewline", "\x00nul",
    "-.-",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_every_slug_is_safe_bounded_and_non_empty(name):
    stem = slug(name)
    assert SAFE.match(stem), stem
    assert 0 < len(stem) <= MAX_LENGTH
    assert stem not in WINDOWS_RESERVED


@pytest.mark.parametrize("name, expected", [
    ("../../x", "x"), ("/abs/path", "abs-path"), ("<b>", "b"), ("CON", "con-model"), ("nul", "nul-model"),
    (".", EMPTY_STEM), ("..", EMPTY_STEM), ("", EMPTY_STEM), ("🤖", EMPTY_STEM),
    ("GPT-4o (2024-05-13)", "gpt-4o-2024-05-13"), ("Ünïcödé", "unicode"), ("Привет мир", "privet-mir"),
    ("Meta-Llama-3_1-70B", "meta-llama-3-1-70b"), ("console", "console"),
])
def test_known_slugs(name, expected):
    assert slug(name) == expected


def test_long_names_are_cut_to_the_limit():
    assert len(slug("x" * 300)) <= MAX_LENGTH
    assert len(slug("word " * 100, max_length=40)) <= 40
    with pytest.raises(ValueError):
        slug("x", max_length=8)


def test_duplicates_after_slugging_get_suffixes_in_order():
    names = ["A b", "a-b", "a b", "A.B", "a-b-2"]
    assert unique_slugs(names) == ["a-b", "a-b-2", "a-b-3", "a-b-4", "a-b-2-2"]


def test_empty_and_reserved_names_are_unique_too():
    stems = unique_slugs([".", "..", "", "🤖", "CON", "con"], reserved=["model-3"])
    assert stems == ["model", "model-2", "model-4", "model-5", "con-model", "con-model-2"]


def test_reserved_stems_are_never_produced_case_insensitively():
    assert unique_slugs(["Index", "index"], reserved=["INDEX"]) == ["index-2", "index-3"]


def test_suffix_keeps_the_length_bound():
    stems = unique_slugs(["y" * 300, "y" * 301, "Y" * 302], max_length=30)
    assert len(set(stems)) == 3
    assert all(len(s) <= 30 and SAFE.match(s) for s in stems)
    assert stems[1].endswith("-2") and stems[2].endswith("-3")


def test_a_stem_depends_only_on_the_names_before_it():
    """Adding models at the end never renames the reports of the earlier ones (hand-worked stems)."""
    names = ["CON", "..", "con", "", "A b", "a-b", "x" * 300]
    expected = ["con-model", "model", "con-model-2", "model-2", "a-b", "a-b-2", "x" * (MAX_LENGTH - len("-model"))]
    assert unique_slugs(names) == expected
    for k in range(len(names)):
        assert unique_slugs(names[:k]) == expected[:k]
    assert unique_slugs(names + ["a b", "🤖"]) == [*expected, "a-b-3", "model-3"]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.text(max_size=120), max_size=25))
def test_random_names_give_unique_safe_stems(names):
    stems = unique_slugs(names, reserved=["index"])
    assert len(stems) == len(names)
    assert len({s.casefold() for s in stems}) == len(stems)
    assert all(SAFE.match(s) and len(s) <= MAX_LENGTH and s != "index" for s in stems)


def test_output_path_stays_in_the_folder(tmp_path):
    for stem in unique_slugs(HOSTILE):
        path = output_path(tmp_path, stem, ".failed.ipynb")
        assert path.resolve().parent == tmp_path.resolve()
        assert path.name == f"{stem}.failed.ipynb"


@pytest.mark.parametrize("stem", ["../x", "a/b", ".", "..", "", "A", "x.y", "/etc"])
def test_output_path_rejects_what_is_not_a_slug(tmp_path, stem):
    with pytest.raises(JaggedInputError):
        output_path(tmp_path, stem, ".html")
