"""Compare two runs or releases model by model: like-for-like deltas, ranks, run-to-run noise.

Every delta is B − A on what both sides share: with item results on both sides, each
model's common items (item-level scope); otherwise the (model, domain) cells both score
(domain-level scope). Values on everything each side has sit beside them. Delta intervals:
a paired stratified item bootstrap with items, a parametric binomial bootstrap from
``n_items`` without, else none. The two-way view of the change is in
:mod:`jagged.stats.shifts`, the item ledger and noise floor in :mod:`jagged.stats.ledger`;
:func:`compare` composes everything once.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError, JaggedWarning
from jagged.readers.dataset import Dataset
from jagged.stats.bootstrap import ItemMatrix, _quantiles, centred_interval, item_matrix, resampled_sums
from jagged.stats.bootstrap import _chunks as blocks
from jagged.stats.deployment import competition_rank, deployment_metrics, kendall_tau
from jagged.stats.ledger import item_ledger, noise_floor, paired_items, rescore_by_domain, rescore_by_model, run_noise
from jagged.stats.metrics import NOTE_FEW_DOMAINS, jaggedness
from jagged.stats.shifts import field_change, fit_cells, models_sum_of_squares
from jagged.stats.uncertainty import place_after
from jagged.text import Summarised, join_note_columns

STATISTICS: tuple[str, ...] = ("macro_score", "cv_error", "dep_score", "wedge")
METHOD_ITEMS = "paired stratified item bootstrap over the common items (same resample on both sides)"
METHOD_BINOMIAL = "parametric binomial bootstrap from n_items (sides independent)"
METHOD_DOMAINS = "bootstrap over the common domains (same resample on both sides)"
NOTE_NO_COMMON = "no common items or domains with the other side"
NOTE_NO_N_ITEMS = "no interval: n_items unknown on a side"
_BLOCK_ENTRIES = 4_000_000


def added_removed(a: Dataset, b: Dataset) -> pd.DataFrame:
    """Domains and models on one side only: ``kind``, ``name``, ``side``, ``change`` ("added" or "removed")."""
    rows = []
    for kind in ("domain", "model"):
        in_a = set(a.scores[kind].astype(str))
        in_b = set(b.scores[kind].astype(str))
        rows += [(kind, name, "b", "added") for name in sorted(in_b - in_a)]
        rows += [(kind, name, "a", "removed") for name in sorted(in_a - in_b)]
    return pd.DataFrame(rows, columns=["kind", "name", "side", "change"]).astype(object)


@dataclass
class Scope:
    """What both sides share: ``kind`` (``"items"`` or ``"domains"``), each side's
    ``model, domain, score, n_items`` on the shared scope (``scores_a``, ``scores_b``, same
    rows), the :func:`~jagged.stats.ledger.paired_items` (item-level scope) and the models on
    both sides (sorted, also those with nothing in common).
    """

    kind: str
    scores_a: pd.DataFrame
    scores_b: pd.DataFrame
    paired: pd.DataFrame | None
    models: np.ndarray


def common_scope(a: Dataset, b: Dataset) -> Scope:
    """The shared scope of two datasets: item-level when both carry item results, else domain-level.

    Raises JaggedInputError when no model appears on both sides.
    """
    models = np.asarray(sorted(set(a.scores["model"].astype(str)) & set(b.scores["model"].astype(str))), dtype=object)
    if not len(models):
        raise JaggedInputError(f"{a.source} and {b.source} have no model in common: nothing to compare")
    if a.items is not None and b.items is not None and len(a.items) and len(b.items):
        paired = paired_items(a.items, b.items)
        g = paired.groupby(["model", "domain"], sort=True)
        agg = g[["correct_a", "correct_b"]].mean()
        n = g.size().to_numpy(dtype=float)
        keys = agg.index.to_frame(index=False).astype(object)
        sa = keys.assign(score=agg["correct_a"].to_numpy(), n_items=n)
        sb = keys.assign(score=agg["correct_b"].to_numpy(), n_items=n)
        return Scope("items", sa, sb, paired, models)
    cols = ["model", "domain", "score", "n_items"]
    left = a.scores[cols].astype({"model": str, "domain": str})
    right = b.scores[cols].astype({"model": str, "domain": str})
    both = left.merge(right, on=["model", "domain"], suffixes=("_a", "_b")).sort_values(["model", "domain"])
    keys = both[["model", "domain"]].astype(object).reset_index(drop=True)
    sa = keys.assign(score=both["score_a"].to_numpy(), n_items=both["n_items_a"].to_numpy(dtype=float))
    sb = keys.assign(score=both["score_b"].to_numpy(), n_items=both["n_items_b"].to_numpy(dtype=float))
    return Scope("domains", sa, sb, None, models)


@dataclass
class PairedReplicates:
    """Bootstrap replicates of both sides' statistics on the shared scope.

    ``macro_a``, ``cv_a`` ... are B × M (models of :attr:`Scope.models`); ``dep_a``,
    ``wedge_a`` ... B × M × P. ``rank_a``/``rank_b`` are the B × M macro scores the rank
    intervals use (the same replicates with items; a domain bootstrap without).
    ``field``: the two-way parts of each replicate's changes, ``shift`` (B × shared domains),
    ``effect`` (B × M) and ``models_ss`` (B) (None when there is no fit).
    """

    stats_a: dict[str, np.ndarray]
    stats_b: dict[str, np.ndarray]
    rank_a: np.ndarray
    rank_b: np.ndarray
    method: str
    rank_method: str
    field: dict[str, np.ndarray] | None = None


def _wide(scores: pd.DataFrame, models: np.ndarray, domains: np.ndarray, column: str) -> np.ndarray:
    wide = scores.pivot(index="model", columns="domain", values=column)
    return wide.reindex(index=models, columns=domains).to_numpy(dtype=float)


def _weights(weights: pd.DataFrame | None, domains: np.ndarray) -> np.ndarray:
    if weights is None or not len(weights):
        return np.zeros((0, len(domains)))
    return np.nan_to_num(weights.reindex(columns=list(domains)).to_numpy(dtype=float))


def side_statistics(s: np.ndarray, w: np.ndarray) -> dict[str, np.ndarray]:
    """macro_score, cv_error (... × M), dep_score and wedge (... × M × P) of ... × M × D scores ``s`` (NaN: absent).

    As :func:`jagged.stats.metrics.jaggedness` and :func:`~jagged.stats.deployment.deployment_metrics`
    with the P × D weights ``w``: cv NaN with D < 2 or no error; dep NaN when a weighted domain is absent.
    """
    ok = ~np.isnan(s)
    d = ok.sum(axis=-1).astype(float)
    s0 = np.where(ok, s, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        macro = s0.sum(axis=-1) / d
        mean_e = 1.0 - macro
        dev = np.where(ok, (1.0 - s0) - mean_e[..., None], 0.0)
        sd = np.sqrt((dev * dev).sum(axis=-1) / d)
        cv = np.where((d >= 2) & (mean_e > 0), sd / np.where(mean_e > 0, mean_e, 1.0), np.nan)
        dep = s0 @ w.T
        lacking = ((~ok).astype(float) @ (w > 0).T.astype(float)) > 0
        dep[lacking] = np.nan
        wedge = macro[..., None] - dep
    return {"macro_score": macro, "cv_error": cv, "dep_score": dep, "wedge": wedge}


def _chunks(n_boot: int, per_replicate: int) -> Iterator[int]:
    return blocks(n_boot, int(max(1, min(n_boot, _BLOCK_ENTRIES // max(per_replicate, 1)))))


def _stack(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def paired_replicates(scope: Scope, weights: pd.DataFrame | None = None, *, n_boot: int = 2000,
                      seed: int = 0) -> PairedReplicates | None:
    """Bootstrap replicates of both sides on the shared scope (None when no interval is possible).

    Notes
    -----
    *Item-level scope*: the common items of every model form one
    :class:`~jagged.stats.replicates.ItemMatrix` of 2M columns (A's, then B's); each replicate
    draws n_d items with replacement within every domain, one count vector for all columns,
    so both sides are resampled together; a model whose domain drew none of its items is NaN
    in that replicate. *Domain-level scope*: each cell is redrawn as Binomial(n, s)/n on each
    side independently; the rank replicates resample the common domains instead (same draw on
    both sides): macro = Σ_d c_d s_d / Σ_d c_d. Each replicate's cell changes also give the
    two-way parts (:func:`jagged.stats.shifts.models_sum_of_squares`).
    """
    if n_boot <= 0 or not len(scope.scores_a):
        return None
    rng = np.random.default_rng(seed)
    models, shared = scope.models, sorted(set(scope.scores_a["domain"]))
    extra = [] if weights is None else sorted(set(weights.columns) - set(shared))  # weighted, not shared: absent
    domains = np.asarray(shared + extra, dtype=object)
    w, m, s_a = _weights(weights, domains), len(models), _wide(scope.scores_a, models, domains, "score")
    present = ~np.isnan(s_a)
    keep, parts_a, parts_b, field = fit_cells(present), [], [], []

    def add(sa: np.ndarray, sb: np.ndarray, drop: np.ndarray) -> None:
        for side, parts in ((sa, parts_a), (sb, parts_b)):
            one = side_statistics(side, w)
            for value in one.values():
                value[drop] = np.nan
            parts.append(one)
        if keep.any():
            shift, effect, models_ss = models_sum_of_squares(sb - sa, keep)
            field.append({"shift": shift[:, :len(shared)], "effect": effect, "models_ss": models_ss})

    if scope.kind == "items":
        xa, xb = (item_matrix(scope.paired.rename(columns={f"correct_{k}": "correct"}), models, domains) for k in "ab")
        matrix = ItemMatrix(correct=np.hstack([xa.correct, xb.correct]), present=np.hstack([xa.present, xb.present]),
                            bounds=xa.bounds, models=np.concatenate([models, models]), domains=domains)
        for num, den, _ in resampled_sums(matrix, n_boot, rng):
            with np.errstate(invalid="ignore", divide="ignore"):
                s = np.where(den > 0, num / den, np.nan)
            add(np.where(present[None], s[:, :m], np.nan), np.where(present[None], s[:, m:], np.nan),
                (np.isnan(s[:, :m]) & present[None]).any(axis=2))
        method = rank_method = METHOD_ITEMS
    else:
        s_b = _wide(scope.scores_b, models, domains, "score")
        n_a, n_b = _wide(scope.scores_a, models, domains, "n_items"), _wide(scope.scores_b, models, domains, "n_items")
        usable = ~(present & (np.isnan(n_a) | np.isnan(n_b))).any(axis=1)
        for b in _chunks(n_boot, 2 * s_a.size):
            reps = []
            for s, n in ((s_a, n_a), (s_b, n_b)):
                nn = np.where(present, np.nan_to_num(n), 0).astype(np.int64)
                k = rng.binomial(nn[None], np.where(present, s, 0.0)[None], size=(b,) + s.shape)
                with np.errstate(invalid="ignore", divide="ignore"):
                    reps.append(np.where(present[None] & (nn[None] > 0), k / nn[None], np.nan))
            add(*reps, np.broadcast_to(~usable, (b, m)))
        ranks_a, ranks_b = [], []
        for b in _chunks(n_boot, s_a.size):
            counts = np.zeros((b, len(domains)))
            counts[:, :len(shared)] = rng.multinomial(len(shared), np.full(len(shared), 1.0 / len(shared)), size=b)
            for s, out in ((s_a, ranks_a), (s_b, ranks_b)):
                with np.errstate(invalid="ignore", divide="ignore"):
                    out.append((counts @ np.nan_to_num(s).T) / (counts @ present.T.astype(float)))
        method, rank_method = METHOD_BINOMIAL if usable.any() else "", METHOD_DOMAINS
    stats_a, stats_b = _stack(parts_a), _stack(parts_b)
    if scope.kind == "items":
        ranks_a, ranks_b = [stats_a["macro_score"]], [stats_b["macro_score"]]
    return PairedReplicates(stats_a, stats_b, np.concatenate(ranks_a), np.concatenate(ranks_b), method, rank_method,
                            _stack(field) if field else None)


def _point(scores: pd.DataFrame, weights: pd.DataFrame | None) -> pd.DataFrame:
    """jaggedness (+ deployment_metrics) per model [× profile], quietly (notes carry the warnings)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JaggedWarning)
        try:
            table = jaggedness(scores)[["model", "macro_score", "cv_error", "note"]]
        except JaggedInputError:  # no model with 2 domains: CVs are undefined, macro still is
            macro = scores.groupby("model", sort=True)["score"].mean()
            table = pd.DataFrame({"model": macro.index.astype(str).to_numpy(dtype=object), "cv_error": np.nan,
                                  "macro_score": macro.to_numpy(), "note": NOTE_FEW_DOMAINS})
    table = table.astype({"model": object})
    if weights is None or not len(weights):
        return table
    dep = deployment_metrics(scores, weights)[["model", "profile", "dep_score", "wedge", "note"]]
    out = dep.astype({"model": object}).merge(table, on="model", how="left", suffixes=("_dep", ""))
    out["note"] = join_note_columns(out["note"].fillna("").to_numpy(dtype=object), out["note_dep"].to_numpy(object))
    return out.drop(columns="note_dep")


