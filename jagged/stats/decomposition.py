"""The logit decomposition logit(e_md) = μ + a_m + b_d + r_md: the fit and what it says.

a_m is the model's level (higher: more errors), b_d the domain's difficulty for the field,
r_md where this model is unusually weak (r > 0) or strong given both. Every cell weighs the
same; item counts only place 0 and 1 scores on the logit scale and give the sampling noise.
:func:`decompose` fits it; :func:`model_structure` gives per model the spread of its
residuals (relative jaggedness), with the expected noise removed and a noise flag;
:func:`replicate_statistic` computes it on the bootstrap replicates of
:mod:`jagged.stats.bootstrap`; :func:`variance_shares` splits the variance of the whole
table. Vectorised over models, domains and bootstrap replicates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.stats.replicates import ReplicateStatistic
from jagged.stats.uncertainty import EQUAL_ERROR_ALPHA, NOISE_SHARE_THRESHOLD, chi2_sf
from jagged.text import Summarised

#: Items added to the wrong and to the right answers of every cell (Haldane–Anscombe).
CONTINUITY: float = 0.5
#: Items assumed behind a score for the continuity correction when ``n_items`` is unknown.
NOMINAL_ITEMS: int = 100

#: Per-model columns :func:`jagged.stats.structure.add_structure` adds to the metrics table, in order.
METRIC_COLUMNS: tuple[str, ...] = (
    "model_effect", "relative_jaggedness", "relative_jaggedness_corrected", "relative_noise_share",
    "p_model_fit", "relative_noise_flag",
)
SHARE_COMPONENTS: tuple[str, ...] = ("domain", "model", "residual", "noise", "residual_beyond_noise", "cross")
SHARE_LABELS: dict[str, str] = {
    "domain": "domain difficulty (b_d)",
    "model": "model level (a_m)",
    "residual": "model × domain residual (r_md), noise included",
    "noise": "  of which expected sampling noise",
    "residual_beyond_noise": "  residual beyond noise",
    "cross": "cross terms (unbalanced table)",
}

#: Why something was left out or not computed: a code and its fields (:func:`jagged.views.structure.reason_text`
#: says it in words).
Reason = tuple[str, dict[str, Any]]

NOTE_FEW_MODELS = "the decomposition needs at least 2 models and 2 domains"
NOTE_FEW_DOMAINS_MODEL = "fewer than 2 domains: relative jaggedness undefined"
NOTE_NOT_CONNECTED = "shares no domain with the main table: not decomposed"
NOTE_NO_N_ITEMS = "sampling noise unknown (no n_items)"
NOTE_FLAG = "relative jaggedness indistinguishable from sampling noise"


def expit(x: np.ndarray) -> np.ndarray:
    """The logistic function 1 / (1 + exp(−x)), as 0.5 (1 + tanh(x / 2)) (no overflow)."""
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def logit(p: np.ndarray) -> np.ndarray:
    """ln(p / (1 − p)), as ln p − ln1p(−p)."""
    return np.log(p) - np.log1p(-p)


def additive_wls(weights: np.ndarray, response: np.ndarray) -> np.ndarray:
    """Fitted values u_r + v_c minimising Σ w_rc (z_rc − u_r − v_c)² for (..., R, C) tables (weight 0: missing).

    Notes
    -----
    The larger side is eliminated (Schur complement): with rows eliminated,
    u_r = (Σ_c w_rc z_rc − Σ_c w_rc v_c) / W_r and v solves

        [diag(W_·c) − Wᵀ diag(1/W_r·) W] v = Z_·c − Wᵀ (Z_r· / W_r·),

    singular along 1; adding 11ᵀ makes it regular with Σ_c v_c = 0. A column without weight
    gets v_c = 0. Cost R·C·min(R, C) per table (one batched product and solve). A disconnected
    table has no unique solution (the caller fits one connected group); a singular replicate
    falls back to the pseudo-inverse.
    """
    w = np.asarray(weights, dtype=float)
    z = np.where(w > 0, np.asarray(response, dtype=float), 0.0)
    if w.shape[-1] > w.shape[-2]:
        return additive_wls(np.swapaxes(w, -1, -2), np.swapaxes(z, -1, -2)).swapaxes(-1, -2)
    wz = w * z
    w_row = w.sum(axis=-1)
    w_col = w.sum(axis=-2)
    with np.errstate(divide="ignore"):
        inv = np.where(w_row > 0, 1.0 / np.where(w_row > 0, w_row, 1.0), 0.0)
    z_row = wz.sum(axis=-1)
    wt = np.swapaxes(w, -1, -2)
    gram = wt @ (w * inv[..., None])                                 # (..., C, C)
    c = w.shape[-1]
    system = -gram + 1.0
    diag = np.where(w_col > 0, w_col, 1.0)
    idx = np.arange(c)
    system[..., idx, idx] += diag
    rhs = wz.sum(axis=-2) - (wt @ (z_row * inv)[..., None])[..., 0]
    try:
        v = np.linalg.solve(system, rhs[..., None])[..., 0]
    except np.linalg.LinAlgError:
        v = (np.linalg.pinv(system) @ rhs[..., None])[..., 0]
    u = (z_row - (w @ v[..., None])[..., 0]) * inv
    return u[..., :, None] + v[..., None, :]


def adjusted_errors(errors: np.ndarray, n_items: np.ndarray | None) -> np.ndarray:
    """Continuity-corrected error rates ẽ = (n e + ½)/(n + 1) (0.5 where missing).

    ``n_items`` None (unknown): n = :data:`NOMINAL_ITEMS`.
    """
    e = np.asarray(errors, dtype=float)
    n = np.full(e.shape, float(NOMINAL_ITEMS)) if n_items is None else np.asarray(n_items, dtype=float)
    return np.where(np.isnan(e), 0.5, (n * np.nan_to_num(e) + CONTINUITY) / (n + 2 * CONTINUITY))


def logit_noise(adjusted: np.ndarray, n_items: np.ndarray) -> np.ndarray:
    """Delta-method sampling variance of the empirical logit, 1 / ((n + 1) ẽ (1 − ẽ)).

    With k errors of n this is 1/(k + ½) + 1/(n − k + ½) (Gart & Zweifel 1967), finite at k = 0
    or n; an upper bound for partial credit.
    """
    a = np.asarray(adjusted, dtype=float)
    return 1.0 / ((np.asarray(n_items, dtype=float) + 2 * CONTINUITY) * a * (1.0 - a))


def _components(observed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Connected groups of the bipartite model–domain graph: labels of models and of domains."""
    m, d = observed.shape
    big = m + d
    model_label = np.arange(m)
    domain_label = np.full(d, big)
    while True:
        domain_label = np.where(observed, model_label[:, None], big).min(axis=0, initial=big)
        new = np.minimum(model_label, np.where(observed, domain_label[None, :], big).min(axis=1, initial=big))
        if np.array_equal(new, model_label):
            return model_label, domain_label
        model_label = new


