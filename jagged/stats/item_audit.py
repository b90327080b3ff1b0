"""Item audit: which questions to look at, and how much of the jaggedness they make.

A flawed item (a wrong key, two defensible answers, no answer at all) adds errors to its
domain that say nothing about the model, so part of a domain's error rate, and of
cv_error, belongs to the benchmark. This module gives every item the classical
psychometric evidence (difficulty, discrimination, distractor behaviour), the named flags
that test programmes use to send items to review, one ``suspicion`` score that ranks the
items for a reviewer, and a sensitivity analysis of cv_error to the flagged items.

* :func:`item_audit` — one row per item (the table ``jagged items`` prints);
* :func:`audit_items` — the same as an :class:`ItemAudit` with the per-option table, the
  fitted response model and the dataset-level notes;
* :func:`flag_sensitivity` — per model, cv_error with all items, with the flagged items
  set aside, and with likely key errors re-scored (a what-if);
* :func:`domain_flags` — per domain, how many items each flag catches.

Flags are reasons to look at an item, never to drop it. The statistics are pure
functions of the item table; the sufficient statistics behind them are sums over rows
(:mod:`jagged.stats.item_sums` in memory, :mod:`jagged.stats.item_sql` out of core in
DuckDB), so a 50-million-row Parquet file gets the same audit as a DataFrame.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import numpy as np
import pandas as pd
from scipy.special import gammaln, stdtr

from jagged.errors import JaggedInputError
from jagged.readers.dataset import Dataset
from jagged.stats.item_model import SLOPES, blocks, choose_slope, em_prior, log_lik, marginal  # noqa: F401 (SLOPES)
from jagged.stats.item_sums import NO_ANSWER, ItemSums, item_sums, text_column

#: Fewer models than this: discrimination and distractor flags are not computed (a note instead).
MIN_MODELS = 10
#: Thresholds of the named flags (see :data:`FLAGS`).
WEAK_DISCRIMINATION = 0.20
HARD_P = 0.20
EASY_P = 0.90
DISTRACTOR_R = 0.05
FDR_Q = 0.05
STRONG_AGREE = 0.5
#: Bayes factor above which a likely key error with a clear alternative is re-scored in the what-if
#: (100: "decisive" on Jeffreys' scale).
RESCORE_BAYES_FACTOR = 100.0
#: Dirichlet concentration of the "did not know" choice distribution.
DIRICHLET = 1.0
#: Items per block of the choice score (each block holds its options × the grid).
CHOICE_BLOCK = 20_000
#: Every named flag and what it means, in report order.
FLAGS: dict[str, str] = {
    "negative_discrimination": "item–rest correlation below 0: weaker models do better on it",
    "weak_discrimination": f"item–rest correlation from 0 up to {WEAK_DISCRIMINATION:.2f}",
    "distractor_attracts_able": (f"a wrong option correlates with the rest score above {DISTRACTOR_R:.2f}, "
                                 f"Benjamini–Hochberg q below {FDR_Q:.2f}"),
    "strong_agree_wrong": "at least half of the strongest 27% of models chose the same wrong option",
    "key_inconsistent": "the key differs between models",
    "too_hard": f"p_correct below {HARD_P:.2f} (or below chance where chance is higher)",
    "too_easy": f"p_correct above {EASY_P:.2f}",
    "uninformative": "every model right, or every model wrong",
}
#: Flags that point at the item itself; an item with any of them is ``flagged`` (set aside in the sensitivity).
REVIEW_FLAGS: tuple[str, ...] = ("negative_discrimination", "weak_discrimination", "distractor_attracts_able",
                                 "strong_agree_wrong", "key_inconsistent")
#: Flags computed only with at least :data:`MIN_MODELS` models.
DISCRIMINATION_FLAGS: tuple[str, ...] = ("negative_discrimination", "weak_discrimination",
                                         "distractor_attracts_able", "strong_agree_wrong")

#: Columns of :func:`item_audit`, in order.
AUDIT_COLUMNS: tuple[str, ...] = (
    "suspicion_rank", "item", "domain", "n_models", "n_options", "chance", "p_correct", "r_rest", "ul_index",
    "p_upper", "p_lower", "key", "keys", "strong_choice", "strong_choice_share", "top_wrong", "top_wrong_share",
    "top_wrong_r", "top_wrong_q", "share_no_answer", "share_invalid", "likely_key", "suspicion",
    *[f"flag_{name}" for name in FLAGS], "n_flags", "flagged", "flags", "note",
)
#: Columns of :attr:`ItemAudit.options`.
OPTION_COLUMNS: tuple[str, ...] = ("item", "domain", "option", "is_key", "valid", "n_chose", "share", "n_wrong",
                                   "wrong_share", "upper_share", "r_rest", "p_value", "q_value")


@dataclass
class ItemAudit:
    """Everything the item audit found.

    Attributes
    ----------
    items : pandas.DataFrame
        One row per item, most suspicious first (:data:`AUDIT_COLUMNS`; see
        :func:`item_audit`).
    options : pandas.DataFrame
        One row per (item, chosen option) with choice information (:data:`OPTION_COLUMNS`):
        shares, the option's correlation with the rest score, its one-sided p-value and
        its Benjamini–Hochberg q-value over all (item, wrong option) pairs; ``domain`` and
        ``option`` are categoricals, ``option`` is empty for "no answer".
    slope : float
        The response model's slope a (see the Notes of :func:`item_audit`).
    grid, prior : numpy.ndarray
        The difficulty grid and its fitted prior weights.
    rest : str
        ``"domain"`` or ``"test"``.
    n_models : int
        Models in the data.
    notes : list of str
        Dataset-level remarks (few models, no choices, ...).
    """

    items: pd.DataFrame
    options: pd.DataFrame
    slope: float
    grid: np.ndarray
    prior: np.ndarray
    rest: str
    n_models: int
    notes: list[str] = field(default_factory=list)
    sums: ItemSums | None = field(default=None, repr=False)

    @property
    def flag_columns(self) -> list[str]:
        """The ``flag_*`` columns of :attr:`items`."""
        return [f"flag_{name}" for name in FLAGS]


# ---------------------------------------------------------------------------------------
# Entry points


def item_audit(data: Dataset | pd.DataFrame, *, rest: str = "domain") -> pd.DataFrame:
    """One row per item: difficulty, discrimination, distractors, flags and suspicion.

    Parameters
    ----------
    data : Dataset or pandas.DataFrame
        A loaded item-level dataset (:func:`jagged.load`; an out-of-core Parquet dataset
        is audited in DuckDB), or an item table (``model, domain, item, correct`` and
        optionally ``choice, key, n_options``; checked as the loader checks it).
    rest : {"domain", "test"}
        Where the rest score comes from: the other items of the item's domain (default)
        or of the whole test.

    Returns
    -------
    pandas.DataFrame
        Most suspicious first, with the columns

        ``suspicion_rank``
            1 = most suspicious (ties share the smaller rank);
        ``item``, ``domain``
            the item and its domain;
        ``n_models``
            models with a result for the item;
        ``n_options``, ``chance``
            options (the largest count seen; NaN when unknown) and 1 / n_options;
        ``p_correct``
            difficulty: mean ``correct`` over those models;
        ``r_rest``
            corrected item–rest correlation: Pearson correlation over models of the
            item's ``correct`` with the model's rest score (see Notes);
        ``ul_index``, ``p_upper``, ``p_lower``
            upper–lower discrimination index p_upper − p_lower of the 27% of models with
            the highest and the lowest rest score;
        ``key``, ``keys``
            the key most models were scored against, and, where keys differ, every key
            with its count (``"A×26, C×3"``);
        ``strong_choice``, ``strong_choice_share``
            the option the upper group chose most (possibly the key) and the share of the
            upper group that chose it;
        ``top_wrong``, ``top_wrong_share``, ``top_wrong_r``, ``top_wrong_q``
            the wrong option chosen most, the share of models choosing it, its
            correlation with the rest score and its Benjamini–Hochberg q-value;
        ``share_no_answer``, ``share_invalid``
            models with no extracted answer, and choosing an option the item does not
            have;
        ``likely_key``
            the option the response model finds most likely to be the true answer;
        ``suspicion``
            log Bayes factor "the scored key is wrong or the item is broken" against "the
            item is sound" (see Notes); > 0 means the responses fit a flawed item better;
        ``flag_<name>``
            the named flags of :data:`FLAGS` (nullable booleans: ``<NA>`` where the flag
            cannot be computed: no choices, or fewer than :data:`MIN_MODELS` models);
        ``n_flags``, ``flagged``, ``flags``
            how many flags, whether any review flag (:data:`REVIEW_FLAGS`) is set, and
            their names;
        ``note``
            why a statistic is missing or weak for this item.

    Raises
    ------
    JaggedInputError
        The data have no item-level results (per-domain scores only), or bad item rows.

    Notes
    -----
    **Rest score.** For model m and item i in domain d, the rest score is
    R_mi = (S_md − x_mi) / (N_md − 1), the model's mean ``correct`` on the *other* items
    of the domain it has (a proportion, so models lacking items are comparable). Within
    the domain rather than the whole test because the domains are what jaggedness is
    about: a whole-test rest score would mark as "weakly discriminating" the items of a
    domain where the models' order differs from their overall order, i.e. it would call
    the models' jaggedness an item flaw, and setting those items aside would remove the
    jaggedness being measured. On the bundled MMLU-Pro data (domains of 381–1,351
    items) the two agree closely (r_rest correlates 0.97 between them; 9.8% vs 10.2% of
    items negative, 13.3% vs 14.2% weak); ``rest="test"`` is there for benchmarks with
    small domains. The correlation is undefined (NaN, with a note) with fewer than 3
    models with a rest score, when every model scores the item alike, or when their
    rest scores are all equal.

    **Discrimination.** r_rest is the point-biserial correlation
    r = cov(x, R) / (sd(x) sd(R)) over the models that have the item (for 0/1 ``correct``
    it equals ``scipy.stats.pointbiserialr``). The upper–lower index takes the
    k = max(1, ⌊0.27 n + ½⌋) models with the highest (lowest) rest score; models tied at
    the boundary share the remaining places equally, so the index does not depend on
    row order.

    **Distractors** (with ``choice``). For each wrong option o: its share (models that
    chose it and were scored wrong, over n), and r_o = corr(D_o, R) with D_o = 1 for
    those models, r_o = (M_o − M) / s · √(p / (1 − p)) (M_o the mean rest score of the
    choosers, M and s the mean and population sd over all, p their share). The
    one-sided p-value for "able models are drawn to it" (ρ > 0) is that of
    t = r √((n − 2) / (1 − r²)) with n − 2 degrees of freedom (what
    ``scipy.stats.pearsonr(..., alternative="greater")`` gives), and the q-values are
    Benjamini–Hochberg over every (item, wrong option) pair with a p-value:
    q_(j) = min_{k ≥ j} p_(k) m / k. "No answer" and options beyond ``n_options`` are not
    distractors; they are counted in ``share_no_answer`` and ``share_invalid``.

    **Flags** (thresholds from the test programmes post 1 of the seed excerpts cites):
    r_rest < 0; 0 ≤ r_rest < 0.20; p_correct < max(0.20, chance); p_correct > 0.90; a
    wrong option with r_o > 0.05 and q < 0.05; at least half of the upper group on one
    wrong option; more than one key; every model right or every model wrong (at least 2
    models). With fewer than :data:`MIN_MODELS` models the four discrimination flags
    are ``<NA>`` and the note says why: with so few models a correlation of 0.3 is
    indistinguishable from 0. ``flagged`` uses the review flags only: ``too_hard``,
    ``too_easy`` and ``uninformative`` say that an item tells little about *these*
    models, not that it is wrong.

    **Suspicion.** A response model with abilities θ_m = ln((S_md + ½)/(N_md − S_md + ½))
    (the smoothed logit of the model's domain score) says a sound item with difficulty
    b is answered correctly with probability σ(a (θ_m − b)). The difficulty is
    integrated out over a grid with prior weights fitted to all items by EM (the
    nonparametric maximum-likelihood prior), and a is the value in :data:`jagged.stats.item_model.SLOPES` with
    the highest marginal likelihood. With choices (every row of the item keyed), the
    hypotheses are H_j: option j is the true answer, whose choosers follow the sound
    item, while models that did not know spread over the other categories (options, no
    answer, invalid) as a Dirichlet(1)-multinomial; and H_flat: choices unrelated to
    ability (one Dirichlet-multinomial). With k the key most models were scored against,

    suspicion = ln[½ L(H_flat) + ½ mean_{j≠k} L(H_j)] − ln L(H_k),

    over all n_options − 1 other options (those nobody chose included). Without choices,
    the alternatives are a reversed item (correctness falls with ability, as when the
    scored key is an option only guessers pick) and correctness unrelated to ability
    (Beta(1, 1)-binomial), with weights ½. The score is defined for every item, also
    where correlations are not: when every model answers alike it compares how likely
    "all chose the key" or "all chose the same other option" is for models of these
    abilities.

    *Why this score* (``benchmarks/bench_item_audit.py --part evidence`` reruns the
    comparison; recall at the planted count / AUC over 3 seeds). On 2PL simulations of 30
    models × 3,000 items with 3% planted miskeyed items (a distractor is the true answer):
    with models of mixed ability this score reaches 0.77–0.85 / 0.991–0.997, the upper
    group's margin of its top wrong option over the key 0.78–0.84 / 0.988–0.996, the
    number of flags 0.60–0.76 / 0.98–0.99, −p_correct 0.63–0.69 / 0.96–0.98, the largest
    distractor correlation 0.40–0.55 / 0.88–0.95, −ul_index 0.16–0.38 / 0.90–0.96 and
    −r_rest 0.24–0.51 / 0.55–0.73 (a miskeyed item that nobody answers "correctly" has no
    correlation at all); with trap distractors that many models fall for, 0.62–0.71 /
    0.975–0.988 against 0.58–0.63 / 0.971–0.976 for the margin; with 30 strong models
    that answer most items alike, 0.98–1.00 / 1.000 while −r_rest falls to 0.04–0.11 /
    0.21–0.31 (difficulty alone and the margin also reach 1.00 there, because in the
    simulation only miskeyed items are that hard). Real data separate the candidates: on
    the bundled MMLU-Pro responses the 31 items whose key letter was revised between
    file versions rank at a median of 389 of 12,032 with this score (19 in the top 500,
    AUC 0.93), against 627 (0.88) for the margin, 1,293 (0.76) for the number of flags
    (key_inconsistent left out, which defines these items), 1,849 (0.77) for difficulty,
    3,735 (0.62) for −r_rest and 4,031 (0.56) for the largest distractor correlation.
    Without choices the score uses correctness only and is weaker (simulated AUC
    0.91–0.95 with mixed abilities, 0.99 with strong models; on MMLU-Pro 0.60, where
    difficulty gives 0.77): choices carry most of the evidence of a wrong key.

    **Edge cases.** An item with one model gets statistics but no flags (note "one
    model only"); all-equal responses give NaN correlations, the ``uninformative``
    flag and a note; items whose ``n_options`` differs between models (option lists
    revised) are audited on correctness only (note), because their letters do not
    name the same options; partial credit is allowed without keys (correlations and
    the score treat ``correct`` as a number in [0, 1]).
    """
    return audit_items(data, rest=rest).items


def audit_items(data: Dataset | pd.DataFrame, *, rest: str = "domain") -> ItemAudit:
    """The full item audit (see :func:`item_audit` for the statistics and the Notes).

    Parameters
    ----------
    data : Dataset or pandas.DataFrame
        Item-level dataset or item table.
    rest : {"domain", "test"}
        Rest score within the item's domain, or over the whole test.

    Returns
    -------
    ItemAudit
    """
    if rest not in ("domain", "test"):
        raise JaggedInputError(f"rest score must be 'domain' or 'test', not {rest!r}")
    return audit_from_sums(sums_of(data, rest=rest), rest=rest)


def sums_of(data: Dataset | pd.DataFrame, *, rest: str = "domain") -> ItemSums:
    """The sufficient statistics of a dataset or item table (in memory, or DuckDB for a large Parquet file)."""
    from jagged.readers.items import out_of_core_path, validate_items

    if isinstance(data, pd.DataFrame):
        return item_sums(validate_items(data, "<item table>", line_offset=None), rest=rest)
    if not isinstance(data, Dataset):
        raise TypeError(f"expected a Dataset or a DataFrame, not {type(data).__name__}")
    if data.items is not None:
        return item_sums(data.items, rest=rest)
    path = out_of_core_path(data)
    if path is not None:
        from jagged.stats.item_sql import parquet_item_sums

        return parquet_item_sums(path, rest=rest)
    raise JaggedInputError(f"{data.source}: {data.format} scores have no item-level results; the item audit needs "
                           "a table with model, domain, item, correct (and optionally choice, key)")


def audit_source(dataset: Dataset, *, bundled: bool = False) -> Dataset | None:
    """What the item audit of a report reads: the dataset's own item-level results, or None.

    Parameters
    ----------
    dataset : Dataset
        The report's dataset.
    bundled : bool
        Whether it is the bundled per-category data; then the bundled item-level responses
        behind it are audited (same scores), so the report's other numbers stay those of
        the per-category file.
    """
    from jagged.readers.items import load_bundled_items, out_of_core_path

    if dataset.items is not None or out_of_core_path(dataset) is not None:
        return dataset
    if bundled:
        return load_bundled_items()
    return None


def has_item_results(dataset: Dataset, *, bundled: bool = False) -> bool:
    """Whether :func:`audit_source` finds item-level results (without loading anything)."""
    from jagged.readers.items import out_of_core_path

    return bool(bundled or dataset.items is not None or out_of_core_path(dataset) is not None)


# ---------------------------------------------------------------------------------------
# From the sums to the audit


def audit_from_sums(sums: ItemSums, *, rest: str = "domain") -> ItemAudit:
    """Compute the item audit from its sufficient statistics (shared by the in-memory and DuckDB roads)."""
    t = sums.items
    n_models = int(sums.model_group["model"].nunique())
    n = t["n"].to_numpy(dtype=float)
    p = t["sx"].to_numpy(dtype=float) / n
    nopt = t["nopt_max"].to_numpy(dtype=float)
    revised = np.isfinite(nopt) & (t["nopt_min"].to_numpy(dtype=float) != nopt)
    chance = 1.0 / nopt
    r_rest = _rest_correlation(t)
    n_r = t["n_r"].to_numpy(dtype=float)
    k_ul = t["k_ul"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_upper = np.where(n_r >= 2, t["sxwu"].to_numpy(dtype=float) / k_ul, np.nan)
        p_lower = np.where(n_r >= 2, t["sxwl"].to_numpy(dtype=float) / k_ul, np.nan)
    keys = _keys(sums, t)
    choice_ok = (t["n_choice"].to_numpy(dtype=float) == n) & (t["n_choice"].to_numpy(dtype=float) > 0) & ~revised
    options = _options(sums, t, keys["key"], choice_ok)
    sums.options = pd.DataFrame(columns=sums.options.columns)  # released: the audit's option table has the rest
    options["q_value"] = benjamini_hochberg(options["p_value"].to_numpy(dtype=float))
    per_item = _option_summary(options, t, choice_ok)
    slope, grid, prior, suspicion, likely = _suspicion(sums, t, keys["key"], choice_ok, nopt, options)
    for column in ("_pos", "_swu_wrong", "_stheta"):
        del options[column]  # in place: no copy of the option table
    table: dict[str, np.ndarray] = {
        "item": t["item"].to_numpy(dtype=object), "domain": t["domain"].to_numpy(dtype=object),
        "n_models": n.astype(np.int64), "n_options": nopt, "chance": chance, "p_correct": p, "r_rest": r_rest,
        "ul_index": p_upper - p_lower, "p_upper": p_upper, "p_lower": p_lower,
        "key": keys["key"], "keys": keys["keys"], **per_item, "likely_key": likely, "suspicion": suspicion,
    }
    var_x = t["sxx"].to_numpy(dtype=float) / n - p * p
    _flags(table, choice_ok, keys["n_keys"], var_x <= 1e-12)
    table["note"] = np.asarray(_notes(table, n_r, revised), dtype=object)
    items = _rank(table)
    notes = _dataset_notes(sums, n_models, choice_ok)
    sums.items = pd.DataFrame(columns=sums.items.columns)  # released too: the sensitivity needs other sums
    return ItemAudit(items=items, options=options, slope=slope, grid=grid, prior=prior, rest=rest, n_models=n_models,
                     notes=notes, sums=sums)


def _rest_correlation(t: pd.DataFrame) -> np.ndarray:
    n = t["n_r"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = t["sx_r"].to_numpy(dtype=float) / n
        mr = t["sr"].to_numpy(dtype=float) / n
        vx = t["sxx_r"].to_numpy(dtype=float) / n - mx * mx
        vr = t["srr"].to_numpy(dtype=float) / n - mr * mr
        cov = t["sxr"].to_numpy(dtype=float) / n - mx * mr
        r = cov / np.sqrt(vx * vr)
    undefined = (n < 3) | ~(vx > 1e-12) | ~(vr > 1e-14)
    return np.where(undefined, np.nan, np.clip(r, -1.0, 1.0))


def _keys(sums: ItemSums, t: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per item: the key most rows carry (ties: the first label), how many keys, and the list."""
    n_items = len(t)
    k = sums.keys
    key = np.full(n_items, None, dtype=object)
    n_keys = np.zeros(n_items, dtype=np.int64)
    listing = np.full(n_items, "", dtype=object)
    if len(k):
        ordered = k.sort_values(["pos", "count", "key"], ascending=[True, False, True], kind="mergesort")
        first = ordered.drop_duplicates("pos")
        key[first["pos"].to_numpy()] = first["key"].to_numpy(dtype=object)
        n_keys = np.bincount(ordered["pos"].to_numpy(), minlength=n_items).astype(np.int64)
        several = ordered[n_keys[ordered["pos"].to_numpy()] > 1]
        if len(several):
            text = (several["key"].astype(str) + "×" + several["count"].astype(np.int64).astype(str)).groupby(
                several["pos"].to_numpy(), sort=False).agg(", ".join)
            listing[text.index.to_numpy()] = text.to_numpy(dtype=object)
    return {"key": key, "n_keys": n_keys, "keys": listing}


def _options(sums: ItemSums, t: pd.DataFrame, key: np.ndarray, choice_ok: np.ndarray) -> pd.DataFrame:
    """The per-(item, option) table with correlations, p- and q-values (computed in blocks of rows)."""
    from jagged.readers.choices import option_index

    o = sums.options
    internal = ("_pos", "_swu_wrong", "_stheta")
    if not len(o):
        return pd.DataFrame({c: pd.Series(dtype=object) for c in (*OPTION_COLUMNS, *internal)})
    keep = choice_ok[o["pos"].to_numpy()]
    everything = bool(keep.all())
    kept = np.flatnonzero(keep)
    size = len(kept)
    columns = {name: o[name].to_numpy() for name in o.columns}

    labels_seen = pd.unique(pd.Series(columns["label"], dtype=object))
    option_names = pd.Index(sorted(str(v) for v in labels_seen if v is not None and v != NO_ANSWER), dtype=object)

    def passed(name: str, dtype: type) -> np.ndarray:
        """A sums column as an output column: the same array when every row is kept (no copy)."""
        values = columns[name] if everything else columns[name][kept]
        return values if values.dtype == dtype else values.astype(dtype)

    item_names, domains = t["item"].to_numpy(dtype=object), t["domain"].to_numpy(dtype=object)
    per_item = {name: t[name].to_numpy(dtype=float) for name in ("n", "n_r", "nopt_max", "sr", "srr", "k_ul")}
    out = {"item": np.empty(size, dtype=object),
           "option": np.full(size, -1, dtype=np.int32), "is_key": np.zeros(size, dtype=bool),
           "valid": np.zeros(size, dtype=bool), "n_chose": passed("count", np.int32),
           "share": np.zeros(size), "n_wrong": passed("n_wrong", np.int32), "wrong_share": np.zeros(size),
           "upper_share": np.zeros(size), "r_rest": np.full(size, np.nan), "p_value": np.full(size, np.nan),
           "_pos": passed("pos", np.int32), "_swu_wrong": passed("swu_wrong", np.float64),
           "_stheta": passed("stheta", np.float64)}
    for b in blocks(size):
        rows = kept[b]
        pos = columns["pos"][rows].astype(np.int64)
        label = columns["label"][rows].astype(object)
        n, n_r = per_item["n"][pos], per_item["n_r"][pos]
        idx = option_index(np.where(label == NO_ANSWER, None, label))
        valid = (label != NO_ANSWER) & ~(idx >= per_item["nopt_max"][pos])
        count = columns["count"][rows].astype(float)
        n_wrong = columns["n_wrong"][rows].astype(float)
        k_wrong = columns["n_wrong_r"][rows].astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = per_item["sr"][pos] / n_r
            var = per_item["srr"][pos] / n_r - mean * mean
            share_r = k_wrong / n_r
            r = ((columns["sr_wrong"][rows] / k_wrong - mean) / np.sqrt(var) * np.sqrt(share_r / (1 - share_r)))
            k_ul = per_item["k_ul"][pos]
            upper = np.where(k_ul > 0, columns["swu"][rows] / k_ul, np.nan)
        defined = valid & (n_wrong > 0) & (n_r >= 3) & (var > 1e-14) & (k_wrong > 0) & (k_wrong < n_r)
        r = np.where(defined, np.clip(r, -1.0, 1.0), np.nan)
        p_value = np.full(len(rows), np.nan)
        df, rd = n_r[defined] - 2, r[defined]
        with np.errstate(invalid="ignore", divide="ignore"):
            tstat = rd * np.sqrt(df / np.maximum(1 - rd * rd, 0.0))
        p_value[defined] = np.where(rd >= 1.0, 0.0, stdtr(df, -tstat))  # Student t upper tail
        out["item"][b] = item_names[pos]
        out["option"][b] = option_names.get_indexer(label)  # -1: no answer
        out["is_key"][b], out["valid"][b] = label == key[pos], valid
        out["share"][b], out["wrong_share"][b] = count / n, n_wrong / n
        out["upper_share"][b], out["r_rest"][b], out["p_value"][b] = upper, r, p_value
    out["q_value"] = np.full(size, np.nan)  # filled by audit_from_sums once the sums are released
    # domain and option as categoricals (a few distinct names, millions of rows on big benchmarks)
    domain_codes, domain_names = pd.factorize(pd.Series(domains, dtype=object), sort=True)
    out["domain"] = pd.Categorical.from_codes(domain_codes.astype(np.int32)[out["_pos"]], categories=domain_names)
    out["option"] = pd.Categorical.from_codes(out["option"], categories=option_names)
    out["item"] = text_column(out["item"])
    frame = pd.DataFrame({name: out[name] for name in (*OPTION_COLUMNS, *internal)}, copy=False)  # no copy
    return frame


def benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (q-values); NaN entries stay NaN and do not count in m.

    q_(j) = min over k ≥ j of p_(k) · m / k, capped at 1, for the m finite p-values
    sorted ascending.
    """
    p = np.asarray(p, dtype=float)
    q = np.full(p.shape, np.nan)
    order = np.argsort(p, kind="mergesort")  # NaN sorts last
    m = int(np.isfinite(p).sum())
    if m == 0:
        return q
    order = order[:m]
    scaled = p[order]
    scaled *= m / np.arange(1, m + 1)
    np.minimum.accumulate(scaled[::-1], out=scaled[::-1])
    np.minimum(scaled, 1.0, out=scaled)
    q[order] = scaled
    return q


def _option_summary(options: pd.DataFrame, t: pd.DataFrame, choice_ok: np.ndarray) -> dict[str, np.ndarray]:
    """Per-item evidence from the option table: strong choice, top wrong option, shares, attracting distractor."""
    n_items = len(t)
    out: dict[str, np.ndarray] = {
        "strong_choice": np.full(n_items, None, dtype=object), "strong_choice_share": np.full(n_items, np.nan),
        "top_wrong": np.full(n_items, None, dtype=object), "top_wrong_share": np.full(n_items, np.nan),
        "top_wrong_r": np.full(n_items, np.nan), "top_wrong_q": np.full(n_items, np.nan),
        "share_no_answer": np.where(choice_ok, 0.0, np.nan), "share_invalid": np.where(choice_ok, 0.0, np.nan),
        "_attracts": np.zeros(n_items, dtype=bool), "_strong_wrong_share": np.where(choice_ok, 0.0, np.nan),
        "_strong_wrong": np.full(n_items, None, dtype=object),
    }
    if not len(options):
        return out
    pos_all = options["_pos"].to_numpy()
    valid_all = options["valid"].to_numpy(dtype=bool)
    option = options["option"]
    codes_all = option.cat.codes.to_numpy() if isinstance(option.dtype, pd.CategoricalDtype) else None
    categories = np.asarray(option.cat.categories, dtype=object) if codes_all is not None else None
    share_all = options["share"].to_numpy(dtype=float)
    upper_all = options["upper_share"].to_numpy(dtype=float)
    wrong_share_all = options["wrong_share"].to_numpy(dtype=float)
    n_wrong_all = options["n_wrong"].to_numpy()
    r_all = options["r_rest"].to_numpy(dtype=float)
    q_all = options["q_value"].to_numpy(dtype=float)
    swu_all = options["_swu_wrong"].to_numpy(dtype=float)
    k_ul_items = t["k_ul"].to_numpy(dtype=float)
    for b in blocks(n_items, CHOICE_BLOCK):  # blocks of items: temporaries stay small
        lo, hi = np.searchsorted(pos_all, [b.start, b.stop])
        pos, valid = pos_all[lo:hi], valid_all[lo:hi]
        if codes_all is not None:
            codes = codes_all[lo:hi]
            label = np.where(codes >= 0, categories[np.maximum(codes, 0)], None) if len(categories) else \
                np.full(len(codes), None, dtype=object)
        else:
            label = option.to_numpy(dtype=object)[lo:hi]
        none = pd.isna(label)
        np.add.at(out["share_no_answer"], pos[none], share_all[lo:hi][none])
        invalid = ~valid & ~none
        np.add.at(out["share_invalid"], pos[invalid], share_all[lo:hi][invalid])

        def best(mask: np.ndarray, value: np.ndarray) -> dict[str, np.ndarray]:
            """Per item, the row with the highest value (ties: the first label; rows sorted by item, label)."""
            rows = np.flatnonzero(mask)
            order = rows[np.lexsort((-value[rows], pos[rows]))]  # stable: ties keep label order
            first = order[np.r_[True, pos[order][1:] != pos[order][:-1]]] if len(order) else order
            return {"pos": pos[first], "value": value[first], "label": label[first], "row": first}

        upper = upper_all[lo:hi]
        strong = best(valid & np.isfinite(upper), upper)
        out["strong_choice"][strong["pos"]] = strong["label"]
        out["strong_choice_share"][strong["pos"]] = strong["value"]
        wrong = valid & (n_wrong_all[lo:hi] > 0)
        top = best(wrong, wrong_share_all[lo:hi])
        out["top_wrong"][top["pos"]] = top["label"]
        out["top_wrong_share"][top["pos"]] = top["value"]
        out["top_wrong_r"][top["pos"]] = r_all[lo:hi][top["row"]]
        out["top_wrong_q"][top["pos"]] = q_all[lo:hi][top["row"]]
        attracts = wrong & (r_all[lo:hi] > DISTRACTOR_R) & (q_all[lo:hi] < FDR_Q)
        out["_attracts"][pos[attracts]] = True
        k_ul = k_ul_items[pos]
        with np.errstate(invalid="ignore", divide="ignore"):
            strong_wrong = np.where(k_ul > 0, swu_all[lo:hi] / k_ul, np.nan)
        sw = best(wrong & np.isfinite(strong_wrong), strong_wrong)
        out["_strong_wrong_share"][sw["pos"]] = sw["value"]
        out["_strong_wrong"][sw["pos"]] = sw["label"]
    return out


# ---------------------------------------------------------------------------------------
# The suspicion score: a response model with the difficulty integrated out


def _dirichlet_multinomial(total: np.ndarray, lg_sum: np.ndarray, categories: np.ndarray) -> np.ndarray:
    """ln of the Dirichlet(α)-multinomial probability of a sequence with these counts."""
    return gammaln(categories * DIRICHLET) - gammaln(total + categories * DIRICHLET) + lg_sum


def _suspicion(sums: ItemSums, t: pd.DataFrame, key: np.ndarray, choice_ok: np.ndarray, nopt: np.ndarray,
               options: pd.DataFrame) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(slope, grid, prior, suspicion, likely_key) per item; see the Notes of :func:`item_audit`."""
    a, grid = choose_slope(sums.model_group, t)
    sp = sums.softplus(a, grid)
    n = t["n"].to_numpy(dtype=float)
    sx = t["sx"].to_numpy(dtype=float)
    sxt = t["sxtheta"].to_numpy(dtype=float)
    st = t["stheta"].to_numpy(dtype=float)
    parts = [log_lik(sx[b], sxt[b], sp[b], a, grid) for b in blocks(len(t))]
    log_prior, _, l_sound = em_prior(parts, len(grid))  # consumes the blocks
    del parts
    prior = np.exp(log_prior)
    # reversed item: σ(−a(θ − b)); Σ softplus(−a(θ − b)) = Σ softplus(a(θ − b)) − a Σθ + a b n
    l_rev = np.concatenate([
        marginal(-a * sxt[b, None] + a * grid[None, :] * sx[b, None]
                  - (sp[b] - a * st[b, None] + a * grid[None, :] * n[b, None]), prior)
        for b in blocks(len(t))])
    l_flat = gammaln(sx + 1) - gammaln(n + 2) + gammaln(n - sx + 1)
    suspicion = np.logaddexp(l_rev, l_flat) - np.log(2.0) - l_sound
    likely = np.full(len(t), None, dtype=object)
    if choice_ok.any() and len(options):
        s_choice, likely_choice = _choice_suspicion(options, t, key, nopt, a, grid, sp, prior)
        suspicion = np.where(choice_ok, s_choice, suspicion)
        likely = np.where(choice_ok, likely_choice, None)
    return a, grid, np.exp(log_prior), suspicion, likely


def _choice_suspicion(options: pd.DataFrame, t: pd.DataFrame, key: np.ndarray, nopt: np.ndarray, a: float,
                      grid: np.ndarray, sp: np.ndarray, prior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The choice version of the score (hypotheses H_j, H_flat; see :func:`item_audit`), in blocks of items.

    ``options`` is the audit's option table (rows sorted by item position, then label).
    """
    n_items = len(t)
    suspicion = np.full(n_items, np.nan)
    likely = np.full(n_items, None, dtype=object)
    pos_all = options["_pos"].to_numpy()
    option = options["option"]
    label_all = (np.asarray(option.cat.categories, dtype=object)[np.maximum(option.cat.codes.to_numpy(), 0)]
                 if isinstance(option.dtype, pd.CategoricalDtype) and len(option.cat.categories)
                 else option.to_numpy(dtype=object))  # "no answer" rows are never valid, so their label is unused
    valid_all = options["valid"].to_numpy(dtype=bool)
    is_key_all = options["is_key"].to_numpy(dtype=bool)
    count_all = options["n_chose"].to_numpy(dtype=float)
    st_all = options["_stheta"].to_numpy(dtype=float)
    n_all = t["n"].to_numpy(dtype=float)
    for b in blocks(n_items, CHOICE_BLOCK):
        lo, hi = np.searchsorted(pos_all, [b.start, b.stop])
        pos = pos_all[lo:hi] - b.start
        label, valid, is_key = label_all[lo:hi], valid_all[lo:hi], is_key_all[lo:hi] & valid_all[lo:hi]
        count, st = count_all[lo:hi], st_all[lo:hi]
        m = b.stop - b.start
        n, spb, key_b, nopt_b = n_all[b], sp[b], key[b], nopt[b]
        # options of the item: n_options where known, else the valid labels seen (and the key)
        seen = np.bincount(pos[valid], minlength=m)
        key_seen = np.bincount(pos[is_key], minlength=m) > 0
        n_opt = np.maximum(np.where(np.isfinite(nopt_b), nopt_b, 0), seen + (~key_seen & pd.notna(key_b))).astype(float)
        categories = n_opt + 2  # the options, "no answer" and "invalid"
        lg = gammaln(count + DIRICHLET) - gammaln(DIRICHLET)
        lg_all = np.bincount(pos, lg, m)
        l_flat = _dirichlet_multinomial(n, lg_all, categories)
        # sound marginal of the choosers of each option, and of "nobody chose it"
        l_choose = marginal(log_lik(count, st, spb[pos], a, grid), prior) if len(pos) else np.zeros(0)
        l_j = l_choose + _dirichlet_multinomial(n[pos] - count, lg_all[pos] - lg, categories[pos] - 1)
        l_unseen = marginal(-spb, prior) + _dirichlet_multinomial(n, lg_all, categories - 1)
        l_key = l_unseen.copy()
        l_key[pos[is_key]] = l_j[is_key]
        alt = valid & ~is_key
        n_alt_seen = np.bincount(pos[alt], minlength=m)
        n_unseen = np.maximum(n_opt - 1 - n_alt_seen, 0)
        top = l_unseen.copy()
        np.maximum.at(top, pos[alt], l_j[alt])
        mass = np.bincount(pos[alt], np.exp(l_j[alt] - top[pos[alt]]), m) + n_unseen * np.exp(l_unseen - top)
        n_alt = n_alt_seen + n_unseen
        with np.errstate(divide="ignore"):
            l_alt = np.where(n_alt > 0, top + np.log(mass) - np.log(np.maximum(n_alt, 1)), -np.inf)
        suspicion[b] = np.logaddexp(l_flat, l_alt) - np.log(2.0) - l_key
        rows = np.flatnonzero(valid)
        order = rows[np.lexsort((-l_j[rows], pos[rows]))]  # stable: ties keep label order
        first = order[np.r_[True, pos[order][1:] != pos[order][:-1]]] if len(order) else order
        likely[b.start + pos[first]] = label[first]
    return suspicion, likely


# ---------------------------------------------------------------------------------------
# Flags, notes, rank


def _flags(table: dict[str, np.ndarray], choice_ok: np.ndarray, n_keys: np.ndarray, constant: np.ndarray) -> None:
    """Add the ``flag_*`` columns (nullable booleans), ``n_flags``, ``flagged`` and ``flags`` to ``table``."""
    n = table["n_models"]
    r = table["r_rest"]
    p = table["p_correct"]
    chance = np.nan_to_num(table["chance"], nan=0.0)
    enough = n >= MIN_MODELS
    attracts = table.pop("_attracts").astype(bool)
    strong_share = table.pop("_strong_wrong_share").astype(float)
    table.pop("_strong_wrong")
    values = {
        "negative_discrimination": (r < 0, enough & np.isfinite(r)),
        "weak_discrimination": ((r >= 0) & (r < WEAK_DISCRIMINATION), enough & np.isfinite(r)),
        "distractor_attracts_able": (attracts, enough & choice_ok),
        "strong_agree_wrong": (strong_share >= STRONG_AGREE, enough & choice_ok),
        "key_inconsistent": (n_keys > 1, np.ones(len(n), dtype=bool)),
        "too_hard": (p < np.maximum(HARD_P, chance), n >= 2),
        "too_easy": (p > EASY_P, n >= 2),
        "uninformative": (constant, n >= 2),
    }
    hits = np.zeros((len(n), len(FLAGS)), dtype=bool)
    for k, name in enumerate(FLAGS):
        value, computed = values[name]
        computed = np.asarray(computed, dtype=bool)
        hits[:, k] = np.asarray(value, dtype=bool) & computed
        table[f"flag_{name}"] = pd.arrays.BooleanArray(hits[:, k].copy(), ~computed)
    table["n_flags"] = hits.sum(axis=1)
    review = [list(FLAGS).index(name) for name in REVIEW_FLAGS]
    table["flagged"] = hits[:, review].any(axis=1)
    names = np.asarray(list(FLAGS), dtype=object)
    codes, patterns = np.unique(np.packbits(hits, axis=1, bitorder="little"), axis=0, return_inverse=True)
    text = np.asarray([", ".join(names[np.unpackbits(c, bitorder="little")[:len(FLAGS)].astype(bool)])
                       for c in codes], dtype=object)
    table["flags"] = text[patterns.ravel()]


def _notes(table: dict[str, np.ndarray], n_r: np.ndarray, revised: np.ndarray) -> list[str]:
    n = table["n_models"]
    p = table["p_correct"]
    r = table["r_rest"]
    parts: list[list[str]] = [[] for _ in range(len(n))]
    for i in np.flatnonzero(n == 1):
        parts[i].append("one model only: nothing to compare")
    for i in np.flatnonzero((n > 1) & (n < MIN_MODELS)):
        parts[i].append(f"{n[i]} models (< {MIN_MODELS}): discrimination not flagged, too noisy")
    for i in np.flatnonzero((n > 1) & (p == 1)):
        parts[i].append("every model right: discrimination undefined")
    for i in np.flatnonzero((n > 1) & (p == 0)):
        parts[i].append("every model wrong: discrimination undefined")
    for i in np.flatnonzero((n > 1) & (p > 0) & (p < 1) & ~np.isfinite(r)):
        parts[i].append("item–rest correlation undefined (models score alike or have no rest score)")
    for i in np.flatnonzero(n_r < n):
        parts[i].append(f"{int(n[i] - n_r[i])} model(s) without other items in the group: no rest score")
    for i in np.flatnonzero(revised):
        parts[i].append("n_options differs between models (option list revised): letters not compared, "
                        "correctness only")
    invalid = np.asarray(table["share_invalid"], dtype=float)
    for i in np.flatnonzero(np.nan_to_num(invalid) > 0):
        parts[i].append(f"{invalid[i]:.0%} chose an option the item does not have")
    return ["; ".join(p) for p in parts]


def _rank(table: dict[str, np.ndarray]) -> pd.DataFrame:
    """The item table, most suspicious first (ties: domain, then item), built column by column in that order."""
    s = table["suspicion"]
    rank = pd.Series(-np.nan_to_num(s, nan=-np.inf)).rank(method="min").to_numpy().astype(np.int64)
    order = pd.DataFrame({"r": rank, "d": text_column(table["domain"]), "i": text_column(table["item"])}).sort_values(
        ["r", "d", "i"], kind="mergesort").index.to_numpy()
    table["suspicion_rank"] = rank
    out = {}
    for name in AUDIT_COLUMNS:
        values = table.pop(name)
        values = values[order]
        out[name] = text_column(values) if getattr(values, "dtype", None) == object else values
    return pd.DataFrame(out, copy=False)


def _dataset_notes(sums: ItemSums, n_models: int, choice_ok: np.ndarray) -> list[str]:
    notes = []
    if n_models < MIN_MODELS:
        notes.append(f"only {n_models} models: discrimination and distractor flags need at least {MIN_MODELS} "
                     "(with fewer, a correlation of 0.3 cannot be told from 0); only difficulty, key and "
                     "suspicion are given")
    if not sums.has_choice:
        notes.append("no choice column: no distractor analysis; suspicion from correctness only")
    elif not choice_ok.all():
        notes.append(f"{int((~choice_ok).sum()):,} items without complete choice information are audited on "
                     "correctness only")
    return notes


# ---------------------------------------------------------------------------------------
# What the flagged items do to the jaggedness


#: Columns of :func:`flag_sensitivity`.
SENSITIVITY_COLUMNS: tuple[str, ...] = (
    "model", "cv_error", "cv_error_set_aside", "cv_change", "macro_score", "macro_score_set_aside",
    "n_items", "n_set_aside", "cv_error_rescored", "cv_change_rescored", "n_rescored", "note",
)


def rescoring_options(audit: ItemAudit) -> dict[str, str]:
    """Likely key errors with a clear alternative: item → the option strong models agree on.

    An item qualifies when at least half of the upper group chose one wrong option
    (``flag_strong_agree_wrong``), that option is the one the response model finds most
    likely to be the answer (``likely_key``), and the evidence is decisive: ``suspicion``
    above ln(:data:`RESCORE_BAYES_FACTOR`).
    """
    items = audit.items
    chosen = (items["flag_strong_agree_wrong"].fillna(False).to_numpy(dtype=bool)
              & (items["strong_choice"].to_numpy(dtype=object) != items["key"].to_numpy(dtype=object))
              & (items["strong_choice"].to_numpy(dtype=object) == items["likely_key"].to_numpy(dtype=object))
              & (items["suspicion"].to_numpy(dtype=float) > np.log(RESCORE_BAYES_FACTOR)))
    sub = items.loc[chosen]
    return dict(zip(sub["item"].astype(str), sub["strong_choice"].astype(str)))


def flag_sensitivity(audit: ItemAudit, *, flags: Iterable[str] = REVIEW_FLAGS) -> pd.DataFrame:
    """Per model: cv_error with all items, with the flagged items set aside, and a re-scoring what-if.

    Parameters
    ----------
    audit : ItemAudit
        Output of :func:`audit_items`.
    flags : iterable of str
        Flags whose items are set aside (default :data:`REVIEW_FLAGS`).

    Returns
    -------
    pandas.DataFrame
        One row per model (sorted): ``cv_error`` and ``macro_score`` from all items (the
        values of :func:`jagged.jaggedness` on the item-level scores), ``cv_error_set_aside``
        and ``macro_score_set_aside`` with the flagged items left out of every domain,
        ``cv_change`` = set aside − all, ``n_items`` and ``n_set_aside`` (the model's
        items), and the what-if ``cv_error_rescored`` / ``cv_change_rescored`` where the
        items of :func:`rescoring_options` are scored against the option the strong
        models agree on (``n_rescored`` of the model's items), ``note``.

    Notes
    -----
    This is a sensitivity analysis, not a corrected CV: the flags are reasons to look,
    and setting aside hard but valid items lowers the mean error and so *raises* the CV
    (CV = sd / mean). A domain that loses all its items leaves the model's CV over fewer
    domains (note). The re-scoring assumes the strong models are right, which is the
    hypothesis a reviewer has to check; it is labelled a what-if everywhere it is shown.
    """
    from jagged.stats.metrics import jaggedness

    flags = list(flags)
    unknown = [f for f in flags if f not in FLAGS]
    if unknown:
        raise JaggedInputError(f"unknown flag(s) {', '.join(unknown)}; flags are {', '.join(FLAGS)}")
    if audit.sums is None:
        raise JaggedInputError("this ItemAudit has no sums (made by hand?); use audit_items()")
    items = audit.items
    aside_mask = items[[f"flag_{f}" for f in flags]].fillna(False).to_numpy(dtype=bool).any(axis=1)
    aside = items.loc[aside_mask, "item"].to_numpy(dtype=object)
    rescore = rescoring_options(audit)
    md = audit.sums.model_domain_sums(aside, rescore)

    def cv(score_col: str, n_col: str) -> pd.DataFrame:
        keep = md[n_col] > 0
        frame = pd.DataFrame({"model": md.loc[keep, "model"].to_numpy(dtype=object),
                              "domain": md.loc[keep, "domain"].to_numpy(dtype=object),
                              "score": (md.loc[keep, score_col] / md.loc[keep, n_col]).to_numpy(dtype=float)})
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return jaggedness(frame).set_index("model")

    full = cv("s", "n")
    kept = cv("s_kept", "n_kept")
    rescored = cv("s_rescored", "n")
    models = full.index
    n_items = md.groupby("model")["n"].sum().reindex(models)
    n_kept = md.groupby("model")["n_kept"].sum().reindex(models)
    notes = []
    lost = md[(md["n"] > 0) & (md["n_kept"] == 0)].groupby("model")["domain"].apply(lambda d: ", ".join(map(str, d)))
    for model in models:
        note = ""
        if model in lost.index:
            note = f"every item of {lost[model]} set aside: CV over the remaining domains"
        notes.append(note)
    out = pd.DataFrame({
        "model": np.asarray(models, dtype=object),
        "cv_error": full["cv_error"].to_numpy(dtype=float),
        "cv_error_set_aside": kept["cv_error"].reindex(models).to_numpy(dtype=float),
        "macro_score": full["macro_score"].to_numpy(dtype=float),
        "macro_score_set_aside": kept["macro_score"].reindex(models).to_numpy(dtype=float),
        "n_items": n_items.to_numpy(dtype=np.int64),
        "n_set_aside": (n_items - n_kept).to_numpy(dtype=np.int64),
        "cv_error_rescored": rescored["cv_error"].reindex(models).to_numpy(dtype=float),
        "n_rescored": md.groupby("model")["n_rescored"].sum().reindex(models).fillna(0).to_numpy(dtype=np.int64),
        "note": notes,
    })
    out["cv_change"] = out["cv_error_set_aside"] - out["cv_error"]
    out["cv_change_rescored"] = out["cv_error_rescored"] - out["cv_error"]
    return out[list(SENSITIVITY_COLUMNS)]


def domain_flags(audit: ItemAudit) -> pd.DataFrame:
    """Per domain: items, flagged items and the share each flag catches.

    Returns
    -------
    pandas.DataFrame
        One row per domain (sorted by ``share_flagged``, highest first): ``domain``,
        ``n_items``, ``n_flagged``, ``share_flagged`` (review flags), ``n_rescored`` (items
        with a what-if alternative key) and ``share_<flag>`` for every flag of
        :data:`FLAGS` (share of the domain's items; NA counts as not flagged).
    """
    items = audit.items
    rescore = rescoring_options(audit)
    flags = items[[f"flag_{f}" for f in FLAGS]].fillna(False).astype(bool)
    frame = pd.concat([items[["domain"]], flags, items[["flagged"]].astype(bool),
                       items[["item"]].isin(list(rescore)).rename(columns={"item": "rescored"})], axis=1)
    grouped = frame.groupby("domain", sort=True)
    out = pd.DataFrame({"n_items": grouped.size(), "n_flagged": grouped["flagged"].sum(),
                        "n_rescored": grouped["rescored"].sum()})
    out["share_flagged"] = out["n_flagged"] / out["n_items"]
    for name in FLAGS:
        out[f"share_{name}"] = grouped[f"flag_{name}"].mean()
    out = out.reset_index()
    columns = ["domain", "n_items", "n_flagged", "share_flagged", "n_rescored"] + [f"share_{n}" for n in FLAGS]
    return out[columns].sort_values(["share_flagged", "domain"], ascending=[False, True],
                                    kind="mergesort").reset_index(drop=True)


def flag_counts(audit: ItemAudit) -> pd.DataFrame:
    """Per flag: how many items it catches and their share of all items (and of the items it could be computed for).

    Returns
    -------
    pandas.DataFrame
        ``flag``, ``meaning`` (:data:`FLAGS`), ``review`` (whether it makes an item
        ``flagged``), ``n_items``, ``share`` (of all items), ``n_computed``, ``share_computed``;
        last a row ``flagged`` (any review flag).
    """
    items = audit.items
    rows = []
    for name, meaning in FLAGS.items():
        column = items[f"flag_{name}"]
        computed = int(column.notna().sum())
        hits = int(column.fillna(False).astype(bool).sum())
        rows.append({"flag": name, "meaning": meaning, "review": name in REVIEW_FLAGS, "n_items": hits,
                     "share": hits / len(items) if len(items) else np.nan, "n_computed": computed,
                     "share_computed": hits / computed if computed else np.nan})
    hits = int(items["flagged"].sum())
    rows.append({"flag": "flagged", "meaning": "any review flag", "review": True, "n_items": hits,
                 "share": hits / len(items) if len(items) else np.nan, "n_computed": len(items),
                 "share_computed": hits / len(items) if len(items) else np.nan})
    return pd.DataFrame(rows)