def _check_weights(a: Dataset, b: Dataset, weights: pd.DataFrame | None) -> None:
    if weights is None or not len(weights):
        return
    lacking = sorted((set(a.scores["domain"].astype(str)) | set(b.scores["domain"].astype(str))) - set(weights.columns))
    if lacking:
        raise JaggedInputError(f"weight matrix has no column for domain(s) {', '.join(lacking[:5])} of A or B")


def compare_models(a: Dataset, b: Dataset, weights: pd.DataFrame | None = None, *, n_boot: int = 2000,
                   seed: int = 0, ci: float = 0.95, scope: Scope | None = None,
                   replicates: PairedReplicates | None = None) -> pd.DataFrame:
    """Per model on both sides: each side's statistics and their like-for-like delta.

    Parameters
    ----------
    a, b : Dataset
        The earlier and the later run or release.
    weights : pandas.DataFrame, optional
        Profiles × domains weights covering every domain of A and B; adds ``dep_score`` and
        ``wedge``, rows per profile × model.
    n_boot, seed, ci
        Bootstrap replicates for the delta intervals (0: none), seed, interval level.
    scope, replicates
        Precomputed :func:`common_scope` and :func:`paired_replicates`.

    Returns
    -------
    pandas.DataFrame
        ``model`` [, ``profile``], ``n_domains``, ``n_items`` (of the shared scope; without
        items the smaller side's ``n_items`` summed), then for each of ``macro_score``,
        ``cv_error`` [, ``dep_score``, ``wedge``]: ``_a``, ``_b``, ``_delta`` with
        ``_delta_lo``, ``_delta_hi`` and ``_all_a``, ``_all_b`` (on everything each side
        has); ``interval_method``; ``note`` (A's and B's notes, or why a row has no values).

    Notes
    -----
    Each side is summarised on the shared scope exactly as a single dataset, s_d being the
    model's mean ``correct`` over its common items of domain d (or its score in a common
    domain); delta = value_B − value_A, so only a changed result on the same item can move
    it. A weighted domain missing from the shared scope leaves dep_score and wedge undefined
    (weights are never renormalised). Intervals are percentiles of the replicate deltas,
    centred on the estimate; the cv_error delta uses raw replicate CVs, whose noise inflation
    cancels to first order between sides of the same items.
    """
    _check_weights(a, b, weights)
    scope = scope or common_scope(a, b)
    if replicates is None:
        replicates = paired_replicates(scope, weights, n_boot=n_boot, seed=seed)
    profiled = weights is not None and len(weights) > 0
    stats = STATISTICS if profiled else STATISTICS[:2]
    keys = ["model", "profile"] if profiled else ["model"]
    models = scope.models
    profiles = weights.index.to_numpy(dtype=object) if profiled else np.asarray([None], dtype=object)
    base = pd.DataFrame({"model": np.tile(models, len(profiles))})
    if profiled:
        base["profile"] = np.repeat(profiles, len(models))
    n_dom = scope.scores_a.groupby("model")["domain"].size().reindex(models)
    n_it = scope.scores_a.assign(n=np.fmin(scope.scores_a["n_items"], scope.scores_b["n_items"])
                                 ).groupby("model")["n"].sum(min_count=1).reindex(models)
    base["n_domains"] = np.tile(n_dom.fillna(0).to_numpy(dtype=np.int64), len(profiles))
    base["n_items"] = np.tile(n_it.to_numpy(dtype=float), len(profiles))
    out = base
    for name, scores in (("a", scope.scores_a), ("b", scope.scores_b), ("all_a", a.scores), ("all_b", b.scores)):
        scores = scores.astype({"model": str, "domain": str})
        part = _point(scores, weights) if len(scores) else pd.DataFrame(columns=keys + list(stats) + ["note"])
        part = part[keys + list(stats) + ["note"]].rename(columns={**{s: f"{s}_{name}" for s in stats},
                                                                   "note": f"note_{name}"})
        out = out.merge(part.astype({"model": object}), on=keys, how="left")
    for s in stats:
        out[f"{s}_delta"] = out[f"{s}_b"] - out[f"{s}_a"]
        out[f"{s}_delta_lo"], out[f"{s}_delta_hi"] = np.nan, np.nan
    method = np.full(len(out), "", dtype=object)
    if replicates is not None:
        for s in stats:
            delta = replicates.stats_b[s] - replicates.stats_a[s]  # B × M or B × M × P
            q = _quantiles(delta, [(1.0 - ci) / 2.0, 0.5, (1.0 + ci) / 2.0])
            lo, mid, hi = (x.T.ravel() if x.ndim == 2 else np.tile(x, len(profiles)) for x in q)
            est = out[f"{s}_delta"].to_numpy(dtype=float)  # centred on the estimate: it lies inside
            out[f"{s}_delta_lo"], out[f"{s}_delta_hi"] = est + (lo - mid), est + (hi - mid)
        has = out["macro_score_delta_lo"].notna().to_numpy()
        method[has] = replicates.method
    out["interval_method"] = method
    note_a = np.where(out["note_a"].fillna("") != "", "A: " + out["note_a"].fillna(""), "")
    note_b = np.where(out["note_b"].fillna("") != "", "B: " + out["note_b"].fillna(""), "")
    note = np.asarray(join_note_columns(note_a, note_b), dtype=object)
    note[out["n_domains"].to_numpy() == 0] = NOTE_NO_COMMON
    if replicates is not None and scope.kind == "domains":
        lacks = out["macro_score_delta_lo"].isna().to_numpy() & (out["n_domains"].to_numpy() > 0)
        note[lacks] = np.asarray(join_note_columns(note[lacks], np.full(lacks.sum(), NOTE_NO_N_ITEMS)), dtype=object)
    out["note"] = note
    order = keys + ["n_domains", "n_items"] + [f"{s}_{k}" for s in stats for k in ("a", "b", "delta", "delta_lo",
                                                                                   "delta_hi")]
    order += [f"{s}_all_{k}" for s in stats for k in ("a", "b")]
    return out[order + ["interval_method", "note"]]


