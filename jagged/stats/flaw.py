"""P(flawed | responses): a two-component mixture over every item, with a per-domain flaw prevalence.

An item is *sound* (its key is the answer, and knowing it rises with ability as the 2PL
says) or *flawed*: a wrong key (the able models agree on another option; without
choices, correctness falls with ability) or an item on which no option separates the
models (responses unrelated to ability). Each domain d has its own prevalence π_d of
flawed items, drawn from a Beta(α, β) across domains that is estimated from the data
(empirical Bayes), so flawed items that cluster in a domain raise each other's
posteriors.

* :func:`flaw_posterior` — the fit: one row per item (posterior, rank, the three log
  likelihoods, the likely answer) and one per domain (prevalence, expected number of
  flawed items with an interval).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import betaln, digamma, expit, gammaln, logsumexp

from jagged.stats.irt import IRTFit, ResponseMatrix, fit_2pl, response_matrix

#: Grid of the sound items' parameter distribution G(a, c): slopes (positive: a sound item
#: discriminates the right way) × intercepts.
GRID_SLOPES = np.geomspace(0.15, 6.0, 9)
GRID_INTERCEPTS = np.linspace(-9.0, 9.0, 31)
#: EM iterations of the mixture and its convergence tolerance (largest change of a posterior).
MAX_ITER = 500
TOL = 1e-4
#: Prevalence start and the z of the interval on the expected count.
START_PREVALENCE = 0.05
Z95 = 1.959963984540054

#: Columns of :attr:`FlawPosterior.items`.
ITEM_COLUMNS: tuple[str, ...] = (
    "flaw_rank", "item", "domain", "n_models", "p_correct", "key", "likely_key", "prior", "posterior",
    "log_bayes_factor", "loglik_sound", "loglik_wrong_key", "loglik_unrelated", "p_wrong_key",
)
#: Columns of :attr:`FlawPosterior.domains`.
DOMAIN_COLUMNS: tuple[str, ...] = ("domain", "n_items", "prevalence", "expected_flawed", "sd", "lower", "upper")


@dataclass(frozen=True)
class FlawPosterior:
    """The flawed-item mixture (see :func:`flaw_posterior`).

    Attributes
    ----------
    items : pandas.DataFrame
        One row per item, highest posterior first (:data:`ITEM_COLUMNS`).
    domains : pandas.DataFrame
        One row per domain (:data:`DOMAIN_COLUMNS`).
    alpha, beta : float
        The Beta prior of the per-domain prevalence.
    wrong_key_share : float
        Share of flawed items that are wrong keys (the rest: unrelated to ability).
    iterations : int
    converged : bool
    uses_choices : bool
        Whether the chosen options were used (else correctness only).
    """

    items: pd.DataFrame
    domains: pd.DataFrame
    alpha: float
    beta: float
    wrong_key_share: float
    iterations: int
    converged: bool
    uses_choices: bool


# ---------------------------------------------------------------------------------------
# Choices as a matrix


def _choice_matrix(table: pd.DataFrame, mat: ResponseMatrix) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Option codes (models × items; −1 no row, L no answer or invalid), the key code, valid options, labels."""
    m = pd.Index(mat.models).get_indexer(table["model"].astype(str))
    i = pd.Index(mat.items).get_indexer(table["item"].astype(str))
    choice = table["choice"].astype("string").fillna("").str.strip().to_numpy(dtype=object)
    key = table["key"].astype("string").fillna("").str.strip().to_numpy(dtype=object)
    labels = np.array(sorted({str(x) for x in np.concatenate([choice, key]) if x}), dtype=object)
    letters = all(len(x) == 1 and "A" <= x <= "Z" for x in labels)
    if letters:
        labels = np.array([chr(65 + k) for k in range(max(ord(x) - 64 for x in labels))], dtype=object) \
            if len(labels) else labels
    lookup = {x: k for k, x in enumerate(labels)}
    n_lab = len(labels)
    code = np.array([lookup.get(x, n_lab) for x in choice], dtype=np.int16)
    codes = np.full((len(mat.models), len(mat.items)), -1, dtype=np.int16)
    codes[m, i] = code
    key_code = np.array([lookup.get(x, -1) for x in key])
    kc = pd.DataFrame({"i": i, "k": key_code})
    kc = kc[kc["k"] >= 0]
    majority = kc.groupby(["i", "k"]).size().reset_index(name="n").sort_values(["i", "n", "k"],
                                                                                ascending=[True, False, True])
    item_key = np.full(len(mat.items), -1)
    first = majority.drop_duplicates("i")
    item_key[first["i"].to_numpy()] = first["k"].to_numpy()
    valid = np.zeros((len(mat.items), n_lab), dtype=bool)
    if letters and "n_options" in table.columns:
        n_opt = pd.to_numeric(table["n_options"], errors="coerce").groupby(i).max()
        k_opt = np.full(len(mat.items), np.nan)
        k_opt[n_opt.index.to_numpy()] = n_opt.to_numpy()
        seen = np.where(codes < n_lab, codes, -1).max(axis=0)
        k_opt = np.where(np.isfinite(k_opt), k_opt, np.maximum(seen, item_key) + 1)
        valid = np.arange(n_lab)[None, :] < k_opt[:, None]
    else:
        seen_rows = code < n_lab
        valid[i[seen_rows], code[seen_rows]] = True
        ok = key_code >= 0
        valid[i[ok], key_code[ok]] = True
    valid[np.arange(len(mat.items))[item_key >= 0], item_key[item_key >= 0]] = True
    # a choice outside the item's options counts as "no answer or invalid"
    inval = (codes >= 0) & (codes < n_lab)
    rows, cols = np.nonzero(inval)
    bad = ~valid[cols, codes[rows, cols]]
    codes[rows[bad], cols[bad]] = n_lab
    return codes, item_key, valid, labels


