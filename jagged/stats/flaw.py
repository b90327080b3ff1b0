"""P(flawed | responses): one model of sound and miskeyed items, per-domain difficulty and prevalence, honest counts.

A *sound* item's key is chosen by the models that know it; how many know it follows its
domain's difficulty. A *miskeyed* item's able models agree on another option. The two are
told apart by who chose what, never by how hard the item is: each domain has its own
difficulty distribution and its own prevalence of flaws (logit-normal, empirical Bayes),
whose uncertainty is carried into every posterior and count. Flaws the responses cannot
show enter the counts from a stated prior. Entry point: :func:`flaw_posterior`.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.special import expit, gammaln, logsumexp, ndtr

from jagged.stats.fdr import q_values
from jagged.stats.irt import IRTFit, ResponseMatrix, fit_2pl, response_matrix
from jagged.stats.parallel import thread_map
from jagged.text import Summarised

#: Share of every domain's sound items that no model knows, whatever the domain's level (intercepts below
#: :data:`TAIL_BELOW`): an item every model misses is not by that alone a flaw.
HARD_TAIL = 0.02
TAIL_BELOW = -4.0
#: Smallest SD of a domain's intercept distribution (logit units), and the pseudo-items by which its mean and SD
#: are shrunk to the pooled ones (a domain of a few items keeps close to the benchmark's).
SD_FLOOR = 0.7
DOMAIN_PRIOR_ITEMS = 10.0
#: Dirichlet concentration of the wrong answers of models that do not know an item (below 1: a little more
#: drawn to one distractor than a uniform split).
KAPPA = 0.8
#: EM steps that estimate the sound items' distribution (slopes, floors, each domain's intercepts).
G_STEPS = 30
#: Prevalence grid on which each domain's prevalence posterior is computed (dense near 0 and 1).
PREVALENCE = np.unique(np.concatenate([np.geomspace(1e-4, 0.02, 12), np.linspace(0.02, 0.98, 33),
                                       1.0 - np.geomspace(0.02, 1e-4, 12)]))
#: Prior of the prevalence: logit π_d ~ N(mean, sd²); its start, its value with fewer than 3 domains, the bounds of sd.
PRIOR_START = (-3.0, 1.0)
PRIOR_FEW_DOMAINS = (-3.0, 1.5)
PRIOR_SD_MIN, PRIOR_SD_MAX = 0.3, 3.0
PRIOR_MEAN_MIN = -5.3
#: Flaws responses cannot show per flaw they show: LogNormal(0, HIDDEN_SD), median 1, integrated at these quantiles.
HIDDEN_SD = 0.5
HIDDEN_RATIOS = np.exp(HIDDEN_SD * np.array([NormalDist().inv_cdf((k + 0.5) / 3) for k in range(3)]))
#: Level of the intervals.
LEVEL = 0.90
#: Items (most likely miskeyed first) the key-agreement check looks at, and the posterior they need.
AGREEMENT_ITEMS = 300
#: Models × items × options × grid points the check may hold (it takes fewer items with many models).
AGREEMENT_CELLS = 50_000_000
AGREEMENT_MIN_POSTERIOR = 0.05
#: False discovery rate at which a model's agreement with likely wrong keys is flagged.
AGREEMENT_FDR = 0.05

#: Columns of :attr:`FlawPosterior.items`.
ITEM_COLUMNS: tuple[str, ...] = (
    "flaw_rank", "item", "domain", "n_models", "p_correct", "key", "likely_key", "posterior", "posterior_lower",
    "posterior_upper", "p_visible", "log_bayes_factor", "log_odds",
)
#: Columns of :attr:`FlawPosterior.domains`.
DOMAIN_COLUMNS: tuple[str, ...] = ("domain", "n_items", "accuracy", "prevalence", "visible", "visible_lower",
                                   "visible_upper", "expected_flawed", "lower", "upper")
#: Columns of :attr:`FlawPosterior.models`.
MODEL_COLUMNS: tuple[str, ...] = ("model", "n_items", "weight", "agree", "agree_peers", "agree_expected", "z",
                                  "p_value", "q_value", "flagged")


#: Items per block of :func:`grid_loglik` (bounds a block to items × options × grid float32 values).
BLOCK_ITEMS = 2048


@dataclass(frozen=True)
class Grid:
    """Flattened grid points: slope ``a``, intercept ``c`` and guessing share ``s`` (γ = s / K)."""

    a: np.ndarray
    c: np.ndarray
    s: np.ndarray

    @classmethod
    def of(cls, slopes: np.ndarray, intercepts: np.ndarray, shares: np.ndarray) -> Grid:
        """The product grid, slopes slowest, shares fastest."""
        a, c, s = np.meshgrid(slopes, intercepts, shares, indexing="ij")
        return cls(a.ravel(), c.ravel(), s.ravel())


def choice_matrix(table: pd.DataFrame, mat: ResponseMatrix) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Option codes (models × items; −1 no row, L no answer or invalid), the key code, valid options, labels.

    The key of an item is its most frequent key over the rows (ties: the first label; −1
    without one). Single capital letters are options A … up to ``n_options`` (else up to
    the last letter chosen or keyed); other labels are options of the items where they are
    chosen or keyed. A choice that is not a valid option of its item counts as "no answer".
    """
    m = pd.Index(mat.models).get_indexer(table["model"].astype(str))
    i = pd.Index(mat.items).get_indexer(table["item"].astype(str))
    choice = table["choice"].astype("string").fillna("").str.strip()
    key = table["key"].astype("string").fillna("").str.strip()
    names = pd.unique(pd.concat([choice, key], ignore_index=True).to_numpy(dtype=object))
    labels = np.array(sorted(str(x) for x in names if x), dtype=object)
    letters = all(len(x) == 1 and "A" <= x <= "Z" for x in labels)
    if letters and len(labels):
        labels = np.array([chr(65 + k) for k in range(max(ord(x) - 64 for x in labels))], dtype=object)
    n_lab, n_items = len(labels), len(mat.items)
    lab_index = pd.Index(labels)
    code = lab_index.get_indexer(choice.to_numpy(dtype=object))
    code = np.where(code >= 0, code, n_lab).astype(np.int16)
    codes = np.full((len(mat.models), n_items), -1, dtype=np.int16)
    codes[m, i] = code
    key_code = lab_index.get_indexer(key.to_numpy(dtype=object))
    kc = pd.DataFrame({"i": i, "k": key_code})
    kc = kc[kc["k"] >= 0].groupby(["i", "k"]).size().reset_index(name="n")
    first = kc.sort_values(["i", "n", "k"], ascending=[True, False, True]).drop_duplicates("i")
    item_key = np.full(n_items, -1)
    item_key[first["i"].to_numpy()] = first["k"].to_numpy()
    if letters:
        k_opt = np.full(n_items, np.nan)
        if "n_options" in table.columns:
            n_opt = pd.to_numeric(table["n_options"], errors="coerce").groupby(i).max()
            k_opt[n_opt.index.to_numpy()] = n_opt.to_numpy()
        seen = np.where(codes < n_lab, codes, -1).max(axis=0)
        k_opt = np.where(np.isfinite(k_opt), k_opt, np.maximum(seen, item_key) + 1)
        valid = np.arange(n_lab)[None, :] < k_opt[:, None]
    else:
        valid = np.zeros((n_items, n_lab), dtype=bool)
        seen_rows = code < n_lab
        valid[i[seen_rows], code[seen_rows]] = True
        ok = key_code >= 0
        valid[i[ok], key_code[ok]] = True
    keyed = np.flatnonzero(item_key >= 0)
    valid[keyed, item_key[keyed]] = True
    rows, cols = np.nonzero((codes >= 0) & (codes < n_lab))
    bad = ~valid[cols, codes[rows, cols]]
    codes[rows[bad], cols[bad]] = n_lab
    return codes, item_key, valid, labels


