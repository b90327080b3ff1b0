"""The item statistics as one Ibis expression: every sufficient statistic on DuckDB and on Spark, from a table in
memory, a Parquet file and a hive-partitioned folder, checked against an independent pandas/loop computation to
1e-9; the Poisson bootstrap's weights against a numpy implementation of the hash, and its coverage beside the paired
bootstrap on simulated data with known truth; the partitioned folder through the loader; engine settings."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jagged.errors import JaggedInputError
from jagged.readers.items import validate_items
from jagged.readers.items_parquet import dataset_from_parquet
from jagged.stats import engine as eng
from jagged.stats.bootstrap import item_matrix, replicates_from_matrix
from jagged.stats.item_audit import audit_items
from jagged.stats.item_sums import item_sums, lake_item_sums
from jagged.stats.poisson_bootstrap import (
    MASK32,
    POISSON_CDF,
    STRIDE,
    poisson_replicates,
    replicate_sums,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # duckdb's fetch_arrow_table inside ibis
TOL = 1e-9
MODELS = ("m-0", "m-1", "007", "m-3", "m-4", "m-5")
DOMAINS = ("alg", "bio", "geo")


# --------------------------------------------------------------------------- data


def lake_table(seed: int = 3) -> pd.DataFrame:
    """6 models x 3 domains x 12 items, choice and key, ~15% of rows missing, one model with a lone item in a domain,
    one item keyed differently by one model, a model named like a number."""
    rng = np.random.default_rng(seed)
    rows = []
    for domain in DOMAINS:
        for j in range(12):
            item, key = f"{domain}-{j:02d}", "ABCD"[rng.integers(4)]
            difficulty = rng.normal()
            for m, model in enumerate(MODELS):
                p = 1 / (1 + math.exp(-(m / 2 - 1 - difficulty)))
                this_key = "ABCD"["ABCD".index(key) - 1] if (item == "alg-03" and model == "m-1") else key
                if rng.random() < p:
                    choice = this_key
                else:
                    choice = [c for c in "ABCD" if c != this_key][rng.integers(3)] if rng.random() < 0.9 else None
                rows.append((model, domain, item, float(choice == this_key), choice, this_key, 4.0))
    table = pd.DataFrame(rows, columns=["model", "domain", "item", "correct", "choice", "key", "n_options"])
    keep = rng.random(len(table)) > 0.15
    keep &= ~((table["model"] == "m-5") & (table["domain"] == "bio") & (table["item"] != "bio-00"))
    keep |= ((table["model"] == "m-5") & (table["item"] == "bio-00")) | (table["item"] == "alg-03")
    return table[keep].reset_index(drop=True)


def write_file(table: pd.DataFrame, path) -> None:
    table.to_parquet(path, index=False)


def write_folder(table: pd.DataFrame, folder) -> None:
    """Hive-style: model=<name>/part-0.parquet, the model only in the path."""
    for model, part in table.groupby("model"):
        target = folder / f"model={model}"
        target.mkdir(parents=True)
        pq.write_table(pa.Table.from_pandas(part.drop(columns="model"), preserve_index=False),
                       target / "part-0.parquet")
    (folder / "_SUCCESS").write_text("")


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return validate_items(lake_table(), "<lake>", line_offset=None)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, table):
    folder = tmp_path_factory.mktemp("lake")
    write_file(table, folder / "items.parquet")
    write_folder(table, folder / "store")
    return {"file": folder / "items.parquet", "folder": folder / "store"}


# --------------------------------------------------------------------------- the independent computation


def _weights(values: np.ndarray, k: float) -> tuple[np.ndarray, np.ndarray]:
    wu, wl = np.zeros(len(values)), np.zeros(len(values))
    for r, v in enumerate(values):
        above, below, tied = (values > v).sum(), (values < v).sum(), (values == v).sum()
        wu[r] = 1.0 if above + tied <= k else min(1.0, max(0.0, (k - above) / tied))
        wl[r] = 1.0 if below + tied <= k else min(1.0, max(0.0, (k - below) / tied))
    return wu, wl


def oracle(table: pd.DataFrame, rest: str) -> dict[str, pd.DataFrame]:
    """Every sum from its definition with pandas group-bys and a loop per item for the upper/lower weights."""
    t = table.copy()
    t["grp"] = t["domain"] if rest == "domain" else "(all)"
    mg = t.groupby(["model", "grp"])["correct"].agg(s="sum", n="size").reset_index()
    t = t.merge(mg, on=["model", "grp"])
    t["rest"] = np.where(t["n"] > 1, (t["s"] - t["correct"]) / (t["n"] - 1).clip(lower=1), np.nan)
    t["w_u"], t["w_l"], t["k"] = 0.0, 0.0, 0.0
    for _, rows in t.groupby("item"):
        ok = rows.index[rows["rest"].notna()]
        k = max(1.0, math.floor(0.27 * len(ok) + 0.5)) if len(ok) else 0.0
        t.loc[rows.index, "k"] = k
        if len(ok):
            wu, wl = _weights(t.loc[ok, "rest"].to_numpy(), k)
            t.loc[ok, "w_u"], t.loc[ok, "w_l"] = wu, wl
    x, r = t["correct"], t["rest"]
    has_r = r.notna()
    r0 = r.fillna(0.0)
    t = t.assign(xx=x * x, n_r=has_r.astype(float), sx_r=x * has_r, sxx_r=x * x * has_r, sr=r0, srr=r0 * r0,
                 sxr=x * r0, sxwu=x * t["w_u"], sxwl=x * t["w_l"],
                 informed=t["key"].notna().astype(float))
    g = t.groupby("item")
    items = pd.DataFrame({
        "domain": g["domain"].first(), "group": g["grp"].first(), "n": g.size().astype(float), "sx": g["correct"].sum(),
        "sxx": g["xx"].sum(), "n_r": g["n_r"].sum(), "sx_r": g["sx_r"].sum(), "sxx_r": g["sxx_r"].sum(),
        "sr": g["sr"].sum(), "srr": g["srr"].sum(), "sxr": g["sxr"].sum(),
        "k_ul": g["k"].max(), "sxwu": g["sxwu"].sum(), "sxwl": g["sxwl"].sum(),
        "n_choice": g["informed"].sum(), "nopt_min": g["n_options"].min(), "nopt_max": g["n_options"].max(),
    }).reset_index()
    o = t[t["key"].notna()].assign(label=lambda f: f["choice"].fillna(""))
    wrong = o["correct"] == 0
    o = o.assign(wrong=wrong.astype(float), wrong_r=(wrong & o["rest"].notna()).astype(float))
    o = o.assign(sr_wrong=np.where(o["wrong"] == 1, o["rest"].fillna(0.0), 0.0), swu_wrong=o["w_u"] * o["wrong"])
    og = o.groupby(["item", "label"])
    options = pd.DataFrame({"count": og.size().astype(float), "swu": og["w_u"].sum(),
                            "n_wrong": og["wrong"].sum(), "n_wrong_r": og["wrong_r"].sum(),
                            "sr_wrong": og["sr_wrong"].sum(), "swu_wrong": og["swu_wrong"].sum()}).reset_index()
    keys = t[t["key"].notna()].groupby(["item", "key"]).size().astype(float).rename("count").reset_index()
    return {"mg": mg.rename(columns={"grp": "group"}), "rows": t, "items": items, "options": options, "keys": keys}


def oracle_sensitivity(table: pd.DataFrame, aside: list[str], rescore: dict[str, str]) -> pd.DataFrame:
    t = table.copy()
    kept = ~t["item"].isin(aside)
    alt = t["item"].map(rescore)
    t["s_kept"], t["n_kept"] = t["correct"] * kept, kept.astype(float)
    t["s_rescored"] = np.where(alt.notna(), (t["choice"] == alt).astype(float), t["correct"])
    t["n_rescored"] = alt.notna().astype(float)
    g = t.groupby(["model", "domain"])
    return pd.DataFrame({"s": g["correct"].sum(), "n": g.size().astype(float), "s_kept": g["s_kept"].sum(),
                         "n_kept": g["n_kept"].sum(), "s_rescored": g["s_rescored"].sum(),
                         "n_rescored": g["n_rescored"].sum()}).reset_index()


def mix32(x: np.ndarray) -> np.ndarray:
    x = ((x >> 16) ^ x) * 0x45D9F3B & MASK32
    x = ((x >> 16) ^ x) * 0x45D9F3B & MASK32
    return (x >> 16) ^ x


def oracle_poisson(table: pd.DataFrame, n_boot: int, seed: int) -> pd.DataFrame:
    """Σw·x, Σw, Σw·x² per (model, domain, b) with the weights computed in numpy from the module's definition."""
    names = np.sort(table["item"].unique())
    code = np.searchsorted(names, table["item"].to_numpy()).astype(np.int64)
    frames = []
    for b in range(n_boot):
        h = mix32(mix32(code ^ int(mix32(np.int64(seed & MASK32)))) ^ ((b * STRIDE) & MASK32))
        u = (h.astype(float) + 0.5) / 2.0 ** 32
        w = np.searchsorted(np.asarray(POISSON_CDF), u, side="left").astype(float)
        f = table[["model", "domain"]].assign(b=b, num=w * table["correct"], den=w,
                                              sq=w * table["correct"] ** 2)
        frames.append(f.groupby(["model", "domain", "b"])[["num", "den", "sq"]].sum().reset_index())
    return pd.concat(frames, ignore_index=True)


