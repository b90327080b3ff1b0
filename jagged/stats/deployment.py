"""Deployment-weighted scores, the wedge, and what a task mix does to a ranking.

Scores are a models × domains matrix S, profiles a profiles × domains weight matrix W
(:func:`jagged.stats.weights.resolve_profiles`); the deployment-weighted scores are S Wᵀ.
numpy and pandas only (no scipy), so the report kernel stays fast.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.text import listing

DEPLOYMENT_COLUMNS: tuple[str, ...] = (
    "model", "profile", "dep_score", "wedge", "wedge_bound", "sigma_w", "exposure_error_corr",
    "rank_macro", "rank_dep", "note",
)
RANK_COLUMNS: tuple[str, ...] = (
    "profile", "n_models", "kendall_tau", "n_rank_changes", "max_rank_change", "top_macro", "top_dep",
)

NOTE_EQUAL_WEIGHTS = "equal weights: exposure_error_corr undefined"
NOTE_EQUAL_ERRORS = "equal errors across domains: exposure_error_corr undefined"
NOTE_EQUAL_BOTH = "equal weights and equal errors across domains: exposure_error_corr undefined"
ZERO_TOL = 1e-12  # a standard deviation of weights or errors below this counts as 0


def score_matrix(scores: pd.DataFrame, domains: Sequence[str] | None = None) -> pd.DataFrame:
    """The models × domains score matrix (models sorted; ``domains`` orders the columns, absent ones all NaN)."""
    wide = scores.pivot(index="model", columns="domain", values="score").sort_index()
    if domains is not None:
        wide = wide.reindex(columns=list(domains))
    wide.columns = pd.Index(list(wide.columns), name="domain", dtype=object)
    wide.index = pd.Index(list(wide.index), name="model", dtype=object)
    return wide.astype("float64")


def competition_rank(values: np.ndarray) -> np.ndarray:
    """Rank each row descending (1 = best, ties share the best rank); NaN stays NaN."""
    frame = pd.DataFrame(values)
    return frame.rank(axis=1, method="min", ascending=False, na_option="keep").to_numpy()


#: How far a profile's weights may sum from 1 (rounding of a normalisation; anything more is a bug or raw weights).
SUM_TOL = 1e-9


def _check_normalised(W: np.ndarray, profiles: np.ndarray) -> None:
    """Raise, naming the profile, unless every row is finite, >= 0 and sums to 1 (within :data:`SUM_TOL`)."""
    with np.errstate(invalid="ignore", over="ignore"):
        checks = (("weights that are not finite numbers", ~np.isfinite(W).all(axis=1)),
                  ("negative weights", (W < 0).any(axis=1)),
                  ("weights that do not sum to 1 (normalise them with jagged.stats.weights.resolve_profiles)",
                   ~(np.abs(W.sum(axis=1) - 1.0) <= SUM_TOL)))
    for problem, bad in checks:
        if bad.any():
            raise JaggedInputError(f"profile(s) {listing([str(p) for p in profiles[bad]], 5)} have {problem}")


def deployment_metrics(scores: pd.DataFrame, weights: pd.DataFrame) -> pd.DataFrame:
    """Deployment-weighted score, wedge and rankings for every model × profile.

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical per-domain table (``model``, ``domain``, ``score``).
    weights : pandas.DataFrame
        Profiles × domains weights, rows summing to 1, covering every score domain.

    Returns
    -------
    pandas.DataFrame
        One row per profile × model (:data:`DEPLOYMENT_COLUMNS`; profiles in matrix order,
        models sorted): ``dep_score``, ``wedge``, ``wedge_bound``, ``sigma_w``,
        ``exposure_error_corr``, ``rank_macro`` and ``rank_dep`` (nullable integers, among
        the models with a dep_score), ``note``.

    Raises
    ------
    JaggedInputError
        The weights lack a score domain, or a profile's weights are not finite, negative, or
        do not sum to 1 (naming the profile).

    Notes
    -----
    For a model with scores on D domains, errors e_d = 1 − s_d, weights w_d (Σ w_d = 1)::

        S_macro = (1/D) Σ_d s_d
        S_dep   = Σ_d w_d s_d
        wedge   = S_macro − S_dep = Σ_d (w_d − 1/D) e_d = D · Cov_pop(w, e)
        |wedge| ≤ D · σ_w · σ_e = wedge_bound            (Cauchy–Schwarz)
        exposure_error_corr = Cov_pop(w, e) / (σ_w σ_e) = wedge / wedge_bound

    with population (ddof 0) moments over the domains; σ_e = cv_error · mean_error. A positive
    wedge means the most-used domains are the worst handled. The wedge is Σ_d (1/D − w_d) s_d
    and σ_w uses w_d − 1/D, so the ``uniform`` profile gives exactly 0.

    Edge cases: a model lacking a domain with w_d > 0 has NaN dep_score, wedge, bound,
    correlation and ranks, and a note naming the domains (weights are never renormalised); a
    missing zero-weight domain leaves the moments over the model's own D; σ_w or σ_e below
    1e-12 gives a NaN correlation with a note.
    """
    if len(weights) == 0:
        return pd.DataFrame({c: pd.Series(dtype=object if c in ("model", "profile", "note") else float)
                             for c in DEPLOYMENT_COLUMNS})
    score_domains = pd.unique(scores["domain"]).tolist()
    lacking = [d for d in score_domains if d not in set(weights.columns)]
    if lacking:
        raise JaggedInputError(f"weight matrix has no column for score domain(s) {listing(lacking, 5)}")
    domains = list(weights.columns)
    wide = score_matrix(scores, domains)
    models = wide.index.to_numpy(dtype=object)
    profiles = weights.index.to_numpy(dtype=object)
    S = wide.to_numpy(dtype=float)                       # M × D
    W = weights.to_numpy(dtype=float)                    # P × D
    _check_normalised(W, profiles)
    A = ~np.isnan(S)                                     # scores present
    S0 = np.where(A, S, 0.0)
    n_dom = A.sum(axis=1).astype(float)                  # D_m
    with np.errstate(divide="ignore", invalid="ignore"):
        uniform = A / n_dom[:, None]                     # 1/D_m on the model's domains
        mean_e = np.where(A, 1.0 - S0, 0.0).sum(axis=1) / n_dom
        dev_e = np.where(A, 1.0 - S0 - mean_e[:, None], 0.0)
        sd_e = np.sqrt((dev_e * dev_e).sum(axis=1) / n_dom)
        missing_mass = W @ (~A).T                        # P × M, > 0: a weighted domain is absent
        valid = missing_mass <= 0
        Wm = W[:, None, :] * A[None, :, :]               # P × M × D, weights on the model's domains
        dep = W @ S0.T
        wedge = ((uniform[None, :, :] - Wm) * S0[None, :, :]).sum(axis=2)
        dev_w = (Wm - uniform[None, :, :]) * A[None, :, :]  # mean weight is 1/D_m where defined
        sigma_w = np.sqrt((dev_w * dev_w).sum(axis=2) / n_dom[None, :])
        cov = (dev_w * dev_e[None, :, :]).sum(axis=2) / n_dom[None, :]
        bound = n_dom[None, :] * sigma_w * sd_e[None, :]
        flat_w = sigma_w < ZERO_TOL
        flat_e = np.broadcast_to(sd_e[None, :] < ZERO_TOL, flat_w.shape)
        corr = np.where(flat_w | flat_e, np.nan, cov / np.where(flat_w | flat_e, 1.0, sigma_w * sd_e[None, :]))
    corr = np.clip(corr, -1.0, 1.0)
    nan = np.nan
    dep = np.where(valid, dep, nan)
    wedge = np.where(valid, wedge, nan)
    bound = np.where(valid, bound, nan)
    sigma_w = np.where(valid, sigma_w, nan)
    corr = np.where(valid, corr, nan)
    macro = np.where(valid, (S0.sum(axis=1) / n_dom)[None, :], nan)
    rank_macro = competition_rank(macro)
    rank_dep = competition_rank(dep)

    note = np.full(valid.shape, "", dtype=object)
    note[valid & flat_e] = NOTE_EQUAL_ERRORS
    note[valid & flat_w] = NOTE_EQUAL_WEIGHTS
    note[valid & flat_w & flat_e] = NOTE_EQUAL_BOTH
    absent = np.argwhere(~valid)
    for p, m in absent:  # only the few undefined cells, to name their domains
        names = [domains[d] for d in np.flatnonzero((W[p] > 0) & ~A[m])]
        note[p, m] = f"no score for weighted domain(s) {listing(names, 5)}: dep_score undefined"

    n_p, n_m = valid.shape
    return pd.DataFrame({
        "model": np.tile(models, n_p),
        "profile": np.repeat(profiles, n_m),
        "dep_score": dep.ravel(),
        "wedge": wedge.ravel(),
        "wedge_bound": bound.ravel(),
        "sigma_w": sigma_w.ravel(),
        "exposure_error_corr": corr.ravel(),
        "rank_macro": pd.array(rank_macro.ravel(), dtype="Float64").astype("Int64"),
        "rank_dep": pd.array(rank_dep.ravel(), dtype="Float64").astype("Int64"),
        "note": note.ravel(),
    })


def kendall_tau(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Kendall's τ-b between two rankings or scores (pairs with a NaN dropped), in numpy.

    τ_b = (C − D) / √((n0 − n_x)(n0 − n_y)): C, D concordant and discordant pairs,
    n0 = n(n − 1)/2, n_x, n_y the pairs tied in x, in y; ``scipy.stats.kendalltau(x, y).statistic``.
    NaN with fewer than 2 pairs or all ties; O(n²) memory.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("kendall_tau needs two 1-d arrays of the same length")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    n = x.size
    if n < 2:
        return float("nan")
    upper = np.triu_indices(n, k=1)
    sx = np.sign(x[:, None] - x[None, :])[upper]
    sy = np.sign(y[:, None] - y[None, :])[upper]
    n0 = n * (n - 1) / 2.0
    tied_x = float(np.count_nonzero(sx == 0))
    tied_y = float(np.count_nonzero(sy == 0))
    denom = np.sqrt((n0 - tied_x) * (n0 - tied_y))
    if denom == 0:
        return float("nan")
    return float(np.clip((sx * sy).sum() / denom, -1.0, 1.0))


def rank_agreement(table: pd.DataFrame) -> pd.DataFrame:
    """Per profile, how much the deployment ranking differs from the macro ranking (:data:`RANK_COLUMNS`).

    ``n_models`` ranked, ``kendall_tau`` between the rankings, ``n_rank_changes``,
    ``max_rank_change`` (largest |rank_dep − rank_macro|), ``top_macro``, ``top_dep`` (rank-1
    models, "; "-joined).
    """
    rows = []
    for profile, group in table.groupby("profile", sort=False):
        ranked = group[group["rank_dep"].notna() & group["rank_macro"].notna()]
        rm = ranked["rank_macro"].to_numpy(dtype=float)
        rd = ranked["rank_dep"].to_numpy(dtype=float)
        shift = np.abs(rd - rm)
        rows.append({
            "profile": profile,
            "n_models": int(len(ranked)),
            "kendall_tau": kendall_tau(rm, rd),
            "n_rank_changes": int(np.count_nonzero(shift)),
            "max_rank_change": int(shift.max()) if shift.size else 0,
            "top_macro": "; ".join(ranked.loc[rm == 1, "model"].astype(str)),
            "top_dep": "; ".join(ranked.loc[rd == 1, "model"].astype(str)),
        })
    return pd.DataFrame(rows, columns=list(RANK_COLUMNS))


def exposure_profile(scores: pd.DataFrame, weights: pd.DataFrame, model: str) -> pd.DataFrame:
    """Per profile × domain for one model: ``weight``, ``uniform_weight`` (1/D), ``score`` and ``error`` = 1 − score."""
    sub = scores[scores["model"] == model]
    if sub.empty:
        raise JaggedInputError(f"no scores for model {model!r}")
    s = sub.set_index("domain")["score"].reindex(list(weights.columns)).to_numpy(dtype=float)
    n_p, n_d = weights.shape
    return pd.DataFrame({
        "profile": np.repeat(weights.index.to_numpy(dtype=object), n_d),
        "domain": np.tile(weights.columns.to_numpy(dtype=object), n_p),
        "weight": weights.to_numpy(dtype=float).ravel(),
        "uniform_weight": np.full(n_p * n_d, 1.0 / np.count_nonzero(~np.isnan(s))),
        "score": np.tile(s, n_p),
        "error": np.tile(1.0 - s, n_p),
    })


def drift_bound_curve(sd_error: float, n_domains: int, num: int = 101) -> pd.DataFrame:
    """The largest |wedge| = D·σ_w·σ_e as σ_w runs from 0 to √(D − 1)/D (all weight on one domain)."""
    if n_domains < 1:
        raise JaggedInputError("the drift-bound curve needs at least one domain")
    top = np.sqrt(n_domains - 1.0) / n_domains
    sigma = np.linspace(0.0, top, num)
    return pd.DataFrame({"sigma_w": sigma, "max_abs_wedge": n_domains * sigma * float(sd_error)})


def focus_model(table: pd.DataFrame, model: str = "") -> str:
    """The model a report looks at closely: ``model`` if given (else JaggedInputError), or the best macro score.

    Ties go to the first name.
    """
    names = pd.unique(table["model"]).tolist()
    if model:
        if model not in names:
            raise JaggedInputError(f"focus model {model!r} is not in the scores (models: {listing(names, 8)})")
        return model
    rows = table.drop_duplicates("model").sort_values(["macro_score", "model"], ascending=[False, True],
                                                      na_position="last", kind="mergesort")
    return str(rows["model"].iloc[0])


def most_reordered_profile(table: pd.DataFrame) -> str:
    """The profile whose ranking departs most from the macro ranking (lowest τ; ties: first; undefined τ last)."""
    agreement = rank_agreement(table)
    order = {name: i for i, name in enumerate(pd.unique(table["profile"]))}
    ranked = agreement.assign(_order=agreement["profile"].map(order),
                              _tau=agreement["kendall_tau"].fillna(np.inf))
    return str(ranked.sort_values(["_tau", "_order"], kind="mergesort")["profile"].iloc[0])


def rank_change_table(table: pd.DataFrame) -> pd.DataFrame:
    """Per model: macro rank and, per profile, ``<profile> rank`` and ``<profile> change`` (rank_macro − rank_dep).

    Sorted by macro rank, then name; nullable integers, missing without a dep_score.
    """
    per_model = table.drop_duplicates("model")[["model", "macro_score"]]
    macro_rank = per_model["macro_score"].rank(method="min", ascending=False).astype("Int64")
    out = per_model.assign(**{"macro rank": macro_rank.to_numpy()}).set_index("model")
    for profile, group in table.groupby("profile", sort=False):
        group = group.set_index("model")
        out[f"{profile} rank"] = group["rank_dep"].reindex(out.index)
        out[f"{profile} change"] = (group["rank_macro"] - group["rank_dep"]).reindex(out.index)
    return out.reset_index().sort_values(["macro rank", "model"], kind="mergesort").reset_index(drop=True)


def profile_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per profile: median, largest and smallest wedge (with their models), share of positive wedges, median corr, τ."""
    agreement = rank_agreement(table).set_index("profile")
    rows = []
    for profile, group in table.groupby("profile", sort=False):
        ok = group[group["wedge"].notna()].sort_values(["wedge", "model"], kind="mergesort")
        wedge = ok["wedge"].to_numpy(dtype=float)
        rows.append({
            "profile": profile,
            "n_models": int(len(ok)),
            "median_wedge": float(np.median(wedge)) if wedge.size else np.nan,
            "largest_wedge": float(wedge[-1]) if wedge.size else np.nan,
            "largest_wedge_model": str(ok["model"].iloc[-1]) if wedge.size else "",
            "smallest_wedge": float(wedge[0]) if wedge.size else np.nan,
            "smallest_wedge_model": str(ok["model"].iloc[0]) if wedge.size else "",
            "share_positive": float(np.mean(wedge > 0)) if wedge.size else np.nan,
            "median_corr": float(ok["exposure_error_corr"].median()) if wedge.size else np.nan,
            "kendall_tau": float(agreement.loc[profile, "kendall_tau"]),
        })
    return pd.DataFrame(rows)
