"""A hive-partitioned Parquet folder (``model=.../domain=.../part-0.parquet``) read through ``jagged.load``.

The folder is read out of core (:func:`jagged.readers.items_parquet.dataset_from_parquet`),
never loaded whole; its numbers equal the same rows read from one CSV file, also when
models miss items; a bad partition is one line naming the file.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import jagged
from jagged.errors import JaggedInputError


def _rows() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = [(f"m{m}", f"d{d}", f"d{d}-q{i}", float(rng.random() < 0.3 + 0.15 * m))
            for m in range(4) for d in range(3) for i in range(20)
            if not (m == 3 and i % 5 == 0) and not (m == 2 and d == 1 and i < 4)]  # models that miss items
    return pd.DataFrame(rows, columns=["model", "domain", "item", "correct"])


def _store(root, frame: pd.DataFrame, keys=("model", "domain")):
    for values, group in frame.groupby(list(keys)):
        folder = root.joinpath(*(f"{k}={v}" for k, v in zip(keys, values)))
        folder.mkdir(parents=True, exist_ok=True)
        group.drop(columns=list(keys)).to_parquet(folder / "part-0.parquet", index=False)
    (root / "_SUCCESS").write_text("")  # what Spark leaves: skipped
    return root


@pytest.mark.parametrize("keys", [("model",), ("model", "domain")], ids=["model=", "model=/domain="])
def test_a_partitioned_folder_reads_like_the_same_rows_in_one_file(tmp_path, keys):
    frame = _rows()
    flat = tmp_path / "flat.csv"
    frame.to_csv(flat, index=False)
    lake = jagged.load(_store(tmp_path / "lake", frame, keys))
    one = jagged.load(flat)
    assert lake.items is None  # out of core: the item table is not loaded
    key = ["model", "domain"]
    got = lake.scores.sort_values(key).reset_index(drop=True)[key + ["score", "n_items"]]
    want = one.scores.sort_values(key).reset_index(drop=True)[key + ["score", "n_items"]]
    pd.testing.assert_frame_equal(got.astype({"model": str, "domain": str}), want.astype({"model": str, "domain": str}),
                                  check_dtype=False)
    # by hand: m3 misses every fifth item, m2 four items of d1
    counts = frame.groupby(key)["correct"].agg(["mean", "size"])
    assert got.set_index(key).loc[("m3", "d0"), "n_items"] == 16 == counts.loc[("m3", "d0"), "size"]
    assert got.set_index(key).loc[("m2", "d1"), "n_items"] == 16
    np.testing.assert_allclose(got.set_index(key)["score"].sort_index(), counts["mean"].sort_index(), atol=1e-12)


def test_a_selection_option_is_refused_in_one_line(tmp_path):
    lake = _store(tmp_path / "lake", _rows())
    with pytest.raises(JaggedInputError, match=r"^lake: --models is not available for a partitioned Parquet folder"):
        jagged.load(lake, models=["m0"])


def _one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text and text.startswith("lake")
    return text


def test_a_file_that_is_no_parquet_is_named(tmp_path):
    lake = _store(tmp_path / "lake", _rows())
    (lake / "model=m0" / "domain=d0" / "notes.csv").write_text("a,b\n1,2\n")
    with pytest.raises(JaggedInputError) as exc:
        jagged.load(lake)
    assert "model=m0/domain=d0/notes.csv is not a Parquet file" in _one_line(exc)


def test_a_corrupt_partition_is_one_line(tmp_path):
    lake = _store(tmp_path / "lake", _rows())
    (lake / "model=m1" / "domain=d2" / "part-0.parquet").write_bytes(b"PAR1 this is not parquet PAR1")
    with pytest.raises(JaggedInputError) as exc:
        jagged.load(lake)
    _one_line(exc)


def test_partitions_whose_schemas_disagree_are_one_line(tmp_path):
    frame = _rows()
    lake = _store(tmp_path / "lake", frame)
    odd = lake / "model=m1" / "domain=d2" / "part-0.parquet"
    frame.loc[(frame.model == "m1") & (frame.domain == "d2"), ["item"]].assign(
        correct="yes").to_parquet(odd, index=False)
    with pytest.raises(JaggedInputError) as exc:
        jagged.load(lake)
    _one_line(exc)


def test_the_items_command_on_a_store_says_only_what_applies(tmp_path):
    """No warning about options nobody gave, none from the engine's libraries; the item model's note, exit 0."""
    from clitools import run_cli

    store = _store(tmp_path / "lake", _rows(), keys=("model",))
    code, out, err = run_cli("items", store, "--top", "3", "-o", tmp_path / "items.csv")
    assert code == 0, err
    assert "warning" not in err, err
    assert "needs the response matrix in memory" in err            # the IRT refusal, said once, as a note
    audit = pd.read_csv(tmp_path / "items.csv")
    assert len(audit) == 3 and "slope" not in audit.columns and "posterior" not in audit.columns
    assert list(audit["item"].astype(str)) == sorted(audit["item"].astype(str))  # no ranking: by domain and item


def test_jagged_items_on_a_store_with_a_damaged_part_exits_2_naming_it(tmp_path):
    from clitools import run_cli

    store = _store(tmp_path / "lake", _rows(), keys=("model",))
    (store / "model=m1" / "part-0.parquet").write_bytes(b"not parquet")
    code, _, err = run_cli("items", store)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "model=m1/part-0.parquet is not a readable Parquet file" in err