def assert_close(got: pd.DataFrame, want: pd.DataFrame, keys: list[str], what: str) -> None:
    got = got.sort_values(keys, key=lambda c: c.astype(str)).reset_index(drop=True)
    want = want.sort_values(keys, key=lambda c: c.astype(str)).reset_index(drop=True)
    assert len(got) == len(want), (what, len(got), len(want))
    for column in want.columns:
        a, b = got[column].to_numpy(), want[column].to_numpy()
        if column in keys or not pd.api.types.is_numeric_dtype(want[column]):
            assert [str(v) for v in a] == [str(v) for v in b], (what, column)
        else:
            np.testing.assert_allclose(a.astype(float), b.astype(float), rtol=TOL, atol=TOL,
                                       err_msg=f"{what}: {column}")


# --------------------------------------------------------------------------- parity


DUCKDB_CASES = [("duckdb", source, rest) for source in ("frame", "file", "folder") for rest in ("domain", "test")]
SPARK_CASES = [("spark", "frame", "domain"), ("spark", "file", "test"), ("spark", "folder", "domain")]


def _sums(engine: str, source: str, rest: str, table: pd.DataFrame, inputs: dict, request) -> object:
    if engine == "spark":
        request.getfixturevalue("spark")
    if source == "frame":
        return item_sums(table, rest=rest, engine=engine)
    return lake_item_sums(inputs[source], rest=rest, engine=engine)


