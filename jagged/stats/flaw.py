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
  flawed items with an interval). The likelihood pieces (choices as a matrix, the grid
  likelihoods with a guessing floor, Dirichlet-multinomial sequences) are in
  :mod:`jagged.stats.flaw_likelihood`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import betaln, digamma, expit, logsumexp

from jagged.stats.flaw_likelihood import (
    choice_matrix,
    dirmult,
    option_logliks,
    option_mixture,
    rest_dirmult,
    trait_abilities,
)
from jagged.stats.irt import IRTFit, ResponseMatrix, fit_2pl, response_matrix
from jagged.text import Summarised

#: Grid of the sound items' parameter distribution G(a, c, γ): slopes (positive: a sound item
#: discriminates the right way) × intercepts × guessing floors (:data:`GRID_GUESS`).
GRID_SLOPES = np.geomspace(0.25, 5.0, 6)
GRID_INTERCEPTS = np.linspace(-8.0, 8.0, 17)
#: The guessing floor at a grid point as a share of 1 / (number of options): none, or chance.
GRID_GUESS = np.array([0.0, 1.0])
#: Concentration κ of the Dirichlet over the options of the models that do not follow the 2PL
#: (below 1: distractors that attract draw many models at once).
KAPPA = 1.0
#: EM iterations of the mixture and its convergence tolerance (largest change of a posterior).
MAX_ITER = 500
#: EM steps that update the grid distribution G (then frozen: its slow tail moves no ranking).
G_STEPS = 40
TOL = 1e-4
#: Prevalence start and the z of the interval on the expected count.
START_PREVALENCE = 0.05
Z95 = 1.959963984540054

#: Columns of :attr:`FlawPosterior.items`.
ITEM_COLUMNS: tuple[str, ...] = (
    "flaw_rank", "item", "domain", "n_models", "p_correct", "key", "likely_key", "prior", "posterior",
    "log_bayes_factor", "loglik_sound", "loglik_wrong_key", "loglik_unrelated", "p_wrong_key",
    "log_odds", "guess",
)
#: Columns of :attr:`FlawPosterior.domains`.
DOMAIN_COLUMNS: tuple[str, ...] = ("domain", "n_items", "prevalence", "expected_flawed", "sd", "lower", "upper")


@dataclass(frozen=True, repr=False)
class FlawPosterior(Summarised):
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

    def _summary(self) -> tuple[str, list[tuple[str, str]]]:
        d = self.domains
        return "FlawPosterior", [("items", f"{len(self.items):,}"), ("domains", f"{len(d):,}"),
                                 ("expected flawed", f"{d['expected_flawed'].sum():,.1f}"),
                                 ("wrong-key share", f"{self.wrong_key_share:.1%}"),
                                 ("choices used", "yes" if self.uses_choices else "no")]


# ---------------------------------------------------------------------------------------
# Pieces


def _log(x: np.ndarray) -> np.ndarray:
    """ln x in float (−inf at 0)."""
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(x, dtype=float))