@dataclass(repr=False)
class Decomposition(Summarised):
    """logit(e_md) = μ + a_m + b_d + r_md fitted to a score table (see :func:`decompose`).

    Attributes
    ----------
    models, domains : numpy.ndarray
        Sorted names, lengths M and D.
    error, n_items : numpy.ndarray
        M × D observed error rates e = 1 − s and items (NaN: no score, or unknown).
    has_n : bool
        Every score has ``n_items`` (else the noise is unknown).
    fitted : numpy.ndarray
        M × D cells fitted (observed, in the main connected group).
    adjusted, weight, eta : numpy.ndarray
        M × D ẽ, the fit's weights (1 fitted, 0 not) and μ + a_m + b_d (NaN outside the fit).
    intercept, model_effect, domain_effect
        μ, a_m and b_d (each mean 0 over the fitted ones; NaN for models not fitted).
    residual, noise_var, leverage : numpy.ndarray
        M × D r_md = logit(ẽ) − η, v_md (:func:`logit_noise`; NaN without n_items) and the
        cell's share 1 / M_d of its domain's effect.
    reasons : list of Reason
        ``no_n_items``, ``not_connected`` (models), ``too_small`` (models, domains).
    model_notes : dict
        Per-model remarks.
    """

    models: np.ndarray
    domains: np.ndarray
    error: np.ndarray
    n_items: np.ndarray
    has_n: bool
    fitted: np.ndarray
    adjusted: np.ndarray
    weight: np.ndarray
    eta: np.ndarray
    intercept: float
    model_effect: np.ndarray
    domain_effect: np.ndarray
    residual: np.ndarray
    noise_var: np.ndarray
    leverage: np.ndarray
    reasons: list[Reason] = field(default_factory=list)
    model_notes: dict[str, str] = field(default_factory=dict)

    def _summary(self) -> tuple[str, list[tuple[str, str]]]:
        fitted = self.fitted
        return "Decomposition", [("models", f"{len(self.models):,}"), ("domains", f"{len(self.domains):,}"),
                                 ("cells fitted", f"{int(fitted.sum()):,} of {fitted.size:,}"),
                                 ("sampling noise", "from n_items" if self.has_n else "unknown (no n_items)")]

    @property
    def ok(self) -> bool:
        """Whether anything was fitted (at least 2 models and 2 domains connected)."""
        return bool(self.fitted.any())

    @property
    def balanced(self) -> bool:
        """Whether every cell of the fitted models and domains has a score (then the shares have no cross term)."""
        return bool(self.fitted[np.ix_(self.fitted.any(axis=1), self.fitted.any(axis=0))].all())

    def residuals(self) -> pd.DataFrame:
        """Per fitted cell (the table ``jagged structure -o`` writes).

        ``model, domain, error, n_items``, ``expected_error`` expit(η), ``residual`` (logits; > 0:
        more errors than predicted), ``residual_se`` √v (NaN without n_items), ``z`` r/√(v(1 − h)).
        """
        rows, cols = np.nonzero(self.fitted)
        v = self.noise_var[rows, cols]
        h = self.leverage[rows, cols]
        with np.errstate(invalid="ignore", divide="ignore"):
            z = self.residual[rows, cols] / np.sqrt(v * (1.0 - h))
        return pd.DataFrame({
            "model": self.models[rows], "domain": self.domains[cols],
            "error": self.error[rows, cols], "n_items": self.n_items[rows, cols],
            "expected_error": expit(self.eta[rows, cols]), "residual": self.residual[rows, cols],
            "residual_se": np.sqrt(v), "z": z,
        })