@pytest.mark.parametrize("engine, source, rest", DUCKDB_CASES + SPARK_CASES)
def test_every_sufficient_statistic_matches_the_definition(engine, source, rest, table, inputs, request):
    sums = _sums(engine, source, rest, table, inputs, request)
    want = oracle(table, rest)
    assert sums.source == ("spark" if engine == "spark" else ("memory" if source == "frame" else "duckdb"))
    assert sums.has_choice and sums.has_key
    assert_close(sums.model_group, want["mg"][["model", "group", "s", "n"]], ["model", "group"], "per group")
    assert list(sums.items["item"]) == sorted(want["items"]["item"])  # items in name order
    assert_close(sums.items, want["items"], ["item"], "per item")
    names = sums.items["item"].to_numpy(dtype=object)
    options = sums.options.assign(item=names[sums.options["pos"].to_numpy()]).drop(columns="pos")
    assert_close(options, want["options"], ["item", "label"], "per option")
    keys = sums.keys.assign(item=names[sums.keys["pos"].to_numpy()]).drop(columns="pos")
    assert_close(keys, want["keys"], ["item", "key"], "per key")
    assert (sums.keys.groupby("pos").size() > 1).sum() == 1  # alg-03: keyed differently by one model
    # the sensitivity sums, items set aside and re-scored (one item the table does not have)
    aside, rescore = ["alg-01", "geo-05", "nope"], {"bio-02": "C", "alg-03": "A"}
    got = sums.model_domain_sums(np.asarray(aside, dtype=object), rescore)
    assert_close(got, oracle_sensitivity(table, aside, rescore), ["model", "domain"], "sensitivity")


def test_partitioned_model_names_stay_text(table, inputs):
    """A model called 007 is '007' in the sums from the folder (the partition value is not cast to a number)."""
    sums = lake_item_sums(inputs["folder"])
    assert "007" in set(sums.model_group["model"])


