"""Item responses with known truth from a 2PL model, with planted flawed items clustered by domain.

Model m has ability θ_md ~ N(0, 1) in every domain d (a common part plus a domain part,
so the domains correlate). Item j has slope a_j ~ LogNormal(0.1, slope_sd²) (default 0.5), intercept
c_j ~ N(0, 1.5²), K_j options (4 or 10), a true answer and a key. Flaw prevalence per
domain π_d ~ Beta(1, 15) (mean 6 %, some domains far above), and a flawed item is of one
kind, drawn with the shares in ``kinds``:

* ``miskey``: the key is a wrong option; a model *knows* the item with probability
  σ(a θ + c) and then chooses the true answer, otherwise one of the other options with
  the item's Dirichlet(1) weights (so ``correct`` falls with ability);
* ``unrelated``: no option separates the models: every model chooses by the item's
  Dirichlet(1) weights over all options, whatever its ability;
* ``flip``: correctness follows σ(−a θ + c) (a sign-flipped item; choices: the key when
  correct, else a weighted other option).

A sound item is answered as ``miskey`` describes with the key the true answer, so
``correct`` follows the 2PL exactly.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

LETTERS = np.array(list("ABCDEFGHIJ"), dtype=object)


def simulate(*, n_models: int = 300, n_items: int = 1000, n_domains: int = 6,
             prevalence: tuple[float, float] = (1.0, 15.0),
             kinds: dict[str, float] | None = None, domain_corr: float = 0.8, seed: int = 0,
             choices: bool = True, slope_sd: float = 0.5) -> tuple[pd.DataFrame, pd.DataFrame]:
    """An item table and the truth per item.

    Parameters
    ----------
    n_models, n_items, n_domains : int
        Sizes (items are split evenly over the domains).
    prevalence : (float, float)
        Beta(α, β) of the per-domain flaw prevalence.
    kinds : dict
        Shares of the flaw kinds (default ``{"miskey": 0.7, "unrelated": 0.3}``).
    domain_corr : float
        Correlation of a model's abilities between domains.
    seed : int
        Random seed.
    choices : bool
        Whether to include ``choice``, ``key`` and ``n_options``.

    Returns
    -------
    table : pandas.DataFrame
        ``model, domain, item, correct`` (+ ``choice, key, n_options``).
    truth : pandas.DataFrame
        ``item, domain, slope, intercept, difficulty, flawed, kind, prevalence`` per item.
    """
    kinds = kinds or {"miskey": 0.7, "unrelated": 0.3}
    rng = np.random.default_rng(seed)
    domain = np.repeat(np.arange(n_domains), int(np.ceil(n_items / n_domains)))[:n_items]
    common = rng.normal(size=(n_models, 1))
    theta = np.sqrt(domain_corr) * common + np.sqrt(1 - domain_corr) * rng.normal(size=(n_models, n_domains))
    slope = rng.lognormal(0.1, slope_sd, n_items)
    intercept = rng.normal(0.0, 1.5, n_items)
    prev = rng.beta(*prevalence, n_domains)
    flawed = rng.random(n_items) < prev[domain]
    names = np.array(list(kinds), dtype=object)
    kind = np.where(flawed, rng.choice(names, n_items, p=np.array(list(kinds.values())) / sum(kinds.values())), "sound")
    k = rng.choice([4, 10], n_items)
    true = rng.integers(0, k)
    key = np.where(kind == "miskey", (true + rng.integers(1, k)) % k, true)
    weights = rng.gamma(1.0, 1.0, (n_items, 10)) * (np.arange(10)[None, :] < k[:, None])
    z = slope[None, :] * theta[:, domain] + intercept[None, :]
    z = np.where((kind == "flip")[None, :], -slope[None, :] * theta[:, domain] + intercept[None, :], z)
    knows = rng.random((n_models, n_items)) < 1 / (1 + np.exp(-z))
    # a guess: an option other than the true answer (other than the key for "flip"), by the weights
    avoid = np.where(kind == "flip", key, true)
    gw = weights.copy()
    gw[np.arange(n_items), avoid] = 0.0
    uw = weights  # "unrelated": every option
    guess = _draw(rng, gw, n_models)
    anything = _draw(rng, uw, n_models)
    target = np.where(kind == "flip", key, true)
    chosen = np.where(knows, target[None, :], guess)
    chosen = np.where((kind == "unrelated")[None, :], anything, chosen)
    correct = (chosen == key[None, :]).astype(float)
    m, i = np.meshgrid(np.arange(n_models), np.arange(n_items), indexing="ij")
    m, i = m.ravel(), i.ravel()
    item_ids = np.array([f"q{j:05d}" for j in range(n_items)], dtype=object)
    table = pd.DataFrame({"model": np.array([f"model-{j:03d}" for j in range(n_models)], dtype=object)[m],
                          "domain": np.array([f"domain-{d}" for d in range(n_domains)], dtype=object)[domain[i]],
                          "item": item_ids[i], "correct": correct.ravel()})
    if choices:
        table["choice"] = LETTERS[chosen.ravel()]
        table["key"] = LETTERS[key][i]
        table["n_options"] = k[i]
    truth = pd.DataFrame({"item": item_ids, "domain": [f"domain-{d}" for d in domain], "slope": slope,
                          "intercept": intercept, "difficulty": -intercept / slope, "flawed": flawed, "kind": kind,
                          "prevalence": prev[domain]})
    return table, truth


def _draw(rng: np.random.Generator, weights: np.ndarray, n_models: int) -> np.ndarray:
    """n_models draws per item from its weights (items × options) → models × items option indices."""
    cum = np.cumsum(weights / weights.sum(axis=1, keepdims=True), axis=1)
    u = rng.random((n_models, len(weights)))
    last = weights.shape[1] - 1 - np.argmax((weights > 0)[:, ::-1], axis=1)  # last option with weight (rounding)
    return np.minimum((u[:, :, None] > cum[None, :, :]).sum(axis=2), last[None, :])


def precision_at(score: pd.Series, positives: set, k: int) -> float:
    """Share of positives among the k highest scores (ties broken by item id)."""
    top = score.fillna(-np.inf).sort_values(ascending=False, kind="mergesort").index[:k]
    return float(np.mean([i in positives for i in top]))


def simulate_benchmark(*, n_models: int = 10, n_domains: int = 30, per_domain: int = 100,
                       flawed_share: float = 0.09, hot_share: float = 0.57, hard_domains: int = 3,
                       kinds: dict[str, float] | None = None, levels: tuple[float, float] = (-1.5, 2.0),
                       options: tuple[int, ...] = (4,), trap_shape: float = 0.6, slip: float = 0.05,
                       memoriser: float = 0.0, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """An annotated multiple-choice benchmark of the class of issue 31's held-out sets (MMLU-Redux-like).

    * Models of widely varying strength: θ_md = level_m + a domain part (SD √0.3), the
      levels evenly spread over ``levels`` (weak open models to frontier ones).
    * Domains of ``per_domain`` items. Most are easy for these models (difficulty offset
      N(−1, 0.7²)); ``hard_domains`` of them (``hard-NN``) are hard (offset 1.6: accuracy
      about 0.4–0.5) and nearly free of flaws (a tenth of the others' prevalence): their low
      accuracy is the models' weakness, not the items'. Domain 0 (``hot-00``) has
      ``hot_share`` of its items flawed; the others a Beta prevalence (concentration 4)
      whose mean makes the overall share ``flawed_share``.
    * Items: slope a ~ LogNormal(0, 0.4²), difficulty b = offset + N(0, 1.3²), K options
      from ``options``, attraction weights Gamma(``trap_shape``) (weak models often agree on
      one wrong option). A model knows the item with probability σ(a (θ − b)), except for a
      ``slip`` share, and then picks the true answer; otherwise it picks an option by the
      weights (right by chance about 1/K of the time).
    * Flaw kinds (shares ``kinds``, default wrong key 0.4, two answers 0.15, no answer 0.1,
      unclear 0.35: about half show in responses, as in the held-out sets): ``wrong_key`` —
      the key is a wrong option; ``two_answers`` — each knower picks the key or a second
      defensible option (split U(0.3, 0.7)); ``no_answer`` — no option is right: every model
      picks by the weights; ``unclear`` — flawed wording that models answer as a sound item
      (no response pattern shows it). ``visible`` marks the first two.
    * ``memoriser`` > 0: model-000 answers the file's key on that share of items whatever it
      knows (benchmark-specific training or contamination).

    Returns
    -------
    table, truth : pandas.DataFrame
        ``model, domain, item, correct, choice, key, n_options``; ``item, domain, flawed,
        kind, visible`` per item.
    """
    kinds = kinds or {"wrong_key": 0.4, "two_answers": 0.15, "no_answer": 0.1, "unclear": 0.35}
    rng = np.random.default_rng(seed)
    n_items = n_domains * per_domain
    domain = np.repeat(np.arange(n_domains), per_domain)
    level = np.linspace(*levels, n_models)[rng.permutation(n_models)]
    theta = level[:, None] + np.sqrt(0.3) * rng.normal(size=(n_models, n_domains))
    slope = rng.lognormal(0.0, 0.4, n_items)
    offset = rng.normal(-1.0, 0.7, n_domains)
    hard = np.zeros(n_domains, dtype=bool)
    hard[1:1 + hard_domains] = True
    offset[hard] = 1.6
    b = offset[domain] + rng.normal(0.0, 1.3, n_items)
    rest_mean = max((flawed_share * n_items - hot_share * per_domain) / (n_items - per_domain), 1e-3)
    prev = rng.beta(4 * rest_mean, 4 * (1 - rest_mean), n_domains)
    prev[hard] *= 0.1
    prev[0] = hot_share
    flawed = rng.random(n_items) < prev[domain]
    names = np.array(list(kinds), dtype=object)
    share = np.array(list(kinds.values()), dtype=float)
    kind = np.where(flawed, rng.choice(names, n_items, p=share / share.sum()), "sound")
    k = rng.choice(np.asarray(options), n_items)
    true = rng.integers(0, k)
    other = (true + rng.integers(1, k)) % k
    key = np.where(kind == "wrong_key", other, true)
    weights = (rng.gamma(trap_shape, 1.0, (n_items, 10)) + 1e-9) * (np.arange(10)[None, :] < k[:, None])
    knows = rng.random((n_models, n_items)) < 1 / (1 + np.exp(-slope[None, :] * (theta[:, domain] - b[None, :])))
    knows &= (rng.random((n_models, n_items)) >= slip) & (kind != "no_answer")[None, :]
    split = rng.uniform(0.3, 0.7, n_items)
    answer = np.where((kind == "two_answers")[None, :] & (rng.random((n_models, n_items)) < split[None, :]),
                      other[None, :], true[None, :])
    chosen = np.where(knows, answer, _draw(rng, weights, n_models))
    if memoriser:
        chosen[0] = np.where(rng.random(n_items) < memoriser, key, chosen[0])
    m, i = np.meshgrid(np.arange(n_models), np.arange(n_items), indexing="ij")
    m, i = m.ravel(), i.ravel()
    item_ids = np.array([f"q{j:05d}" for j in range(n_items)], dtype=object)
    dom_names = np.array([("hot" if d == 0 else "hard" if hard[d] else "subject") + f"-{d:02d}"
                          for d in range(n_domains)], dtype=object)
    table = pd.DataFrame({"model": np.array([f"model-{j:03d}" for j in range(n_models)], dtype=object)[m],
                          "domain": dom_names[domain[i]], "item": item_ids[i],
                          "correct": (chosen == key[None, :]).astype(float).ravel(),
                          "choice": LETTERS[chosen.ravel()], "key": LETTERS[key][i], "n_options": k[i]})
    truth = pd.DataFrame({"item": item_ids, "domain": dom_names[domain], "flawed": flawed, "kind": kind,
                          "visible": np.isin(kind, ["wrong_key", "two_answers"])})
    return table, truth