# ---------------------------------------------------------------------------------------
# Likelihoods on the parameter grid


def _grid_loglik(z: np.ndarray, w: np.ndarray, a_mat: np.ndarray, sp: np.ndarray) -> np.ndarray:
    """ln Π_m σ(A_mg)^z (1 − σ(A_mg))^(w − z) for every item and grid point: Zᵀ A − Wᵀ softplus(A)."""
    return (z.T @ a_mat - w.T @ sp).astype(np.float32)


def _abilities(fit: IRTFit, mat: ResponseMatrix) -> tuple[np.ndarray, np.ndarray]:
    """θ per model and group (models × groups; 0 where the model has none there) and each item's group index."""
    groups = fit.items.set_index("item").loc[mat.items, "group"].to_numpy(dtype=object)
    ab = fit.abilities
    g_index = pd.Index(pd.unique(groups))
    table = np.zeros((len(mat.models), len(g_index)))
    mi = pd.Index(mat.models).get_indexer(ab["model"].astype(str))
    gi = g_index.get_indexer(ab["group"].astype(str))
    keep = (mi >= 0) & (gi >= 0)
    table[mi[keep], gi[keep]] = ab["theta"].to_numpy(dtype=float)[keep]
    return table, g_index.get_indexer(groups)


def _scaled(ll: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """exp(ll − row max) in float32 and the row max (−inf rows: zeros and max 0)."""
    top = ll.max(axis=1)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(ll - top[:, None].astype(ll.dtype)).astype(np.float32)
    return e, top.astype(float)


def _marginal(e: np.ndarray, top: np.ndarray, g_w: np.ndarray) -> np.ndarray:
    """ln Σ_g G_g exp(ll_g) from the scaled likelihoods."""
    with np.errstate(divide="ignore"):
        return top + np.log((e @ g_w).astype(float))


def _dirmult(counts: np.ndarray, n_cat: np.ndarray) -> np.ndarray:
    """ln of a sequence's Dirichlet(1)-multinomial probability: ln Γ(C) − ln Γ(n + C) + Σ ln Γ(n_c + 1)."""
    n = counts.sum(axis=-1)
    return gammaln(n_cat) - gammaln(n + n_cat) + gammaln(counts + 1).sum(axis=-1)


# ---------------------------------------------------------------------------------------
# The mixture


def flaw_posterior(table: pd.DataFrame, fit: IRTFit | None = None, *, use_choices: bool = True,
                   max_iter: int = MAX_ITER, tol: float = TOL) -> FlawPosterior:
    """P(flawed | responses) for every item, with a hierarchical per-domain prevalence.

    Parameters
    ----------
    table : pandas.DataFrame
        Item table: ``model, domain, item, correct`` and optionally ``choice, key``
        (and ``n_options``).
    fit : IRTFit, optional
        The 2PL fit giving the abilities (:func:`jagged.stats.irt.fit_2pl`; fitted here,
        a trait per domain, when not given).
    use_choices : bool
        Use ``choice`` and ``key`` when the table has them (default); False uses
        correctness only.
    max_iter, tol : int, float
        EM iterations and tolerance (largest change of any posterior).

    Returns
    -------
    FlawPosterior
        ``items`` (:data:`ITEM_COLUMNS`, highest posterior first): ``posterior``
        P(flawed | responses), ``flaw_rank`` (1 = most likely flawed), ``prior`` (the
        domain's prevalence), ``log_bayes_factor`` ln p(y | flawed) − ln p(y | sound),
        the three log marginal likelihoods, ``p_wrong_key`` (P(wrong key | responses)),
        ``key`` and ``likely_key`` (the option most probably the true answer, with
        choices); ``domains``: prevalence π_d (posterior mean), ``expected_flawed``
        Σ posterior with its SD and a 95 % interval.

    Raises
    ------
    JaggedInputError
        Bad item table (see :func:`jagged.stats.irt.response_matrix`).

    Notes
    -----
    **Abilities.** θ_m is the model's EAP ability in the item's trait (plugged in).

    **Sound.** Knowing the item follows the 2PL, P = σ(a θ_m + c), with (a, c) integrated
    over G, a distribution on a grid of positive slopes × intercepts
    (:data:`GRID_SLOPES` × :data:`GRID_INTERCEPTS`) estimated from the items by EM,
    each item weighted by its probability of being sound. G is pooled over domains
    (each on its own N(0, 1) trait): a domain whose accuracy is lowered by flawed items
    cannot widen its own difficulty distribution to explain "every model wrong" as "the
    domain is hard". With choices, the models that do not know spread over the other
    categories (options and "no answer or invalid") as a Dirichlet(1)-multinomial
    sequence; without choices the sound likelihood is the 2PL likelihood of
    ``correct``.

    **Flawed** = ω · wrong key + (1 − ω) · unrelated, ω estimated. *Wrong key*: with
    choices, another option o is the true answer (uniform over the item's other
    options), its choosers follow the sound model and the rest spread as above; without
    choices, correctness follows σ(−a θ + c) (a sign-flipped item, (a, c) over G).
    *Unrelated*: every model's choice a Dirichlet(1)-multinomial sequence over all
    categories (without choices, ``correct`` a Beta(1, 1)-Bernoulli sequence).

    **Prevalence.** P(flawed | y) = π_d L_F / (π_d L_F + (1 − π_d) L_S). With E_d the sum
    of the posteriors of domain d's n_d items, (α, β) maximise
    Σ_d [ln B(E_d + α, n_d − E_d + β) − ln B(α, β)] (beta-binomial evidence, with
    fractional counts) and π_d = (E_d + α) / (n_d + α + β). With fewer than 3 domains
    α = β = 1. The EM alternates the posteriors, G, ω and (α, β, π) until no posterior
    changes by more than ``tol``.

    **Expected flawed per domain** Σ_j p_j, with SD √Σ p_j (1 − p_j) (the
    Poisson-binomial count given the posteriors) and the interval mean ± 1.96 SD
    clipped to [0, n_d]; it does not include the uncertainty of the prevalence.

    **Edge cases.** Items with one response get the prior as posterior (no evidence);
    items where the key is missing are scored on correctness only.
    """
    mat = response_matrix(table)
    if fit is None:
        fit = fit_2pl(mat)
    theta_mg, item_group = _abilities(fit, mat)
    choices = use_choices and {"choice", "key"} <= set(table.columns)
    w = mat.w.astype(float)
    n_j = w.sum(axis=0)
    grid_a = np.repeat(GRID_SLOPES, len(GRID_INTERCEPTS))
    grid_c = np.tile(GRID_INTERCEPTS, len(GRID_SLOPES))
    n_grid = len(grid_a)
    labels = np.array([], dtype=object)
    if choices:
        codes, item_key, valid, labels = _choice_matrix(table, mat)
        n_lab = len(labels)
        use_c = item_key >= 0
    else:
        use_c = np.zeros(len(mat.items), dtype=bool)
        n_lab = 0
    n_opt = max(n_lab, 1)
    # ll[j, o, g]: option o's choosers follow the sound model; o = n_opt slot unused without choices
    ll_opt = np.full((len(mat.items), n_opt, n_grid), -np.inf, dtype=np.float32)
    ll_y = np.zeros((len(mat.items), n_grid), dtype=np.float32)
    ll_rev = np.zeros((len(mat.items), n_grid), dtype=np.float32)
    for g in range(theta_mg.shape[1]):
        cols = np.flatnonzero(item_group == g)
        if not len(cols):
            continue
        th = theta_mg[:, g]
        a_mat = th[:, None] * grid_a[None, :] + grid_c[None, :]
        r_mat = -th[:, None] * grid_a[None, :] + grid_c[None, :]
        wg, yg = w[:, cols], mat.y[:, cols].astype(float)
        ll_y[cols] = _grid_loglik(yg, wg, a_mat, np.logaddexp(0, a_mat))
        ll_rev[cols] = _grid_loglik(yg, wg, r_mat, np.logaddexp(0, r_mat))
        if choices:
            sp = wg.T @ np.logaddexp(0, a_mat)
            cg = codes[:, cols]
            for o in range(n_lab):
                ll_opt[cols, o] = ((cg == o).astype(float).T @ a_mat - sp).astype(np.float32)
    # Dirichlet-multinomial parts
    if choices:
        counts = np.zeros((len(mat.items), n_lab + 1))
        rows, cols = np.nonzero(codes >= 0)
        np.add.at(counts, (cols, codes[rows, cols]), 1.0)
        n_cat = valid.sum(axis=1) + 1.0
        counts[:, :n_lab] *= valid
        rest_dm = (gammaln(n_cat - 1)[:, None] - gammaln(n_j[:, None] - counts[:, :n_lab] + n_cat[:, None] - 1)
                   + gammaln(counts + 1).sum(axis=1)[:, None] - gammaln(counts[:, :n_lab] + 1))
        rest_dm = np.where(valid, rest_dm, -np.inf)
        unrel_c = _dirmult(counts, n_cat)
    s_j = mat.y.sum(axis=0).astype(float)
    unrel_y = betaln(s_j + 1, n_j - s_j + 1)
    loglik_unrel = np.where(use_c, unrel_c, unrel_y) if choices else unrel_y

    e_y, t_y = _scaled(ll_y)
    e_rev, t_rev = _scaled(ll_rev)
    if choices:
        e_opt, t_opt = _scaled(ll_opt.reshape(-1, n_grid))
        e_key = e_opt.reshape(len(mat.items), n_opt, n_grid)[np.arange(len(mat.items)), item_key.clip(0)]
        t_key = t_opt.reshape(len(mat.items), n_opt)[np.arange(len(mat.items)), item_key.clip(0)]
    del ll_opt, ll_y, ll_rev
    domains = pd.Index(pd.unique(mat.domains))
    d_of = domains.get_indexer(mat.domains)
    n_d = np.bincount(d_of, minlength=len(domains)).astype(float)
    log_g = np.full(n_grid, -np.log(n_grid))
    prev = np.full(len(domains), START_PREVALENCE)
    omega, alpha, beta = 0.5, 1.0, 1.0
    post = np.zeros(len(mat.items))
    converged = False
    j_idx = np.arange(len(mat.items))
    key_safe = item_key.clip(0) if choices else np.zeros(len(mat.items), dtype=int)
    for it in range(1, max_iter + 1):
        g_w = np.exp(log_g).astype(np.float32)
        m_y = _marginal(e_y, t_y, g_w)
        m_rev = _marginal(e_rev, t_rev, g_w)
        if choices:
            m_opt = _marginal(e_opt, t_opt, g_w).reshape(len(mat.items), n_opt) + rest_dm  # items × options
            m_key = m_opt[j_idx, key_safe]
            others = valid.copy()
            others[j_idx[use_c], item_key[use_c]] = False
            n_other = others.sum(axis=1)
            with np.errstate(divide="ignore"):
                m_wrong = logsumexp(np.where(others, m_opt, -np.inf), axis=1) - np.log(np.maximum(n_other, 1))
            m_wrong = np.where(n_other > 0, m_wrong, -np.inf)
            sound = np.where(use_c, m_key, m_y)
            wrong = np.where(use_c, m_wrong, m_rev)
        else:
            sound, wrong = m_y, m_rev
        flawed = np.logaddexp(np.log(omega) + wrong, np.log1p(-omega) + loglik_unrel)
        lbf = np.where(n_j >= 2, flawed - sound, 0.0)
        new = expit(np.log(prev[d_of]) - np.log1p(-prev[d_of]) + lbf)
        change = float(np.max(np.abs(new - post)))
        post = new
        # G from the sound items' responsibilities
        if choices:
            base = np.where(use_c[:, None], e_key, e_y)
            top = np.where(use_c, t_key, t_y)
            norm = np.where(use_c, m_key - rest_dm[j_idx, key_safe], m_y)
        else:
            base, top, norm = e_y, t_y, m_y
        with np.errstate(invalid="ignore", over="ignore"):
            resp_s = base * g_w[None, :] * np.exp(top - norm)[:, None]
        resp_s = np.nan_to_num(resp_s, nan=0.0, posinf=0.0)
        weight = ((1 - post) * (n_j >= 2)) @ resp_s
        log_g = np.log(np.maximum(weight / weight.sum(), 1e-300))
        with np.errstate(divide="ignore"):
            p_wrong_given_f = expit(np.log(omega) + wrong - np.log1p(-omega) - loglik_unrel)
        omega = float(np.clip((post * p_wrong_given_f).sum() / max(post.sum(), 1e-12), 1e-4, 1 - 1e-4))
        e_d = np.bincount(d_of, weights=post, minlength=len(domains))
        if len(domains) >= 3:
            alpha, beta = _fit_beta(e_d, n_d, alpha, beta)
        prev = np.clip((e_d + alpha) / (n_d + alpha + beta), 1e-6, 1 - 1e-6)
        if change < tol and it > 2:
            converged = True
            break
    p_wrong = post * p_wrong_given_f
    likely = np.full(len(mat.items), "", dtype=object)
    key_lab = np.full(len(mat.items), "", dtype=object)
    if choices:
        best = np.argmax(np.where(valid, m_opt, -np.inf), axis=1)
        likely = np.where(use_c, labels[best] if len(labels) else "", "")
        key_lab = np.where(use_c, labels[key_safe] if len(labels) else "", "")
    items = pd.DataFrame({
        "item": mat.items, "domain": mat.domains, "n_models": n_j.astype(int),
        "p_correct": np.where(n_j > 0, s_j / np.maximum(n_j, 1), np.nan), "key": key_lab, "likely_key": likely,
        "prior": prev[d_of], "posterior": post, "log_bayes_factor": lbf, "loglik_sound": sound,
        "loglik_wrong_key": wrong, "loglik_unrelated": loglik_unrel, "p_wrong_key": p_wrong,
    })
    items = items.sort_values(["posterior", "log_bayes_factor", "item"], ascending=[False, False, True],
                              kind="mergesort").reset_index(drop=True)
    items.insert(0, "flaw_rank", np.arange(1, len(items) + 1))
    e_d = np.bincount(d_of, weights=post, minlength=len(domains))
    sd = np.sqrt(np.bincount(d_of, weights=post * (1 - post), minlength=len(domains)))
    dom = pd.DataFrame({"domain": domains.to_numpy(dtype=object), "n_items": n_d.astype(int), "prevalence": prev,
                        "expected_flawed": e_d, "sd": sd, "lower": np.clip(e_d - Z95 * sd, 0, None),
                        "upper": np.minimum(e_d + Z95 * sd, n_d)})
    return FlawPosterior(items[list(ITEM_COLUMNS)], dom[list(DOMAIN_COLUMNS)], float(alpha), float(beta), omega,
                         it, converged, bool(choices))


def _fit_beta(e_d: np.ndarray, n_d: np.ndarray, alpha: float, beta: float) -> tuple[float, float]:
    """(α, β) maximising Σ_d ln B(E_d + α, n_d − E_d + β) − ln B(α, β), on the log scale, bounded to [0.05, 1e4]."""
    def neg(x: np.ndarray) -> tuple[float, np.ndarray]:
        a, b = np.exp(x)
        value = -float((betaln(e_d + a, n_d - e_d + b) - betaln(a, b)).sum())
        common = digamma(a + b) - digamma(n_d + a + b)
        ga = (digamma(e_d + a) - digamma(a) + common).sum() * a
        gb = (digamma(n_d - e_d + b) - digamma(b) + common).sum() * b
        return value, -np.array([ga, gb])

    res = minimize(neg, np.log([alpha, beta]), jac=True, method="L-BFGS-B",
                   bounds=[(np.log(0.05), np.log(1e4))] * 2)
    a, b = np.exp(res.x)
    return float(a), float(b)