def _scaled(ll: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """exp(ll − max over the grid) in float32 and that max (0 where every term is −inf)."""
    top = ll.max(axis=-1)
    top = np.where(np.isfinite(top), top, 0.0).astype(np.float32)
    return np.exp(ll - top[..., None]), top.astype(float)


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
        choices), ``log_odds`` logit P(flawed | responses) (the ranking key) and
        ``guess`` the item's chance floor 1/K (0 when unknown); ``domains``: prevalence
        π_d (posterior mean), ``expected_flawed`` Σ posterior with its SD and a 95 %
        interval.

    Raises
    ------
    JaggedInputError
        Bad item table (see :func:`jagged.stats.irt.response_matrix`).

    Notes
    -----
    **Abilities.** θ_m is the model's EAP ability in the item's trait, plugged in (a trait
    per domain with the default fit; one for the test with ``fit_2pl(rest="test")``).

    **Sound.** Model m chooses the key with probability

        q_m = γ + (1 − γ) σ(a θ_m + c),

    a 2PL with a guessing floor γ: a model that does not know the item guesses, and is
    right by chance. (a, c, γ) is integrated over G, a distribution on the grid
    :data:`GRID_SLOPES` (positive: a sound item discriminates the right way) ×
    :data:`GRID_INTERCEPTS` × γ ∈ {0, 1/K_j} (:data:`GRID_GUESS`; K_j the item's options:
    ``n_options``, else the letters A.. up to the last one chosen or keyed), so the data
    say how much guessing there is instead of a fixed floor. G is estimated by EM over
    all items, each weighted by its probability of being sound, and pooled over domains
    (each on its own N(0, 1) trait): a domain whose accuracy is lowered by its flawed
    items cannot widen its own difficulty distribution to explain "every model wrong" as
    "the domain is hard". The choices of the key's non-choosers are a Dirichlet(κ)-
    multinomial sequence over the other categories (the item's other options and "no
    answer or invalid"; κ = :data:`KAPPA`):

        ln DM(n; C, κ) = ln Γ(Cκ) − ln Γ(N + Cκ) + Σ_c [ln Γ(n_c + κ) − ln Γ(κ)].

    The sound likelihood is L_S = Σ_g G_g Π_m q_mg^x_m (1 − q_mg)^(1 − x_m) · DM(rest),
    x_m = [m chose the key]; without choices, the same 2PL-with-floor likelihood of
    ``correct`` (γ from ``n_options`` when given, else 0).

    **Flawed** = ω · wrong key + (1 − ω) · unrelated, ω estimated. *Wrong key*: another
    option o is the true answer, uniform over the item's other options,
    L_W = mean_o Σ_g G_g Π_m q_mg^[m chose o] (1 − q_mg)^… · DM(rest without o): the
    able models agree on o, the weak ones guess; without choices, ``correct`` follows
    q = γ + (1 − γ) σ(−a θ + c) (a sign-flipped item). *Unrelated* (no option separates
    the models): every choice a DM(κ) sequence over all categories; without choices,
    ``correct`` a Beta(1, 1)-Bernoulli sequence.

    **Prevalence (hierarchical).** π_d ~ Beta(α, β) per domain, and

        P(flawed | y) = σ(logit π_d + ln BF),  ln BF = ln L_F − ln L_S,

    reported as ``log_odds`` (the ranking key: ties of saturated posteriors are broken
    by it). With E_d the sum of the posteriors of domain d's n_d items, (α, β) maximise
    Σ_d [ln B(E_d + α, n_d − E_d + β) − ln B(α, β)] (beta-binomial evidence with
    fractional counts; empirical Bayes) and π_d = (E_d + α) / (n_d + α + β). With fewer
    than 3 domains α = β = 1.

    **EM.** Round 1: :data:`G_STEPS` steps updating the posteriors, G, ω and (α, β, π),
    with the wrong-key likelihood under a uniform G. Round 2: the wrong-key likelihood
    under the estimated G, G frozen, the posteriors, ω and (α, β, π) iterated until no
    posterior changes by more than ``tol`` (``converged``) or ``max_iter`` steps. The
    grid likelihoods are matrix products (models × items against models × grid, one per
    trait and number of options). The key's and the sign-flipped item's are computed once,
    so each EM step costs two matrix–vector products over items × grid; the wrong-key
    likelihood of every option is mixed over G block by block once per round
    (:func:`~jagged.stats.flaw_likelihood.option_mixture`), so the items × options × grid
    array is never held whole.

    **Expected flawed per domain** Σ_j p_j, with SD √Σ p_j (1 − p_j) (the
    Poisson-binomial count given the posteriors) and the interval mean ± 1.96 SD
    clipped to [0, n_d]; it does not include the uncertainty of the prevalence.

    **Edge cases.** Items with fewer than two responses get the prior as posterior (no
    evidence; ln BF = 0). Items whose key is missing or not a known option are scored on
    ``correct`` only. The key of an item is its most frequent key over the rows (ties:
    the first label). A choice outside the item's options (a letter past ``n_options``)
    counts as "no answer or invalid"; labels that are not single letters are options of
    the items where they are chosen or keyed. An item with one valid option has no wrong-key alternative
    (L_W = 0). A model without an ability in the item's trait gets θ = 0.
    """
    mat = response_matrix(table)
    if fit is None:
        fit = fit_2pl(mat)
    theta, item_group = trait_abilities(fit, mat)
    choices = use_choices and {"choice", "key"} <= set(table.columns)
    w = mat.w.astype(np.float32)
    y = mat.y.astype(np.float32)
    n_j = w.sum(axis=0).astype(float)
    n_items = len(mat.items)
    j_idx = np.arange(n_items)
    grid_a, grid_c, grid_g = (x.ravel() for x in np.meshgrid(GRID_SLOPES, GRID_INTERCEPTS, GRID_GUESS,
                                                              indexing="ij"))
    labels = np.array([], dtype=object)
    s_j = mat.y.sum(axis=0).astype(float)
    unrel_y = betaln(s_j + 1, n_j - s_j + 1)
    n_options = _n_options(table, mat)

    def grid_ll(ind: np.ndarray, guess: np.ndarray, sign: float = 1.0) -> np.ndarray:
        return option_logliks(ind, w, theta, guess, grid_a, grid_c, sign=sign, item_group=item_group, grid_g=grid_g)

    if choices:
        codes, item_key, valid, labels = choice_matrix(table, mat)
        n_lab = len(labels)
        use_c = item_key >= 0
        k_valid = valid.sum(axis=1)
        guess = np.where(use_c, 1.0 / np.maximum(k_valid, 2), _floor(n_options))
        counts = np.zeros((n_items, n_lab + 1))
        rows, cols = np.nonzero(codes >= 0)
        np.add.at(counts, (cols, codes[rows, cols]), 1.0)
        rest = rest_dirmult(counts, valid, KAPPA)
        unrel = np.where(use_c, dirmult(counts, valid.sum(axis=1) + 1.0, KAPPA), unrel_y)
        indicators = (codes[:, :, None] == np.arange(n_lab, dtype=np.int16)).astype(np.float32)  # models × items × L
        # the key's choosers (correct where the key is not a known option)
        chose_key = np.where(use_c[None, :], codes == item_key.clip(0)[None, :], y > 0).astype(np.float32)
        ll_key = grid_ll(chose_key[:, :, None], guess)[:, 0]
        ll_rev = grid_ll(y[:, :, None], guess, -1.0)[:, 0]
        others = valid.copy()
        others[j_idx[use_c], item_key[use_c]] = False
        n_other = others.sum(axis=1)

        def option_ll(weights: np.ndarray) -> np.ndarray:  # ln Σ_g G_g p(y | option o is the answer, g)
            return option_mixture(indicators, w, theta, guess, grid_a, grid_c, weights, item_group=item_group,
                                  grid_g=grid_g)
    else:
        use_c = np.zeros(n_items, dtype=bool)
        guess = _floor(n_options)
        unrel = unrel_y
        ll_key = grid_ll(y[:, :, None], guess)[:, 0]
        ll_rev = grid_ll(y[:, :, None], guess, -1.0)[:, 0]
    domains = pd.Index(pd.unique(mat.domains))
    d_of = domains.get_indexer(mat.domains)
    n_d = np.bincount(d_of, minlength=len(domains)).astype(float)
    g_w = np.full(len(grid_a), 1.0 / len(grid_a))
    prev = np.full(len(domains), START_PREVALENCE)
    omega, alpha, beta = 0.5, 1.0, 1.0
    post = np.zeros(n_items)
    informative = n_j >= 2
    converged, it = False, 0
    e_key, top = _scaled(ll_key)
    if choices:
        rest_key = np.where(use_c, rest[j_idx, item_key.clip(0)], 0.0)
    else:
        rest_key = np.zeros(n_items)
    e_rev, t_rev = _scaled(ll_rev)
    del ll_rev, ll_key
    # round 1: G estimated (G_STEPS EM steps) beside the posteriors, the wrong-key likelihood under a
    # uniform G; round 2: the wrong-key likelihood under the estimated G, G frozen, EM to convergence
    for rnd in (1, 2):
        wrong = t_rev + _log(e_rev @ g_w.astype(np.float32))
        if choices:
            m_opt = option_ll(g_w) + rest
            with np.errstate(divide="ignore"):
                m_wrong = logsumexp(np.where(others, m_opt, -np.inf), axis=1) - np.log(np.maximum(n_other, 1))
            wrong = np.where(use_c, np.where(n_other > 0, m_wrong, -np.inf), wrong)
        for step in range(1, max_iter + 1):
            it += 1
            lik = (e_key @ g_w.astype(np.float32)).astype(float)
            sound = top + _log(lik) + rest_key
            flawed = np.logaddexp(np.log(omega) + wrong, np.log1p(-omega) + unrel)
            lbf = np.where(informative, flawed - sound, 0.0)
            log_prior = np.log(prev[d_of]) - np.log1p(-prev[d_of])
            new = expit(log_prior + lbf)
            change = float(np.max(np.abs(new - post)))
            post = new
            if rnd == 1:  # G: the sound items' responsibilities over the grid
                weight = ((1 - post) * informative / np.maximum(lik, 1e-300)).astype(np.float32) @ e_key
                g_w = np.maximum(weight * g_w, 1e-300)
                g_w /= g_w.sum()
            with np.errstate(divide="ignore", invalid="ignore"):
                p_wrong_given_f = np.nan_to_num(expit(np.log(omega) + wrong - np.log1p(-omega) - unrel), nan=0.0)
            omega = float(np.clip((post * p_wrong_given_f).sum() / max(post.sum(), 1e-12), 1e-4, 1 - 1e-4))
            e_d = np.bincount(d_of, weights=post, minlength=len(domains))
            done = change < tol and step > 2
            if len(domains) >= 3 and (step <= 5 or step % 5 == 0 or done):
                alpha, beta = _fit_beta(e_d, n_d, alpha, beta)
            prev = np.clip((e_d + alpha) / (n_d + alpha + beta), 1e-6, 1 - 1e-6)
            if done or (rnd == 1 and step >= G_STEPS):
                converged = done and rnd == 2
                break
    # the last E-step with the final prevalence, so that posterior = σ(logit π_d + ln BF) exactly
    log_odds = np.log(prev[d_of]) - np.log1p(-prev[d_of]) + lbf
    post = expit(log_odds)
    p_wrong = post * p_wrong_given_f
    likely = np.full(n_items, "", dtype=object)
    key_lab = np.full(n_items, "", dtype=object)
    if choices:
        best = np.argmax(np.where(valid, m_opt, -np.inf), axis=1)
        likely = np.where(use_c, labels[best] if len(labels) else "", "")
        key_lab = np.where(use_c, labels[item_key.clip(0)] if len(labels) else "", "")
    items = pd.DataFrame({
        "item": mat.items, "domain": mat.domains, "n_models": n_j.astype(int),
        "p_correct": np.where(n_j > 0, s_j / np.maximum(n_j, 1), np.nan), "key": key_lab, "likely_key": likely,
        "prior": prev[d_of], "posterior": post, "log_bayes_factor": lbf, "loglik_sound": sound,
        "loglik_wrong_key": wrong, "loglik_unrelated": unrel, "p_wrong_key": p_wrong, "log_odds": log_odds,
        "guess": guess,
    })
    items = items.sort_values(["log_odds", "item"], ascending=[False, True], kind="mergesort").reset_index(drop=True)
    items.insert(0, "flaw_rank", np.arange(1, len(items) + 1))
    e_d = np.bincount(d_of, weights=post, minlength=len(domains))
    sd = np.sqrt(np.bincount(d_of, weights=post * (1 - post), minlength=len(domains)))
    dom = pd.DataFrame({"domain": domains.to_numpy(dtype=object), "n_items": n_d.astype(int), "prevalence": prev,
                        "expected_flawed": e_d, "sd": sd, "lower": np.clip(e_d - Z95 * sd, 0, None),
                        "upper": np.minimum(e_d + Z95 * sd, n_d)})
    return FlawPosterior(items[list(ITEM_COLUMNS)], dom[list(DOMAIN_COLUMNS)], float(alpha), float(beta), omega,
                         it, converged, bool(choices))


def _n_options(table: pd.DataFrame, mat: ResponseMatrix) -> np.ndarray:
    """Options per item from ``n_options`` (the largest given; NaN where absent)."""
    out = np.full(len(mat.items), np.nan)
    if "n_options" in table.columns:
        i = pd.Index(mat.items).get_indexer(table["item"].astype(str))
        n_opt = pd.to_numeric(table["n_options"], errors="coerce").groupby(i).max()
        out[n_opt.index.to_numpy()] = n_opt.to_numpy()
    return out


def _floor(n_options: np.ndarray) -> np.ndarray:
    """The guessing floor 1 / n_options (0 where unknown or < 2)."""
    return np.where(np.isfinite(n_options) & (n_options >= 2), 1.0 / np.where(n_options >= 2, n_options, 1), 0.0)


def _fit_beta(e_d: np.ndarray, n_d: np.ndarray, alpha: float, beta: float) -> tuple[float, float]:
    """(α, β) maximising Σ_d ln B(E_d + α, n_d − E_d + β) − ln B(α, β), on the log scale, bounded to [0.05, 1e4]."""
    def neg(x: np.ndarray) -> tuple[float, np.ndarray]:
        a, b = np.exp(x)
        value = -float((betaln(e_d + a, n_d - e_d + b) - betaln(a, b)).sum())
        common = digamma(a + b) - digamma(n_d + a + b)
        ga = (digamma(e_d + a) - digamma(a) + common).sum() * a
        gb = (digamma(n_d - e_d + b) - digamma(b) + common).sum() * b
        return value, -np.array([ga, gb])

    from scipy.optimize import minimize  # here: report kernels without item data need not import it

    res = minimize(neg, np.log([alpha, beta]), jac=True, method="L-BFGS-B",
                   bounds=[(np.log(0.05), np.log(1e4))] * 2)
    a, b = np.exp(res.x)
    return float(a), float(b)