def score_grid(scores: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Models, domains (sorted) and the M × D error and n_items matrices (NaN: no score) of a canonical table."""
    for column in ("model", "domain", "score"):
        if column not in scores.columns:
            raise JaggedInputError(f"score table lacks column {column!r}")
    mc, models = pd.factorize(scores["model"], sort=True)
    dc, domains = pd.factorize(scores["domain"], sort=True)
    models = np.asarray(models, dtype=object)
    domains = np.asarray(domains, dtype=object)
    error = np.full((len(models), len(domains)), np.nan)
    n = np.full_like(error, np.nan)
    error[mc, dc] = 1.0 - scores["score"].to_numpy(dtype=float)
    if "n_items" in scores.columns:
        n[mc, dc] = scores["n_items"].to_numpy(dtype=float)
    return models, domains, error, n


def decomposable(scores: pd.DataFrame) -> bool:
    """Whether :func:`decompose` can fit anything (2 models and 2 domains linked by shared domains), without fitting."""
    _, _, error, _ = score_grid(scores)
    observed = ~np.isnan(error)
    if observed.shape[0] < 2 or observed.shape[1] < 2:
        return False
    model_label, domain_label = _components(observed)
    cells = np.bincount(model_label, weights=observed.sum(axis=1), minlength=sum(observed.shape))
    main = int(np.argmax(cells))
    return bool((model_label == main).sum() >= 2 and (domain_label == main).sum() >= 2)


def decompose(scores: pd.DataFrame) -> Decomposition:
    """Fit logit(e_md) = μ + a_m + b_d + r_md to a per-domain score table.

    With fewer than 2 models or 2 domains nothing is fitted: effects NaN, ``reasons`` says why.

    Notes
    -----
    *Model.* l_md = logit(ẽ_md) = μ + a_m + b_d + r_md, Σ_m a_m = Σ_d b_d = 0, fitted by
    ordinary least squares on the two-way table (:func:`additive_wls`, unit weights): on a
    complete table row and column means, so the variance shares add up exactly. A binomial fit
    would weigh cells by n p̂(1 − p̂), letting the easiest and hardest domains count least.

    *Zero and one cells.* ẽ = (k + ½)/(n + 1) (Haldane–Anscombe, :func:`adjusted_errors`)
    keeps every logit finite and moves a rate from 1,000 items by at most 0.0005; without
    n_items, n = 100 for the correction only.

    *Incomplete tables.* Missing cells are absent from the sum, nothing is imputed. Effects are
    identified when models and domains form one connected group; otherwise the largest group
    (most cells) is fitted and the others get NaN and a note. A single-domain model is fitted
    (residual 0) but has no relative jaggedness.
    """
    models, domains, error, n = score_grid(scores)
    observed = ~np.isnan(error)
    m, d = observed.shape
    has_n = bool(observed.any() and np.isfinite(n[observed]).all() and (n[observed] > 0).all())
    reasons: list[Reason] = []
    model_notes: dict[str, str] = {}
    fitted = observed.copy()
    if observed.any() and not has_n:
        reasons.append(("no_n_items", {}))
    if m >= 2 and d >= 2:
        model_label, domain_label = _components(observed)
        if len(np.unique(model_label)) > 1:
            cells = np.bincount(model_label, weights=observed.sum(axis=1), minlength=m + d)
            main = int(np.argmax(cells))
            keep_m, keep_d = model_label == main, domain_label == main
            fitted &= keep_m[:, None] & keep_d[None, :]
            left = models[~keep_m]
            reasons.append(("not_connected", {"models": [str(name) for name in left]}))
            model_notes.update({str(name): NOTE_NOT_CONNECTED for name in left})
    fit_m = fitted.any(axis=1)
    fit_d = fitted.any(axis=0)
    adjusted = adjusted_errors(error, n if has_n else None)
    weight = fitted.astype(float)
    nan = np.full((m, d), np.nan)
    if fit_m.sum() < 2 or fit_d.sum() < 2:
        reasons.append(("too_small", {"models": int(fit_m.sum()), "domains": int(fit_d.sum())}))
        return Decomposition(models=models, domains=domains, error=error, n_items=n, has_n=has_n,
                             fitted=np.zeros((m, d), dtype=bool), adjusted=adjusted, weight=weight * 0.0, eta=nan,
                             intercept=math.nan, model_effect=np.full(m, np.nan), domain_effect=np.full(d, np.nan),
                             residual=nan, noise_var=nan, leverage=nan, reasons=reasons, model_notes=model_notes)
    fit = additive_wls(weight, logit(adjusted))
    sub = fit[np.ix_(fit_m, fit_d)]
    col = sub.mean(axis=0)
    b = col - col.mean()
    a_plus = (sub - b[None, :]).mean(axis=1)
    mu = float(a_plus.mean())
    model_effect = np.full(m, np.nan)
    domain_effect = np.full(d, np.nan)
    model_effect[fit_m] = a_plus - mu
    domain_effect[fit_d] = b
    eta = np.where(fitted, fit, np.nan)
    residual = np.where(fitted, logit(adjusted) - fit, np.nan)
    noise = np.where(fitted, logit_noise(adjusted, n), np.nan) if has_n else nan
    with np.errstate(invalid="ignore", divide="ignore"):
        leverage = np.where(fitted, weight / weight.sum(axis=0, keepdims=True), np.nan)
    return Decomposition(models=models, domains=domains, error=error, n_items=n, has_n=has_n, fitted=fitted,
                         adjusted=adjusted, weight=weight, eta=eta, intercept=mu, model_effect=model_effect,
                         domain_effect=domain_effect, residual=residual, noise_var=noise, leverage=leverage,
                         reasons=reasons, model_notes=model_notes)


def residual_spread(residual: np.ndarray, noise: np.ndarray, leverage: np.ndarray, ok: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per model (last axis: domains): D_m, V_m and N̂_m of :func:`model_structure` over the cells ``ok``."""
    d = ok.sum(axis=-1).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(ok, residual, 0.0).sum(axis=-1) / d
        dev = np.where(ok, residual - mean[..., None], 0.0)
        v_obs = (dev * dev).sum(axis=-1) / d
        n_hat = (d - 1.0) / d ** 2 * np.where(ok, noise * (1.0 - leverage), 0.0).sum(axis=-1)
    return d, v_obs, n_hat


def model_structure(decomposition: Decomposition, *, threshold: float = NOISE_SHARE_THRESHOLD,
                    alpha: float = EQUAL_ERROR_ALPHA) -> pd.DataFrame:
    """Per model: level, relative jaggedness, its noise-corrected value and a noise flag.

    Returns
    -------
    pandas.DataFrame
        One row per model (sorted): ``n_domains`` D_m; ``model_effect`` a_m (logit of the
        error, 0 = the field's average); ``relative_jaggedness`` √V_m (ddof 0, logits);
        ``relative_jaggedness_corrected`` √max(V_m − N̂_m, 0); ``relative_noise_share``
        N̂_m / V_m capped at 1; ``p_model_fit``; ``relative_noise_flag`` (nullable boolean,
        ``<NA>`` when not tested); ``structure_note``.

    Notes
    -----
    *Noise correction.* logit(ẽ_md) carries noise of variance v_md (:func:`logit_noise`),
    independent across cells; centring on the model's mean removes 1/D of it and estimating
    b_d removes the cell's share h_md = 1/M_d, so E[V_m] ≈ V_true + N_m with
    N̂_m = ((D_m − 1)/D_m²) Σ_d v_md (1 − h_md) (exact for a complete table with equal noise,
    first order otherwise); the floor at 0 biases the corrected value up near 0.

    *Test and flag.* X²_m = Σ_d (n + 1)(ẽ_md − p̂_md)² / (p̂_md(1 − p̂_md)), p̂ = expit(η), on
    D_m − 1 df (its null expectation is (D_m − 1)(M − 1)/M, so p errs large: more flags).
    Flagged when ``relative_noise_share`` > ``threshold`` or ``p_model_fit`` ≥ ``alpha``, the
    rule of ``noise_flag``: these items cannot show the model's own unevenness.

    Edge cases: fewer than 2 fitted domains or outside the fitted group: NaN and a note;
    without n_items the noise columns are NaN, the flag ``<NA>``, and the note says so.
    """
    dec = decomposition
    ok = dec.fitted
    d, v_obs, n_hat = residual_spread(dec.residual, dec.noise_var, dec.leverage, ok)
    undefined = d < 2
    with np.errstate(invalid="ignore", divide="ignore"):
        rj = np.where(undefined, np.nan, np.sqrt(v_obs))
        if dec.has_n:
            corrected = np.where(undefined, np.nan, np.sqrt(np.maximum(v_obs - n_hat, 0.0)))
            share = np.where(v_obs > 0, n_hat / np.where(v_obs > 0, v_obs, 1.0), np.where(n_hat > 0, 1.0, np.nan))
            share = np.where(undefined, np.nan, np.minimum(share, 1.0))
            p_hat = np.clip(expit(dec.eta), 1e-12, 1.0 - 1e-12)
            trials = dec.n_items + 2 * CONTINUITY
            x2 = np.where(ok, trials * (dec.adjusted - p_hat) ** 2 / (p_hat * (1.0 - p_hat)), 0.0).sum(axis=1)
        else:
            corrected = share = x2 = np.full(len(dec.models), np.nan)
    p = np.full(len(dec.models), np.nan)
    for k in np.flatnonzero(~undefined & np.isfinite(x2)):  # a scalar tail probability per model
        p[k] = chi2_sf(float(x2[k]), int(d[k]) - 1)
    with np.errstate(invalid="ignore"):
        flag = ((share > threshold) | (p >= alpha)) & ~undefined
    untested = undefined | (np.isnan(share) & np.isnan(p))     # unknown is not False
    notes = np.full(len(dec.models), "", dtype=object)
    for k, name in enumerate(dec.models):
        if str(name) in dec.model_notes:
            notes[k] = dec.model_notes[str(name)]
        elif not dec.ok:
            notes[k] = NOTE_FEW_MODELS
        elif undefined[k]:
            notes[k] = NOTE_FEW_DOMAINS_MODEL
        elif not dec.has_n:
            notes[k] = NOTE_NO_N_ITEMS
        elif flag[k]:
            why = [f"noise share {share[k]:.0%}"] if share[k] > threshold else []
            why += [f"'no residual beyond noise' not rejected, p = {p[k]:.2g}"] if p[k] >= alpha else []
            notes[k] = f"{NOTE_FLAG} ({'; '.join(why)})"
    return pd.DataFrame({
        "model": dec.models, "n_domains": d.astype(np.int64), "model_effect": dec.model_effect,
        "relative_jaggedness": rj, "relative_jaggedness_corrected": corrected, "relative_noise_share": share,
        "p_model_fit": p,
        "relative_noise_flag": pd.array(np.where(untested, None, flag), dtype="boolean"), "structure_note": notes,
    })


def relative_jaggedness(scores: pd.DataFrame, *, threshold: float = NOISE_SHARE_THRESHOLD,
                        alpha: float = EQUAL_ERROR_ALPHA) -> pd.DataFrame:
    """:func:`model_structure` of :func:`decompose` of a canonical table (a shortcut)."""
    return model_structure(decompose(scores), threshold=threshold, alpha=alpha)


def variance_shares(decomposition: Decomposition) -> pd.DataFrame:
    """How much of the variance of the logit error rates each part of the table explains.

    One row per :data:`SHARE_COMPONENTS`: ``component``, ``label`` (the cross term's names its
    cause), ``variance`` (logits²) and ``share`` of the total; NaN when nothing was fitted,
    noise NaN without n_items.

    Notes
    -----
    Over the N fitted cells, l_md = logit(ẽ_md): total T = Var(l), domain = Var(b_d),
    model = Var(a_m), residual = Var(r_md) (population variances over cells);
    cross = T − domain − model − residual, 0 on a complete table (the two-way analysis of
    variance), nonzero only when cells are missing; noise = (1/N) Σ v_md (1 − 1/M_d − 1/D_m +
    1/N), the part of the residual noise is expected to produce ((M − 1)(D − 1)/(MD) · v when
    complete); residual_beyond_noise = max(residual − noise, 0). The shares describe this set of
    models and domains, on the logit scale.
    """
    dec = decomposition
    labels = [SHARE_LABELS[c] for c in SHARE_COMPONENTS]
    if not dec.ok:
        return pd.DataFrame({"component": list(SHARE_COMPONENTS), "label": labels,
                             "variance": np.nan, "share": np.nan})
    rows, cols = np.nonzero(dec.fitted)
    observed = logit(dec.adjusted[rows, cols])
    total = observed.var()
    domain = dec.domain_effect[cols].var()
    model = dec.model_effect[rows].var()
    residual = dec.residual[rows, cols].var()
    noise = np.nan
    if dec.has_n:
        per_domain, per_model = dec.fitted.sum(axis=0)[cols], dec.fitted.sum(axis=1)[rows]
        noise = float(np.mean(dec.noise_var[rows, cols] * (1.0 - 1.0 / per_domain - 1.0 / per_model + 1.0 / len(rows))))
    beyond = max(residual - noise, 0.0) if np.isfinite(noise) else np.nan
    cross = total - domain - model - residual
    variance = np.array([domain, model, residual, noise, beyond, cross], dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = variance / total if total > 0 else np.full(len(variance), np.nan)
    labels[SHARE_COMPONENTS.index("cross")] = cross_label(dec)
    return pd.DataFrame({"component": list(SHARE_COMPONENTS), "label": labels, "variance": variance,
                         "share": share})


def cross_causes(decomposition: Decomposition) -> list[str]:
    """Why the shares can overlap: ``["unbalanced"]`` when a fitted model lacks a fitted domain, else none."""
    return [] if not decomposition.ok or decomposition.balanced else ["unbalanced"]


def cross_label(decomposition: Decomposition) -> str:
    """The label of the cross-term row of :func:`variance_shares`, naming its cause."""
    if not cross_causes(decomposition):
        return "cross terms (none: complete table)"
    return "cross terms (unbalanced table)"


def replicate_statistic(decomposition: Decomposition) -> ReplicateStatistic:
    """The noise-corrected relative jaggedness of bootstrap replicates, for :mod:`jagged.stats.bootstrap`.

    Returns ``statistic(num, den, present, models, domains)`` → b × M, called with each chunk
    of replicate sums (b × M × D) and with the observed sums; ``squared`` is True: it returns
    V − N̂, the square of ``relative_jaggedness_corrected`` before the floor.

    Notes
    -----
    Each replicate is refitted (one batched :func:`~jagged.stats.decomposition.additive_wls`
    per chunk) and gives V* − N̂* as :func:`model_structure` computes V − N̂, so the interval,
    centred on the observed value, is one for the noise-free relative jaggedness. A model that
    drew none of its items in a domain is NaN in that replicate.
    """
    dec = decomposition

    def statistic(num: np.ndarray, den: np.ndarray, present: np.ndarray, models: Any, domains: Any
                  ) -> np.ndarray:
        out = np.full(num.shape[:2], np.nan)
        if not dec.ok or not dec.has_n:
            return out
        mi = pd.Index(list(models)).get_indexer(list(dec.models))
        di = pd.Index(list(domains)).get_indexer(list(dec.domains))
        if (mi < 0).any() or (di < 0).any():
            return out
        n = np.asarray(den, dtype=float)[:, mi][:, :, di]
        wrong = n - np.asarray(num, dtype=float)[:, mi][:, :, di]
        ok = dec.fitted[None] & (n > 0)
        lost = (dec.fitted[None] & ~ok).any(axis=2)
        adjusted = np.where(ok, (wrong + CONTINUITY) / (n + 2 * CONTINUITY), 0.5)
        weight = ok.astype(float)
        residual = logit(adjusted) - additive_wls(weight, logit(adjusted))
        noise = logit_noise(adjusted, np.where(ok, n, 1.0))
        with np.errstate(invalid="ignore", divide="ignore"):
            leverage = weight / weight.sum(axis=1, keepdims=True)
        d, v_obs, n_hat = residual_spread(residual, noise, leverage, ok)
        value = v_obs - n_hat
        value[lost | (d < 2)] = np.nan
        out[:, mi] = value
        return out

    statistic.squared = True  # type: ignore[attr-defined]
    return statistic