def test_the_audit_of_a_partitioned_folder_is_the_audit_of_the_table(table, inputs):
    reference = audit_items(table)
    for engine, source in (("duckdb", inputs["folder"]),):
        audit = audit_items(dataset_from_parquet(source), engine=engine)
        a = reference.items.set_index("item")
        b = audit.items.set_index("item").loc[a.index]
        # the item response model's columns need the matrix in memory: only the in-memory audit has them
        shared = [c for c in a.columns if c in b.columns]
        assert {"p_correct", "r_rest", "ul_index", "top_wrong_r"} <= set(shared)
        for column in shared:
            if a[column].dtype.kind == "f":
                np.testing.assert_allclose(b[column], a[column], rtol=TOL, atol=TOL, err_msg=column)


# --------------------------------------------------------------------------- Poisson bootstrap


@pytest.mark.parametrize("engine, source", [("duckdb", "frame"), ("duckdb", "file"), ("duckdb", "folder"),
                                            ("spark", "folder")])
def test_poisson_replicate_sums_match_the_hash_in_numpy(engine, source, table, inputs, request):
    from jagged.stats.item_expr import rows_table

    if engine == "spark":
        request.getfixturevalue("spark")
    want = oracle_poisson(table, n_boot=12, seed=5)
    models, domains = np.asarray(sorted(MODELS), dtype=object), np.asarray(DOMAINS, dtype=object)
    with eng.Engine(engine).backend() as con:
        if source == "frame":
            t = eng.table_from_frame(con, table[["model", "domain", "item", "correct"]],
                                     {"model": "string", "domain": "string", "item": "string", "correct": "float64"})
            rows, _, _ = rows_table(t, validated=True)
        else:
            rows, _, _ = rows_table(eng.read_parquet(con, inputs[source]))
        chunks = list(replicate_sums(con, rows, 12, 5, models, domains, partial=True, block=5))
    assert [c[0].shape[0] for c in chunks] == [5, 5, 2]
    num, den, sq = (np.concatenate([c[i] for c in chunks]) for i in range(3))
    b, m, d = (want["b"].to_numpy(), pd.Index(models).get_indexer(want["model"]),
               pd.Index(domains).get_indexer(want["domain"]))
    for got, column in ((num, "num"), (den, "den"), (sq, "sq")):
        np.testing.assert_allclose(got[b, m, d], want[column].to_numpy(), rtol=TOL, atol=TOL, err_msg=column)
    # paired: the weights do not depend on the model; Poisson(1): mean and variance near 1
    w = oracle_poisson(table.assign(correct=1.0), 1, 5)
    assert w["den"].sum() == pytest.approx(len(table), rel=0.15)


def test_poisson_weights_are_poisson_one():
    """The inverse-CDF draw from the hash: mean 1, variance 1, P(0) = e^-1 over 200,000 (item, replicate) pairs."""
    code = np.repeat(np.arange(2000, dtype=np.int64), 100)
    b = np.tile(np.arange(100, dtype=np.int64), 2000)
    h = mix32(mix32(code ^ int(mix32(np.int64(0)))) ^ ((b * STRIDE) & MASK32))
    w = np.searchsorted(np.asarray(POISSON_CDF), (h.astype(float) + 0.5) / 2.0 ** 32, side="left")
    assert w.mean() == pytest.approx(1.0, abs=0.01) and w.var() == pytest.approx(1.0, abs=0.02)
    assert (w == 0).mean() == pytest.approx(math.exp(-1), abs=0.005)


def simulate_coverage_table(n_sims: int, n_items: int, seed: int) -> tuple[pd.DataFrame, float]:
    """One "model" per simulation with its own fresh items: domain a items p ~ Beta(4, 2), domain b Beta(2, 3);
    x ~ Bernoulli(p). The true macro score is (2/3 + 2/5) / 2."""
    rng = np.random.default_rng(seed)
    frames = []
    for domain, (alpha, beta) in (("a", (4, 2)), ("b", (2, 3))):
        p = rng.beta(alpha, beta, size=(n_sims, n_items))
        x = (rng.random((n_sims, n_items)) < p).astype(float)
        sims = np.repeat(np.arange(n_sims), n_items)
        frames.append(pd.DataFrame({"model": [f"s{s:04d}" for s in sims], "domain": domain,
                                    "item": [f"s{s}-{domain}-{j}" for s, j in zip(sims, np.tile(np.arange(n_items),
                                                                                               n_sims))],
                                    "correct": x.ravel()}))
    return pd.concat(frames, ignore_index=True), (4 / 6 + 2 / 5) / 2