def kendall_tau_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's τ-b between the rows of two B × M arrays (``scipy.stats.kendalltau`` per row, NaN pairs dropped).

    NaN with fewer than 2 pairs or all ties; computed in chunks of at most 4 million pairs.
    """
    x, y = np.atleast_2d(np.asarray(x, dtype=float)), np.atleast_2d(np.asarray(y, dtype=float))
    rows, m = x.shape
    iu = np.triu_indices(m, k=1)
    out = np.full(rows, np.nan)
    start = 0
    for b in _chunks(rows, len(iu[0])):
        xs, ys = x[start:start + b], y[start:start + b]
        valid = ~(np.isnan(xs) | np.isnan(ys))
        pair_ok = valid[:, iu[0]] & valid[:, iu[1]]
        sx = np.where(pair_ok, np.sign(xs[:, iu[0]] - xs[:, iu[1]]), 0.0)
        sy = np.where(pair_ok, np.sign(ys[:, iu[0]] - ys[:, iu[1]]), 0.0)
        n0 = pair_ok.sum(axis=1).astype(float)
        tx = (pair_ok & (sx == 0)).sum(axis=1)
        ty = (pair_ok & (sy == 0)).sum(axis=1)
        denom = np.sqrt((n0 - tx) * (n0 - ty))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start:start + b] = np.where(denom > 0, np.clip((sx * sy).sum(axis=1) / denom, -1, 1), np.nan)
        start += b
    return out


def rank_changes(table: pd.DataFrame, replicates: PairedReplicates | None, *, ci: float = 0.95
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rank changes between the sides' macro rankings, with bootstrap intervals.

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame)
        Per model (best A rank first): ``macro_score_a/_b``, ``rank_a``, ``rank_b``,
        ``rank_change`` = rank_a − rank_b (positive: up in B), their ``_lo``/``_hi``,
        ``moved`` (beyond noise), ``rank_all_a/_b`` (on everything each side has); and a
        summary row: ``n_models``, ``kendall_tau`` with ``_lo``/``_hi``, ``kendall_tau_all``,
        ``n_rank_changes``, ``n_moved``, ``interval_method``.

    Notes
    -----
    Competition ranks by macro score on the shared scope (1 = best) among models with both
    values; τ is Kendall's τ-b. Intervals are percentiles over the paired replicates of
    :func:`paired_replicates`, rounded outwards to whole ranks. A model moved beyond noise when
    the interval of its replicate rank change excludes 0: a paired rule, so a shift every model
    shares moves no rank.
    """
    rows = table.drop_duplicates("model").reset_index(drop=True)
    ma, mb = rows["macro_score_a"].to_numpy(dtype=float), rows["macro_score_b"].to_numpy(dtype=float)
    ok = ~(np.isnan(ma) | np.isnan(mb))
    ra, rb = (competition_rank(np.where(ok, v, np.nan)[None])[0] for v in (ma, mb))
    aa, ab = rows["macro_score_all_a"].to_numpy(dtype=float), rows["macro_score_all_b"].to_numpy(dtype=float)
    ok_all = ~(np.isnan(aa) | np.isnan(ab))
    out = pd.DataFrame({"model": rows["model"], "macro_score_a": ma, "macro_score_b": mb, "rank_a": ra,
                        "rank_b": rb, "rank_change": ra - rb})
    out = out.assign(**dict.fromkeys(["rank_a_lo", "rank_a_hi", "rank_b_lo", "rank_b_hi", "rank_change_lo",
                                      "rank_change_hi"], np.nan))
    tau_lo, tau_hi, method = np.nan, np.nan, ""
    if replicates is not None:
        keep = np.where(ok, 1.0, np.nan)[None]
        rep_a = competition_rank(replicates.rank_a * keep)
        rep_b = competition_rank(replicates.rank_b * keep)
        for name, reps in (("rank_a", rep_a), ("rank_b", rep_b), ("rank_change", rep_a - rep_b)):
            lo, hi = centred_interval(out[name].to_numpy(dtype=float), reps, ci)  # whole ranks: rounded outwards
            out[f"{name}_lo"], out[f"{name}_hi"] = np.floor(lo), np.ceil(hi)
        taus = kendall_tau_rows(replicates.rank_a * keep, replicates.rank_b * keep)
        if np.isfinite(taus).any():
            tau_lo, tau_hi = centred_interval(np.array([kendall_tau(ma, mb)]), taus[:, None], ci, bounds=(-1.0, 1.0))
            tau_lo, tau_hi = float(tau_lo[0]), float(tau_hi[0])
        method = replicates.rank_method
    out["moved"] = ((out["rank_change_lo"] > 0) | (out["rank_change_hi"] < 0)).fillna(False).astype(bool)
    out["rank_all_a"], out["rank_all_b"] = (competition_rank(np.where(ok_all, v, np.nan)[None])[0] for v in (aa, ab))
    out = out.sort_values(["rank_a", "model"], na_position="last", kind="mergesort").reset_index(drop=True)
    summary = pd.DataFrame([{
        "n_models": int(ok.sum()), "kendall_tau": kendall_tau(ma, mb), "kendall_tau_lo": tau_lo,
        "kendall_tau_hi": tau_hi, "kendall_tau_all": kendall_tau(aa, ab),
        "n_rank_changes": int(np.count_nonzero(out["rank_change"].fillna(0))), "n_moved": int(out["moved"].sum()),
        "interval_method": method,
    }])
    return out, summary


