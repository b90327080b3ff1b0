"""--n-items N|FILE: item counts for tables that have none (jagged.readers.canonical.item_counts)."""

from __future__ import annotations

import pandas as pd
import pytest
from clitools import assert_bad_input, run_cli
from conftest import TEST_DATA

import jagged
from jagged.analysis import analyse
from jagged.readers import limits

HENDRYCKS = TEST_DATA / "mmlu_hendrycks_readme_4categories.csv"
#: The MMLU test split per category (Hendrycks et al. 2021): 14,042 questions in all.
MMLU_SIZES = {"humanities": 4705, "other": 3242, "social_sciences": 3077, "stem": 3018}


@pytest.fixture
def sizes(tmp_path):
    path = tmp_path / "sizes.csv"
    pd.DataFrame({"domain": list(MMLU_SIZES), "n_items": list(MMLU_SIZES.values()),
                  "source": "Hendrycks 2021"}).to_csv(path, index=False)
    return path


def test_one_number_for_every_domain():
    plain = jagged.load(HENDRYCKS)
    assert plain.scores["n_items"].isna().all()
    dataset = jagged.load(HENDRYCKS, n_items="100")
    assert (dataset.scores["n_items"] == 100).all() and len(dataset.scores) == len(plain.scores)
    assert dataset.selection == {"n_items": "100"}
    assert (jagged.load(HENDRYCKS, n_items=250).scores["n_items"] == 250).all()


def test_a_domain_file_gives_each_domain_its_count(sizes):
    dataset = jagged.load(HENDRYCKS, n_items=str(sizes))
    expected = dataset.scores["domain"].astype(str).map(MMLU_SIZES)
    assert dataset.scores["n_items"].tolist() == expected.astype(float).tolist()
    assert dataset.selection == {"n_items": str(sizes)}
    assert dataset.scores.groupby("domain", observed=True)["n_items"].first().sum() == 14042
    code, out, err = run_cli("validate", HENDRYCKS, "--n-items", sizes)
    assert code == 0 and "item counts (n_items) present" in out and "n_items from sizes.csv (--n-items)" in out, err


def test_the_noise_side_works_on_a_leaderboard_table(sizes):
    without = analyse(HENDRYCKS, bootstrap=0)
    with_counts = analyse(HENDRYCKS, bootstrap=0, n_items=str(sizes))
    assert not without.has_noise and with_counts.has_noise
    assert without.table["noise_share"].isna().all()
    assert with_counts.table["noise_share"].notna().all()


def test_missing_domains_conflicts_and_bad_values_are_one_line_errors(tmp_path, sizes):
    partial = tmp_path / "partial.csv"
    partial.write_text("domain,n_items\nstem,3018\nhumanities,4705\n")
    assert_bad_input("validate", HENDRYCKS, "--n-items", partial,
                     fragments=("partial.csv: no n_items for 2 domains", "'other', 'social_sciences'"))
    assert_bad_input("validate", TEST_DATA / "mmlu_per_subject_lmeval_5shot.csv", "--n-items", "100",
                     fragments=("has item counts (n_items) of its own", "give one or the other"))
    assert_bad_input("validate", TEST_DATA / "mmlu_pro_item_level.csv.gz", "--n-items", "100",
                     fragments=("item-level data count their items",))
    for value in ("0", "-3", "2.5", "no-such-file.csv"):
        assert_bad_input("validate", HENDRYCKS, "--n-items", value,
                         fragments=(f"--n-items '{value}'", "positive whole number"))
    twice = tmp_path / "twice.csv"
    twice.write_text("domain,n_items\nstem,3018\nstem,3000\n")
    assert_bad_input("validate", HENDRYCKS, "--n-items", twice, fragments=("domain 'stem' has two counts",))
    nocol = tmp_path / "nocol.csv"
    nocol.write_text("subject,count\nstem,3018\n")
    assert_bad_input("validate", HENDRYCKS, "--n-items", nocol, fragments=("missing column(s) domain, n_items",))
    bad = tmp_path / "bad.csv"
    bad.write_text("domain,n_items\nstem,many\n")
    assert_bad_input("validate", HENDRYCKS, "--n-items", bad, fragments=("bad.csv", "'many'", "line 2"))


def test_the_counts_file_is_read_within_the_input_cap(sizes):
    with limits.input_cap(20):
        with pytest.raises(limits.InputTooLargeError):
            from jagged.readers.canonical import item_counts

            item_counts(str(sizes))