def test_poisson_bootstrap_covers_the_truth_like_the_paired_bootstrap():
    """300 simulations with known truth: the 95% percentile interval of the macro score covers it about 95% of the
    time with the Poisson bootstrap (engine) and with the paired bootstrap (in memory) it replaces at scale."""
    n_sims, n_items, n_boot, ci = 300, 60, 400, 0.95
    data, truth = simulate_coverage_table(n_sims, n_items, seed=11)
    reps = poisson_replicates(data, n_boot=n_boot, seed=1)
    lo, hi = np.nanquantile(reps.macro_score, [(1 - ci) / 2, (1 + ci) / 2], axis=0)
    poisson = float(((lo <= truth) & (truth <= hi)).mean())
    widths_poisson = float(np.mean(hi - lo))
    covered, widths = [], []
    for _, rows in data.groupby("model"):
        paired = replicates_from_matrix(item_matrix(rows), n_boot=n_boot, seed=1)
        plo, phi = np.nanquantile(paired.macro_score[:, 0], [(1 - ci) / 2, (1 + ci) / 2])
        covered.append(plo <= truth <= phi)
        widths.append(phi - plo)
    paired_coverage = float(np.mean(covered))
    print(f"coverage of the 95% interval: Poisson {poisson:.3f}, paired {paired_coverage:.3f}; "
          f"mean width {widths_poisson:.4f} vs {np.mean(widths):.4f}")
    assert abs(poisson - ci) < 0.04 and abs(paired_coverage - ci) < 0.04
    assert widths_poisson == pytest.approx(float(np.mean(widths)), rel=0.1)
    assert reps.method.startswith("Poisson bootstrap")


# --------------------------------------------------------------------------- the folder through the loader


def test_partitioned_folder_loads_like_the_table(table, inputs):
    from jagged.readers.items import aggregate_items

    dataset = dataset_from_parquet(inputs["folder"])
    assert dataset.items is None and dataset.item_path == inputs["folder"]
    want = aggregate_items(table).sort_values(["model", "domain"]).reset_index(drop=True)
    got = dataset.scores.sort_values(["model", "domain"]).reset_index(drop=True)
    assert list(got["model"]) == list(want["model"])
    np.testing.assert_allclose(got["score"], want["score"], rtol=TOL)
    np.testing.assert_allclose(got["n_items"], want["n_items"], rtol=TOL)


def test_a_bad_row_in_a_folder_is_named_with_its_file(tmp_path, table):
    bad = table.copy()
    first = bad.index[bad["model"] == "m-3"][2]
    bad.loc[first, "correct"] = 1.5
    write_folder(bad, tmp_path / "store")
    with pytest.raises(JaggedInputError, match=r"store: column 'correct' has value '1.5' outside \[0, 1\] "
                                               r"\(model=m-3/part-0.parquet row 3\)"):
        dataset_from_parquet(tmp_path / "store")


# --------------------------------------------------------------------------- settings


def test_engine_names_are_checked():
    assert eng.check_engine(None) == "duckdb"
    with pytest.raises(JaggedInputError, match="engine must be one of 'duckdb', 'spark', not 'polars'"):
        eng.check_engine("polars")


def test_spark_master_comes_from_spark_configuration_when_not_given(tmp_path, monkeypatch):
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    monkeypatch.delenv("SPARK_HOME", raising=False)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert eng.configured_spark_master() is None
    (tmp_path / "spark-defaults.conf").write_text("# cluster\nspark.executor.memory 4g\nspark.master   spark://h:7077\n")
    assert eng.configured_spark_master() == "spark://h:7077"
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--master yarn pyspark-shell")
    assert eng.configured_spark_master() == "yarn"


def test_what_needs_the_response_matrix_says_so(table, inputs):
    assert eng.in_memory_items(table) is table
    with pytest.raises(JaggedInputError, match="store: the item response model .* needs the response matrix in "
                                               "memory, and this input is aggregated out of core"):
        eng.in_memory_items(dataset_from_parquet(inputs["folder"]))
    with pytest.raises(JaggedInputError, match="does not run on Spark"):
        eng.in_memory_items(table, engine="spark")