@dataclass(repr=False)
class Comparison(Summarised):
    """Everything :func:`compare` computes; tables are None where the inputs cannot give them.

    ``models`` (:func:`compare_models` with the field's view and ``beyond_run_noise``),
    ``domains`` and ``shares`` (:func:`jagged.stats.shifts.field_change`), ``changes``
    (:func:`added_removed`), ``ranks`` and ``rank_summary`` (:func:`rank_changes`), ``scope``,
    ``ledger``, ``rescoring``, ``rescoring_domains``, ``runs`` and ``floor``
    (:mod:`jagged.stats.ledger`).
    """

    models: pd.DataFrame
    changes: pd.DataFrame
    ranks: pd.DataFrame
    rank_summary: pd.DataFrame
    scope: str
    domains: pd.DataFrame | None = None
    shares: dict | None = None
    ledger: pd.DataFrame | None = None
    rescoring: pd.DataFrame | None = None
    rescoring_domains: pd.DataFrame | None = None
    runs: pd.DataFrame | None = None
    floor: pd.DataFrame | None = None

    def _summary(self) -> tuple[str, list[tuple[str, str]]]:
        rows = [("models on both sides", f"{self.models['model'].nunique():,}"), ("scope", self.scope)]
        if self.ledger is not None:
            rows.append(("items whose status changed", f"{len(self.ledger):,}"))
        return "Comparison", rows