def trait_abilities(fit: IRTFit, mat: ResponseMatrix) -> tuple[np.ndarray, np.ndarray]:
    """θ per model and trait (models × traits; 0 where the model has none there) and each item's trait index."""
    groups = fit.items.set_index("item").reindex(mat.items)["group"].astype(str).to_numpy(dtype=object)
    g_index = pd.Index(pd.unique(groups))
    ab = fit.abilities
    table = np.zeros((len(mat.models), len(g_index)))
    mi = pd.Index(mat.models).get_indexer(ab["model"].astype(str))
    gi = g_index.get_indexer(ab["group"].astype(str))
    keep = (mi >= 0) & (gi >= 0)
    table[mi[keep], gi[keep]] = np.nan_to_num(ab["theta"].to_numpy(dtype=float)[keep])
    return table, g_index.get_indexer(groups)


def log_q(theta: np.ndarray, grid: Grid, floor: float | np.ndarray, sign: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """ln q and ln(1 − q) (rows × grid) for q = γ + (1 − γ) σ(±a θ + c), γ = s · floor.

    ``theta`` and ``floor`` are per row (``floor`` may be one number): a model's abilities,
    or one model's ability in each item's trait with each item's floor.
    """
    z = sign * theta[:, None] * grid.a[None, :] + grid.c[None, :]
    gamma = grid.s[None, :] * np.reshape(floor, (-1, 1))
    with np.errstate(divide="ignore"):
        log_g, log_1g = np.log(gamma), np.log1p(-gamma)
    return np.logaddexp(log_g, log_1g - np.logaddexp(0, -z)), log_1g - np.logaddexp(0, z)


class GridTerms:
    """ln q − ln(1 − q) and ln(1 − q) (models × grid, float32) per block of items of one trait and floor.

    ``theta`` is models × traits, ``item_group`` each item's trait, ``floor`` each item's 1/K
    (0: no guessing), ``sign`` −1 when knowing falls with ability. A block holds at most
    :data:`BLOCK_ITEMS` items; its terms are shared by every likelihood with these abilities.
    """

    def __init__(self, theta: np.ndarray, item_group: np.ndarray, floor: np.ndarray, grid: Grid,
                 sign: float = 1.0) -> None:
        self.n_grid = len(grid.a)
        self.blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for (g, f), cols in pd.DataFrame({"g": item_group, "f": floor}).groupby(["g", "f"]).indices.items():
            lq, l1q = log_q(theta[:, int(g)], grid, float(f), sign)
            diff, l1q = (lq - l1q).astype(np.float32), l1q.astype(np.float32)
            self.blocks += [(cols[k:k + BLOCK_ITEMS], diff, l1q) for k in range(0, len(cols), BLOCK_ITEMS)]

    def loglik(self, x: np.ndarray, w: np.ndarray, block: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
        """The log-likelihoods of one block's items: items × options × grid (float32)."""
        cols, diff, l1q = block
        out = (x[:, cols, :].reshape(x.shape[0], -1).T @ diff).reshape(len(cols), x.shape[2], -1)
        out += (w[:, cols].T @ l1q)[:, None, :]
        return out


def grid_loglik(x: np.ndarray, w: np.ndarray, terms: GridTerms) -> np.ndarray:
    """ln Π_m q^x (1 − q)^(w − x) for every item, option and grid point (items × options × grid, float32).

    ``x[m, j, o]`` is 1 where model m chose option o of item j (or, with one "option", its
    ``correct``), ``w`` 1 where it has the item. Computed as xᵀ [ln q − ln(1 − q)] +
    wᵀ ln(1 − q): one matrix product per block of ``terms``.
    """
    out = np.empty((x.shape[1], x.shape[2], terms.n_grid), dtype=np.float32)
    for block in terms.blocks:
        out[block[0]] = terms.loglik(x, w, block)
    return out


def mixed_loglik(x: np.ndarray, w: np.ndarray, terms: GridTerms, weights: np.ndarray) -> np.ndarray:
    """ln Σ_g G_jg Π_m q_g^x (1 − q_g)^(w − x) per item and option (items × options), G_j = ``weights[j]``.

    :func:`grid_loglik` mixed over the grid one block at a time (each scaled by its largest
    term before exponentiating), the blocks spread over the cores
    (:func:`jagged.stats.parallel.thread_map`), so the items × options × grid array is never
    held whole; −inf where every term is −inf or has no weight.
    """
    def mixed(block: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
        ll = terms.loglik(x, w, block)
        top = ll.max(axis=-1)
        top = np.where(np.isfinite(top), top, 0.0).astype(np.float32)
        np.exp(ll - top[..., None], out=ll)
        with np.errstate(divide="ignore"):
            return top + np.log(np.einsum("jog,jg->jo", ll, weights[block[0]].astype(np.float32)).astype(float))

    out = np.empty(x.shape[1:])
    values = thread_map(mixed, terms.blocks, sizes=[len(b[0]) for b in terms.blocks])
    for block, value in zip(terms.blocks, values, strict=True):
        out[block[0]] = value
    return out


def rest_dirmult(counts: np.ndarray, valid: np.ndarray, kappa: float) -> np.ndarray:
    """For every item and option o: ln DM(κ) of the choices of the other valid options, over those options.

    ``counts``: items × L (how many models chose each option; "no answer" is not a choice
    and not counted). ln DM(n; C, κ) = ln Γ(Cκ) − ln Γ(N + Cκ) + Σ_c [ln Γ(n_c + κ) − ln Γ(κ)]
    with C = (valid options) − 1 and N the choices of the others; −inf where o is not valid;
    0 where o is the only option (nothing else to choose).
    """
    n_cat = valid.sum(axis=1).astype(float) - 1.0
    terms = gammaln(counts + kappa) - gammaln(kappa)
    n = counts.sum(axis=1)
    with np.errstate(invalid="ignore"):
        out = (gammaln(np.maximum(n_cat, 1.0) * kappa)[:, None] - gammaln((n[:, None] - counts)
                                                                          + np.maximum(n_cat, 1.0)[:, None] * kappa)
               + terms.sum(axis=1)[:, None] - terms)
    out = np.where((n_cat > 0)[:, None], out, 0.0)
    return np.where(valid, out, -np.inf)


#: The grid a sound item's knowing probability q = γ + (1 − γ) σ(a θ + c) is integrated over: slopes
#: (positive: knowing rises with ability) × intercepts × the guessing floor γ as a share of 1/K (none, or chance).
GRID = Grid.of(np.geomspace(0.25, 4.0, 5), np.linspace(-8.0, 8.0, 17), np.array([0.0, 1.0]))

@dataclass(frozen=True, repr=False)
class FlawPosterior(Summarised):
    """The flawed-item model (:func:`flaw_posterior`).

    ``items`` (:data:`ITEM_COLUMNS`, most likely flawed first), ``domains``
    (:data:`DOMAIN_COLUMNS`), ``total`` (``n_items, visible, expected_flawed, lower, upper``),
    ``models`` (the agreement check, :data:`MODEL_COLUMNS`), the prevalence prior logit π_d ~
    N(``prior_mean``, ``prior_sd``²), ``kappa``, ``uses_choices`` (else correctness only), ``level``.
    """

    items: pd.DataFrame
    domains: pd.DataFrame
    total: dict
    models: pd.DataFrame
    prior_mean: float
    prior_sd: float
    kappa: float
    uses_choices: bool
    level: float

    def _summary(self) -> tuple[str, list[tuple[str, str]]]:
        t, lvl = self.total, f"{self.level:.0%}"
        flagged = int(self.models["flagged"].sum()) if "flagged" in self.models else 0
        return "FlawPosterior", [("items", f"{len(self.items):,}"), ("domains", f"{len(self.domains):,}"),
                                 ("expected flawed",
                                  f"{t['expected_flawed']:,.1f} ({t['lower']:,.0f}–{t['upper']:,.0f}, {lvl})"),
                                 ("visibly miskeyed", f"{t['visible']:,.1f}"),
                                 ("models flagged", f"{flagged:,}"),
                                 ("choices used", "yes" if self.uses_choices else "no")]


def flaw_posterior(table: pd.DataFrame, fit: IRTFit | None = None, *, use_choices: bool = True,
                   level: float = LEVEL) -> FlawPosterior:
    """P(flawed | responses) for every item, expected flawed items per domain with intervals, and the anchors check.

    Parameters
    ----------
    table : pandas.DataFrame
        Item table: ``model, domain, item, correct``, optionally ``choice, key, n_options``.
    fit : IRTFit, optional
        The 2PL fit giving the abilities (fitted here, a trait per domain, when not given).
    use_choices : bool
        Use ``choice`` and ``key`` when present (default); False: correctness only.
    level : float
        Level of the intervals.

    Returns
    -------
    FlawPosterior
        ``items``: ``posterior`` P(flawed | responses) (a flaw the responses show, or one
        they cannot), its interval over the domain's prevalence (``posterior_lower``,
        ``posterior_upper``), ``p_visible`` P(miskeyed | responses), ``log_bayes_factor``
        ln p(y | miskeyed) − ln p(y | sound), ``log_odds`` logit of ``posterior`` (the
        ranking key), ``key`` and ``likely_key`` (the option the responses make most likely
        the answer, with choices); ``domains``: the prevalence of miskeyed items (posterior
        mean), ``visible`` their expected number, ``expected_flawed`` all flaws, each with its
        interval; ``total``; ``models``: the agreement check (see Notes).

    Notes
    -----
    **Abilities.** θ_m is the model's EAP ability in the item's trait (a trait per domain by
    default; one with ``fit_2pl(rest="test")``).

    **Sound item.** A model knows item j with probability q_m = γ + (1 − γ) σ(a θ_m + c)
    (γ = s/K, K the item's options) and then chooses the key; a model that does not know
    it chooses among the other options as a Dirichlet(κ)-multinomial sequence
    (no answer is neither). (a, c, s) is integrated over G_d = S(a, s) · H_d(c): slopes and
    floors pooled over domains, intercepts per domain,
    H_d = (1 − ε) N(μ_d, σ_d²) + ε · U(c < −4) on the grid :data:`GRID` (ε =
    :data:`HARD_TAIL`; μ_d and σ_d the moments of the domain's sound items' intercepts,
    shrunk to the pooled ones by :data:`DOMAIN_PRIOR_ITEMS` pseudo-items, σ_d ≥
    :data:`SD_FLOOR`). So a domain where every model is weak has its own low μ_d: its hard
    items are expected, not flaws.

    **Miskeyed item.** Another valid option o is the answer (uniform over the other
    options): its choosers are the knowers, the key is one of the options the others
    choose. (a, c, s) is integrated over the benchmark's pooled Ḡ = Σ_d n_d G_d / N: the
    visible key errors of a hard domain are its ordinary items whose label is wrong, and
    the able models know their answer as they know a typical item's; a split of weak
    answers in a hard domain does not fit that. Without choices: ``correct`` falls with
    ability (σ(−a θ + c)).

        L_S = Σ_g G_dg Π_m q_mg^[m chose k] (1 − q_mg)^… · DM(others),
        L_W = mean_o Σ_g Ḡ_g Π_m q_mg^[m chose o] (1 − q_mg)^… · DM(choices other than o),

    and ln BF = ln L_W − ln L_S, with κ = :data:`KAPPA`.

    **Prevalence.** logit π_d ~ N(m, s²); (m, s) maximise the marginal likelihood
    Σ_d ln ∫ p(π; m, s) Π_{j ∈ d} (π BF_j + 1 − π) dπ, computed on the grid
    :data:`PREVALENCE` (m ≥ :data:`PRIOR_MEAN_MIN`: a benchmark is not assumed flawless;
    s in [:data:`PRIOR_SD_MIN`, :data:`PRIOR_SD_MAX`]; with fewer than 3 domains
    (m, s) = :data:`PRIOR_FEW_DOMAINS`); each domain's posterior p(π | y_d) is kept, and
    P(miskeyed_j | y) = ∫ σ(logit π + ln BF_j) p(π | y_d) dπ. The EM alternates this with
    the sound items' distribution (:data:`G_STEPS` steps, responsibilities 1 − P), then
    recomputes the miskeyed likelihood under the estimated G.

    **Flaws responses cannot show.** A hidden prevalence ρ, logit ρ = logit π + ln r with π
    from the prevalence prior (the same for every domain: responses say nothing about where
    such flaws are) and r hidden flaws per visible one, r ~ LogNormal(0, :data:`HIDDEN_SD`²)
    (median 1: published MMLU audits find as many wording flaws as answer flaws),
    integrated at :data:`HIDDEN_RATIOS`. This is a prior, not a measurement.
    ``posterior`` = 1 − (1 − P(miskeyed))(1 − E ρ), so the ranking is that of P(miskeyed)
    and the posteriors sum to the expected number of flawed items.

    **Counts.** A domain's visible count given π is a sum of Bernoullis (normal with its
    mean and variance); its distribution mixes over p(π | y_d) and, for all flaws, over r
    with the hidden count of the n_d − V_d other items (binomial given ρ, mixed over ρ);
    the interval is the central ``level`` of that mixture (integers, within [0, n_d]). The
    total mixes over r the normal sum of the domains (independent given r). The item
    interval is P at the ``level`` quantiles of π's posterior.

    **Agreement with likely wrong keys** (``models``). For every model m, on the items most
    likely miskeyed (:data:`AGREEMENT_ITEMS` at most: P ≥ :data:`AGREEMENT_MIN_POSTERIOR`, or
    at least half the models on one other option),
    the item's P(miskeyed) is recomputed without m (w_j^(−m)) and with it m's probability
    E_mj of choosing the key under the model given the others' responses; z =
    Σ w (x − E) / √Σ w² E (1 − E), one-sided, Benjamini–Hochberg across models
    (:func:`jagged.stats.fdr.q_values`) after centring z on the models' median and scaling
    it by their spread (1.4826 MAD, at least 1: against its peers, so a misfit all models
    share flags none); ``flagged`` at q < :data:`AGREEMENT_FDR`. A
    flagged model chose the file's key on likely wrong keys more than its ability and its
    peers explain: possible contamination or training on the benchmark.

    **Edge cases.** Items with fewer than two responses keep the prior (ln BF = 0). Items
    without a known key are scored on ``correct`` only. An item with one valid option has
    no miskeyed alternative (L_W = 0). A model without an ability in a trait gets θ = 0.
    """
    mat = response_matrix(table)
    fit = fit_2pl(mat) if fit is None else fit
    theta, item_group = trait_abilities(fit, mat)
    choices = use_choices and {"choice", "key"} <= set(table.columns)
    m = _Model(table, mat, theta, item_group, choices)
    m.estimate()
    return m.result(level)


class _Model:
    """The state of one fit (the arrays are shared by the estimation, the counts and the agreement check)."""

    def __init__(self, table: pd.DataFrame, mat: ResponseMatrix, theta: np.ndarray, item_group: np.ndarray,
                 choices: bool) -> None:
        self.mat, self.theta, self.group = mat, theta, item_group
        self.w = mat.w.astype(np.float32)
        y = mat.y.astype(np.float32)
        self.n_j = self.w.sum(axis=0).astype(float)
        self.informative = self.n_j >= 2
        n_items = len(mat.items)
        self.jj = np.arange(n_items)
        domains = pd.Index(pd.unique(mat.domains))
        self.domains, self.d_of = domains, domains.get_indexer(mat.domains)
        self.n_d = np.bincount(self.d_of, minlength=len(domains)).astype(float)
        self.by_domain = sparse.csr_matrix((np.ones(n_items), (self.d_of, self.jj)), shape=(len(domains), n_items))
        n_opt = _n_options(table, mat)
        self.choices = choices
        if choices:
            self.codes, key, self.valid, self.labels = choice_matrix(table, mat)
            self.keyed = key >= 0
            self.key = key.clip(0)
            n_lab = len(self.labels)
            self.floor = np.where(self.keyed, 1.0 / np.maximum(self.valid.sum(axis=1), 2), _floor(n_opt))
            self.ind = (self.codes[:, :, None] == np.arange(n_lab, dtype=np.int16)).astype(np.float32)
            self.counts = self.ind.sum(axis=0).astype(float)
            chose_key = np.where(self.keyed[None, :], self.codes == self.key[None, :], y > 0).astype(np.float32)
            self.others = self.valid.copy()
            self.others[self.jj[self.keyed], self.key[self.keyed]] = False
            self.n_other = self.others.sum(axis=1)
        else:
            self.keyed = np.zeros(n_items, dtype=bool)
            self.floor = _floor(n_opt)
            chose_key = y
        self.chose_key = chose_key
        self.terms = GridTerms(theta, item_group, self.floor, GRID)
        self.e_key, self.top = _scaled(grid_loglik(chose_key[:, :, None], self.w, self.terms)[:, 0])
        ll_rev = grid_loglik(y[:, :, None], self.w, GridTerms(theta, item_group, self.floor, GRID, sign=-1.0))[:, 0]
        self.e_rev, self.top_rev = _scaled(ll_rev)
        self.p_correct = np.where(self.n_j > 0, y.sum(axis=0) / np.maximum(self.n_j, 1), np.nan)
        # the sound items' distribution: slopes × floors pooled, intercepts per domain
        acc = self._per_domain(np.nan_to_num(self.p_correct)) / self.n_d
        self.mu = np.log(np.clip(acc, 0.05, 0.95) / (1 - np.clip(acc, 0.05, 0.95))) * 2.0
        self.sd = np.full(len(domains), 2.0)
        self.sg = np.full((5, 2), 0.1)
        self.prior = PRIOR_START

    def _per_domain(self, values: np.ndarray) -> np.ndarray:
        """Sums of per-item rows over each domain's items (rows: items, any trailing shape)."""
        return np.asarray(self.by_domain @ values)

    def g_domains(self) -> np.ndarray:
        """G_d on the grid (domains × grid)."""
        c = np.unique(GRID.c)
        h = np.exp(-0.5 * ((c[None, :] - self.mu[:, None]) / self.sd[:, None]) ** 2)
        h = (1 - HARD_TAIL) * h / h.sum(axis=1, keepdims=True) + HARD_TAIL * _tail(c)[None, :]
        return (self.sg[None, :, None, :] * h[:, None, :, None]).reshape(len(self.mu), -1)

    def wrong_key(self, g_d: np.ndarray) -> np.ndarray:
        """ln L_W per item under the pooled Ḡ of ``g_d``; keeps ln L(option o is the answer) as ``m_opt``."""
        pooled = (g_d * self.n_d[:, None]).sum(axis=0) / self.n_d.sum()
        rev = self.top_rev + _log(self.e_rev @ pooled.astype(np.float32))
        if not self.choices:
            return rev
        weights = np.broadcast_to(pooled, (len(self.jj), len(pooled)))
        self.m_opt = mixed_loglik(self.ind, self.w, self.terms, weights) + self.rest
        with np.errstate(divide="ignore"):
            wrong = logsumexp(np.where(self.others, self.m_opt, -np.inf), axis=1) - np.log(np.maximum(self.n_other, 1))
        return np.where(self.keyed, np.where(self.n_other > 0, wrong, -np.inf), rev)

    def estimate(self) -> None:
        """Round 1: G by EM beside the prevalence; round 2: the miskeyed likelihood under G, the posteriors."""
        g_d = self.g_domains()
        self.rest = rest_dirmult(self.counts, self.valid, KAPPA) if self.choices else None
        rest = np.where(self.keyed, self.rest[self.jj, self.key], 0.0) if self.choices else 0.0
        wrong = self.wrong_key(g_d)
        for step in range(G_STEPS):
            joint = self.e_key * g_d[self.d_of].astype(np.float32)
            lik = joint.sum(axis=1, dtype=float)
            lbf = np.where(self.informative, wrong - (self.top + _log(lik) + rest), 0.0)
            if step % 5 == 0:  # the prevalence posteriors; between, the items' posteriors at their mean
                self._prevalence(lbf, refit=True)
                mean = self.pi_post @ PREVALENCE
            p_vis = expit((np.log(mean) - np.log1p(-mean))[self.d_of] + lbf)
            joint *= ((1 - p_vis) * self.informative / np.maximum(lik, 1e-300)).astype(np.float32)[:, None]
            self._update_g(self._per_domain(joint))
            g_d = self.g_domains()
        self.g_d = g_d
        self.sound = self.top + _log(np.einsum("jg,jg->j", self.e_key, g_d[self.d_of].astype(np.float32))) + rest
        self.lbf = np.where(self.informative, self.wrong_key(g_d) - self.sound, 0.0)
        self._prevalence(self.lbf, refit=True)

    def _update_g(self, resp: np.ndarray) -> None:
        """M-step of the sound items' distribution from the per-domain responsibilities (domains × grid)."""
        r = resp.reshape(len(self.mu), 5, -1, 2)
        self.sg = np.maximum(r.sum(axis=(0, 2)), 1e-12)
        self.sg /= self.sg.sum()
        c = np.unique(GRID.c)
        rc = r.sum(axis=(1, 3))
        normal = np.exp(-0.5 * ((c[None, :] - self.mu[:, None]) / self.sd[:, None]) ** 2)
        normal = (1 - HARD_TAIL) * normal / normal.sum(axis=1, keepdims=True)
        rc = rc * normal / (normal + HARD_TAIL * _tail(c)[None, :])
        # each domain's moments, shrunk to the pooled ones by DOMAIN_PRIOR_ITEMS pseudo-items
        mass = rc.sum(axis=1)
        pooled = rc.sum(axis=0) / max(rc.sum(), 1e-12)
        mu_all = pooled @ c
        var_all = pooled @ (c - mu_all) ** 2
        self.mu = ((rc @ c) + DOMAIN_PRIOR_ITEMS * mu_all) / (mass + DOMAIN_PRIOR_ITEMS)
        var = ((rc * (c[None, :] - self.mu[:, None]) ** 2).sum(axis=1) + DOMAIN_PRIOR_ITEMS * var_all) / (
            mass + DOMAIN_PRIOR_ITEMS)
        self.sd = np.sqrt(np.maximum(var, SD_FLOOR ** 2))

    def _prevalence(self, lbf: np.ndarray, refit: bool) -> float:
        """Per-domain prevalence posteriors on the grid (refitting (α, β)), P(miskeyed) per item; the log evidence."""
        lp, l1p = np.log(PREVALENCE), np.log1p(-PREVALENCE)
        q = self._per_domain(np.logaddexp(lp[None, :] + lbf[:, None], l1p[None, :]))
        if refit and len(self.domains) >= 3:
            self.prior = _fit_prior(q, self.prior)
        elif len(self.domains) < 3:
            self.prior = PRIOR_FEW_DOMAINS
        prior = _prior_weights(*self.prior)
        joint = q + prior[None, :]
        evidence = logsumexp(joint, axis=1)
        self.pi_post = np.exp(joint - evidence[:, None])
        self.p_k = expit(lp - l1p + lbf[:, None])  # items × grid: P(miskeyed | π_k)
        self.p_vis = np.clip(np.einsum("jk,jk->j", self.pi_post[self.d_of], self.p_k), 0.0, 1.0)
        return float(evidence.sum())

    def _hidden(self) -> tuple[np.ndarray, np.ndarray]:
        """E ρ and E ρ² at each hidden ratio r: logit ρ = logit π + ln r, π from the prior (alike in every domain)."""
        logit = np.log(PREVALENCE) - np.log1p(-PREVALENCE)
        rho = expit(logit[None, :] + np.log(HIDDEN_RATIOS)[:, None])  # ratios × grid
        prior = np.exp(_prior_weights(*self.prior))
        return rho @ prior, (rho ** 2) @ prior

    def result(self, level: float) -> FlawPosterior:
        """The tables."""
        mat, tail = self.mat, (1 - level) / 2
        hidden = self._hidden()[0].mean()
        cdf = np.cumsum(self.pi_post, axis=1)
        lo_k = np.minimum((cdf < tail).sum(axis=1), len(PREVALENCE) - 1)
        hi_k = np.minimum((cdf < 1 - tail).sum(axis=1), len(PREVALENCE) - 1)
        post = 1 - (1 - self.p_vis) * (1 - hidden)
        lower = 1 - (1 - self.p_k[self.jj, lo_k[self.d_of]]) * (1 - hidden)
        upper = 1 - (1 - self.p_k[self.jj, hi_k[self.d_of]]) * (1 - hidden)
        key = likely = np.full(len(self.jj), "", dtype=object)
        if self.choices and len(self.labels):
            scores = np.where(self.valid, self.m_opt, -np.inf)
            scores[self.jj, self.key] = np.where(self.keyed, self.sound, scores[self.jj, self.key])
            likely = np.where(self.keyed, self.labels[np.argmax(scores, axis=1)], "")
            key = np.where(self.keyed, self.labels[self.key], "")
        with np.errstate(divide="ignore"):
            log_odds = np.log(post) - np.log1p(-post)
        items = pd.DataFrame({
            "item": mat.items, "domain": mat.domains, "n_models": self.n_j.astype(int), "p_correct": self.p_correct,
            "key": key, "likely_key": likely, "posterior": post, "posterior_lower": lower, "posterior_upper": upper,
            "p_visible": self.p_vis, "log_bayes_factor": self.lbf, "log_odds": log_odds})
        items = items.sort_values(["log_odds", "item"], ascending=[False, True], kind="mergesort")
        items = items.reset_index(drop=True)
        items.insert(0, "flaw_rank", np.arange(1, len(items) + 1))
        domains, total = self._counts(level)
        return FlawPosterior(items[list(ITEM_COLUMNS)], domains, total, self._agreement(), *self.prior, KAPPA,
                             self.choices, float(level))

    def _counts(self, level: float) -> tuple[pd.DataFrame, dict]:
        """Expected visible and all flaws per domain with intervals, and the total."""
        tail = (1 - level) / 2
        w, n_d = self.pi_post, self.n_d
        mean_k = self._per_domain(self.p_k)
        var_k = self._per_domain(self.p_k * (1 - self.p_k))
        visible = (w * mean_k).sum(axis=1)
        m1, m2 = self._hidden()  # the hidden flaws among the items not miskeyed
        free = np.maximum(n_d - visible, 0.0)[None, :]
        h_mean = free * m1[:, None]
        h_var = free * (m1 - m2)[:, None] + free ** 2 * (m2 - m1 ** 2)[:, None]
        v_lo, v_hi = _mixture_interval(mean_k, var_k, w, n_d, tail)
        comp_m = (mean_k[:, None, :] + h_mean.T[:, :, None]).reshape(len(n_d), -1)
        comp_v = (var_k[:, None, :] + h_var.T[:, :, None]).reshape(len(n_d), -1)
        comp_w = np.repeat(w[:, None, :] / len(HIDDEN_RATIOS), len(HIDDEN_RATIOS), axis=1).reshape(len(n_d), -1)
        lo, hi = _mixture_interval(comp_m, comp_v, comp_w, n_d, tail)
        accuracy = self._per_domain(np.nan_to_num(self.p_correct) * self.n_j) / np.maximum(
            self._per_domain(self.n_j), 1)
        domains = pd.DataFrame({
            "domain": self.domains.to_numpy(dtype=object), "n_items": n_d.astype(int), "accuracy": accuracy,
            "prevalence": w @ PREVALENCE, "visible": visible, "visible_lower": v_lo, "visible_upper": v_hi,
            "expected_flawed": visible + h_mean.mean(axis=0), "lower": lo, "upper": hi})
        # the total: domains independent given the hidden ratio r, which they share
        vis_var = (w * (var_k + mean_k ** 2)).sum(axis=1) - visible ** 2
        t_mean = visible.sum() + h_mean.sum(axis=1)
        t_sd = np.sqrt(vis_var.sum() + h_var.sum(axis=1))
        lo_t, hi_t = _mixture_interval(t_mean[None, :], t_sd[None, :] ** 2,
                                       np.full((1, len(t_mean)), 1 / len(t_mean)), np.array([n_d.sum()]), tail)
        total = {"n_items": int(n_d.sum()), "visible": float(visible.sum()), "expected_flawed": float(t_mean.mean()),
                 "lower": float(lo_t[0]), "upper": float(hi_t[0])}
        return domains[list(DOMAIN_COLUMNS)], total

    def _agreement(self) -> pd.DataFrame:
        """Per model: agreement with the keys of likely miskeyed items against the model's expectation (Notes)."""
        if not self.choices:
            return pd.DataFrame({c: pd.Series(dtype=object if c == "model" else float) for c in MODEL_COLUMNS})
        n_models, n_lab = self.w.shape[0], len(self.labels)
        budget = max(int(AGREEMENT_CELLS / max(n_models * n_lab * len(GRID.a), 1)), 50)
        # candidates: likely miskeyed, or half the models on one other option (one model that answers the key,
        # whatever it knows, can hide an item's key error from the full-data posterior, not from this)
        consensus = np.where(self.others, self.counts, 0.0).max(axis=1, initial=0.0) / np.maximum(self.n_j, 1)
        score = np.maximum(self.p_vis, np.where(consensus >= 0.5, consensus, 0.0))
        cand = np.flatnonzero(self.keyed & self.informative & (score >= AGREEMENT_MIN_POSTERIOR))
        cand = cand[np.argsort(-score[cand], kind="stable")][:min(AGREEMENT_ITEMS, budget)]
        ctx = _Candidates(self, cand)
        rows = thread_map(ctx.model, range(n_models))
        out = pd.DataFrame(rows, columns=list(MODEL_COLUMNS[1:-3]))
        out.insert(0, "model", np.asarray(self.mat.models, dtype=object))
        z = out["z"].to_numpy(float)
        ok = np.isfinite(z)
        # against the peers: centred on the models' median, scaled by their spread (never below 1)
        centre = np.median(z[ok]) if ok.any() else 0.0
        scale = max(1.0, 1.4826 * np.median(np.abs(z[ok] - centre))) if ok.sum() >= 3 else 1.0
        out["z"] = (z - centre) / scale
        out["p_value"] = np.where(ok, ndtr(-out["z"].to_numpy(float)), np.nan)
        out["q_value"] = q_values(out["p_value"].to_numpy(float))
        out["flagged"] = out["q_value"].to_numpy(float) < AGREEMENT_FDR
        return out.sort_values(["z", "model"], ascending=[False, True], kind="mergesort",
                               na_position="last").reset_index(drop=True)


class _Candidates:
    """The likely miskeyed items' grid likelihoods, from which one model's responses are taken out in turn."""

    def __init__(self, fit: _Model, cand: np.ndarray) -> None:
        self.fit, self.cand = fit, cand
        k = fit.key[cand]
        self.at = (np.arange(len(cand)), k)
        with np.errstate(divide="ignore"):
            self.key_ll = np.log(fit.e_key[cand]).astype(float) + fit.top[cand, None]
        self.log_g = _log(np.maximum(fit.g_d[fit.d_of[cand]], 1e-300))
        pooled = (fit.g_d * fit.n_d[:, None]).sum(axis=0) / fit.n_d.sum()
        log_pooled = _log(np.maximum(pooled, 1e-300)).astype(np.float32)
        self.opt_ll = grid_loglik(fit.ind[:, cand], fit.w[:, cand], GridTerms(fit.theta, fit.group[cand],
                                                                              fit.floor[cand], GRID)) + log_pooled
        self.pi_post = fit.pi_post[fit.d_of[cand]]
        self.logit_pi = np.log(PREVALENCE) - np.log1p(-PREVALENCE)
        self.others = fit.others[cand]
        self.n_opts = fit.valid[cand].sum(axis=1)
        self.w = fit.w[:, cand].astype(float)
        self.key_ind = fit.ind[:, cand][:, self.at[0], self.at[1]].astype(float)  # models × items: chose the key

    def model(self, m: int) -> tuple[float, ...]:
        """(items, Σ weight, agreement, peers' agreement, expected agreement, z) of model m (see flaw_posterior)."""
        fit, cand = self.fit, self.cand
        has = self.w[m] > 0
        if not has.any():
            return 0.0, 0.0, np.nan, np.nan, np.nan, np.nan
        lq, l1q = log_q(fit.theta[m, fit.group[cand]], GRID, fit.floor[cand])
        x = fit.ind[m, cand]  # items × L
        x_key = self.key_ind[m]
        sound_ll, sound_w = _lse(self.key_ll - (x_key[:, None] * (lq - l1q) + self.w[m][:, None] * l1q) + self.log_g)
        opt_ll, opt_w = _lse(self.opt_ll - (x[:, :, None] * (lq - l1q)[:, None, :].astype(np.float32)
                                            + (self.w[m][:, None] * l1q)[:, None, :].astype(np.float32)))
        counts = fit.counts[cand] - x
        rest = rest_dirmult(counts, fit.valid[cand], KAPPA)
        opt_mix = np.where(self.others, opt_ll + rest, -np.inf)
        wrong, answer = _lse(opt_mix)
        lbf = wrong - np.log(np.maximum(self.others.sum(axis=1), 1)) - sound_ll - rest[self.at]
        weight = np.einsum("jk,jk->j", self.pi_post, expit(self.logit_pi + lbf[:, None])) * has
        total = weight.sum()
        if total <= 0:
            return float(has.sum()), 0.0, np.nan, np.nan, np.nan, np.nan
        # m's probability of choosing the key: knowing a sound item, or picking it among the others on a miskeyed one
        q = np.exp(lq)
        p_sound = (sound_w * q).sum(axis=1)
        knows = np.einsum("jog,jg->jo", opt_w, q.astype(np.float32))
        pick_key = (counts[self.at][:, None] + KAPPA) / (counts.sum(axis=1)[:, None] - counts
                                                              + np.maximum(self.n_opts - 1, 1)[:, None] * KAPPA)
        p_wrong = (answer * (1 - knows) * pick_key).sum(axis=1)
        expected = weight * p_wrong + (1 - weight) * p_sound
        peer_key = (self.key_ind.sum(axis=0) - x_key) @ weight
        peer_n = (self.w.sum(axis=0) - self.w[m]) @ weight
        var = (weight ** 2 * expected * (1 - expected)).sum()
        z = (weight * (x_key - expected)).sum() / np.sqrt(var) if var > 0 else np.nan
        return (float(has.sum()), float(total), float((weight * x_key).sum() / total),
                float(peer_key / max(peer_n, 1e-12)), float((weight * expected).sum() / total), float(z))


def _lse(log_w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ln Σ exp over the last axis and the normalised weights (zeros where every term is −inf), one exp."""
    top = np.max(log_w, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(log_w - top)
    total = e.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        lse = (top + np.log(total))[..., 0]
    return lse, np.where(total > 0, e / np.where(total > 0, total, 1.0), 0.0)


def _mixture_interval(mean: np.ndarray, var: np.ndarray, weight: np.ndarray, n: np.ndarray,
                      tail: float) -> tuple[np.ndarray, np.ndarray]:
    """Central interval of a mixture of normal counts per row (rows × components), integers within [0, n].

    The quantiles are found by bisection on the integers 0 … n of the mixture's CDF with a
    continuity correction (log2 n steps).
    """
    sd = np.sqrt(np.maximum(var, 1e-12))
    steps = int(np.ceil(np.log2(float(np.max(n, initial=0)) + 2))) + 1

    def quantile(p: float) -> np.ndarray:
        lo, hi = np.full(len(n), -1.0), n.astype(float)  # the quantile k: CDF(k - 1) < p <= CDF(k)
        for _ in range(steps):
            mid = np.floor((lo + hi) / 2)
            below = (weight * ndtr((mid[:, None] + 0.5 - mean) / sd)).sum(axis=1) < p
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        return np.clip(hi, 0, n)

    return quantile(tail), quantile(1 - tail)


def _prior_weights(mean: float, sd: float) -> np.ndarray:
    """ln weights of the prevalence grid under logit π ~ N(mean, sd²) (normalised over the grid)."""
    logit = np.log(PREVALENCE) - np.log1p(-PREVALENCE)
    w = -0.5 * ((logit - mean) / sd) ** 2 - np.log(PREVALENCE) - np.log1p(-PREVALENCE) + np.log(np.gradient(PREVALENCE))
    return w - logsumexp(w)


def _fit_prior(q: np.ndarray, start: tuple[float, float]) -> tuple[float, float]:
    """(mean, sd) of logit π maximising Σ_d ln Σ_k w_k(mean, sd) e^(q_dk), sd in [PRIOR_SD_MIN, PRIOR_SD_MAX]."""
    from scipy.optimize import minimize  # here: report kernels without item data need not import it

    logit = np.log(PREVALENCE) - np.log1p(-PREVALENCE)

    def neg(x: np.ndarray) -> tuple[float, np.ndarray]:
        mean, sd = x[0], np.exp(x[1])
        prior = _prior_weights(mean, sd)
        joint = q + prior[None, :]
        ev = logsumexp(joint, axis=1)
        post = np.exp(joint - ev[:, None]).sum(axis=0)
        z = (logit - mean) / sd
        dz = post - len(q) * np.exp(prior)  # d ev / d ln w_k summed over domains
        return -float(ev.sum()), -np.array([dz @ (z / sd), dz @ (z ** 2)])

    res = minimize(neg, np.array([start[0], np.log(start[1])]), jac=True, method="L-BFGS-B",
                   bounds=[(PRIOR_MEAN_MIN, 4.0), (np.log(PRIOR_SD_MIN), np.log(PRIOR_SD_MAX))])
    return float(res.x[0]), float(np.exp(res.x[1]))


def _tail(c: np.ndarray) -> np.ndarray:
    t = (c < TAIL_BELOW).astype(float)
    return t / t.sum()


def _log(x: np.ndarray) -> np.ndarray:
    """ln x in float (−inf at 0)."""
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(x, dtype=float))


def _scaled(ll: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """exp(ll − max over the grid) in float32 and that max (0 where every term is −inf)."""
    top = ll.max(axis=-1)
    top = np.where(np.isfinite(top), top, 0.0).astype(np.float32)
    return np.exp(ll - top[..., None]), top.astype(float)


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