def compare(a: Dataset, b: Dataset, weights: pd.DataFrame | None = None, *, n_boot: int = 2000, seed: int = 0,
            ci: float = 0.95, alpha: float = 0.05, repeats: tuple[Dataset, Dataset] | None = None,
            z: float = 1.96) -> Comparison:
    """Compare two runs or releases: models, ranks, items, and (optionally) run-to-run noise.

    ``weights``, ``n_boot``, ``seed``, ``ci`` as :func:`compare_models`; ``alpha`` the false
    discovery rate of the ledger's ``difficulty_moved``; ``repeats``, two repeated runs of the
    same models on the same items (may be ``(a, b)``), adds the noise floor and
    ``models["beyond_run_noise"]``: |macro_score_delta| > z · noise floor.
    """
    _check_weights(a, b, weights)
    scope = common_scope(a, b)
    reps = paired_replicates(scope, weights, n_boot=n_boot, seed=seed)
    models = compare_models(a, b, weights, n_boot=n_boot, seed=seed, ci=ci, scope=scope, replicates=reps)
    ranks, summary = rank_changes(models, reps, ci=ci)
    parts = reps.field if reps is not None else None
    field = field_change(scope.scores_a, scope.scores_b, scope.models, ci=ci, replicates=parts and (
        parts["shift"], parts["effect"], parts["models_ss"], reps.method))
    models = place_after(models.merge(field.models, on="model", how="left"), "macro_score_delta_hi",
                         list(field.models.columns[1:]))
    out = Comparison(models=models, changes=added_removed(a, b), ranks=ranks, rank_summary=summary, scope=scope.kind,
                     domains=field.domains, shares=field.shares)
    if scope.kind == "items":
        out.ledger = item_ledger(a.items, b.items, alpha=alpha)
        keyed = out.ledger["changes"].str.contains("key_changed", regex=False)
        if "choice" in a.items.columns and keyed.any():
            out.rescoring_domains = rescore_by_domain(a.items, out.ledger)
            out.rescoring = rescore_by_model(out.rescoring_domains)
    if repeats is not None:
        if any(side.items is None for side in repeats):
            raise JaggedInputError("repeated runs need item-level results on both sides for the noise floor")
        out.runs = run_noise(*(side.items for side in repeats))
        out.floor = noise_floor(out.runs, z=z)
        limit = float(out.floor["min_detectable_difference"].iloc[0])
        out.models["beyond_run_noise"] = out.models["macro_score_delta"].abs() > limit
    return out
