"""Item responses with known truth: a 2PL model with planted miskeyed items (tests and benchmarks).

Each model m has an ability θ_m (plus a domain-specific shift); item i has a slope a_i,
a difficulty b_i, K_i options (4 or 10) and a true answer. A model *knows* the item with
probability σ(a_i (θ_md − b_i)) and then chooses the true answer; otherwise it picks an
option at random in proportion to the item's attractiveness weights (Gamma(shape)
draws, so small shapes make "trap" distractors that many models fall for), or gives no
answer. A planted miskeyed item is scored against a random distractor: its true answer
is the option the able models choose, and the key is wrong.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

LETTERS = np.array(list("ABCDEFGHIJ"), dtype=object)


def simulate(*, n_models: int = 30, n_items: int = 3000, n_domains: int = 6, miskeyed: float = 0.03,
             ability: tuple[float, float] = (0.0, 1.0), difficulty: tuple[float, float] = (0.0, 1.2),
             domain_sd: float = 0.3, trap_shape: float = 1.0, no_answer: float = 0.03,
             seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """An item table (``model, domain, item, correct, choice, key, n_options``) and the planted items.

    Returns
    -------
    table : pandas.DataFrame
        One row per (model, item); ``correct`` = (choice == key).
    planted : numpy.ndarray
        The item ids (str) scored against a wrong key.
    """
    rng = np.random.default_rng(seed)
    theta = rng.normal(ability[0], ability[1], n_models)
    domain = np.repeat(np.arange(n_domains), int(np.ceil(n_items / n_domains)))[:n_items]
    shift = rng.normal(0.0, domain_sd, (n_models, n_domains))
    slope = rng.lognormal(0.2, 0.3, n_items)
    location = rng.normal(difficulty[0], difficulty[1], n_items)
    k = rng.choice([4, 10], n_items)
    true = rng.integers(0, k)
    planted = rng.random(n_items) < miskeyed
    key = np.where(planted, (true + rng.integers(1, k)) % k, true)
    weights = rng.gamma(trap_shape, 1.0, (n_items, 10)) * (np.arange(10)[None, :] < k[:, None])
    cumulative = np.cumsum(weights / weights.sum(axis=1, keepdims=True), axis=1)
    ability_md = theta[:, None] + shift[:, domain]
    knows = rng.random((n_models, n_items)) < 1.0 / (1.0 + np.exp(-slope * (ability_md - location)))
    guess = (rng.random((n_models, n_items))[:, :, None] > cumulative[None, :, :]).sum(axis=2)
    chosen = np.where(knows, true[None, :], np.minimum(guess, k[None, :] - 1))
    silent = rng.random((n_models, n_items)) < no_answer
    choice = np.where(silent, None, LETTERS[chosen]).astype(object)
    m, i = np.meshgrid(np.arange(n_models), np.arange(n_items), indexing="ij")
    m, i = m.ravel(), i.ravel()
    table = pd.DataFrame({
        "model": [f"model-{j:02d}" for j in m], "domain": [f"domain-{d}" for d in domain[i]],
        "item": [f"q{j:05d}" for j in i], "choice": choice.ravel(), "key": LETTERS[key][i], "n_options": k[i],
    })
    table["correct"] = (table["choice"] == table["key"]).astype(float)
    return table, np.asarray([f"q{j:05d}" for j in np.flatnonzero(planted)], dtype=object)


def recall_and_auc(score: pd.Series, planted: np.ndarray) -> tuple[float, float]:
    """Recall of the planted items among the top len(planted) by score (ties shared), and the AUC.

    Parameters
    ----------
    score : pandas.Series
        Score per item (index: item id); higher = more suspicious; NaN counts as lowest.
    planted : numpy.ndarray
        The planted item ids.

    Returns
    -------
    (float, float)
        Recall at the planted count (items tied at the cut count fractionally) and the
        Mann–Whitney AUC (ties count ½).
    """
    from scipy.stats import rankdata

    values = score.to_numpy(dtype=float)
    values = np.where(np.isfinite(values), values, -np.inf)
    truth = score.index.isin(planted)
    n_pos = int(truth.sum())
    cut = np.sort(values)[::-1][n_pos - 1]
    above, at = values > cut, values == cut
    recall = (truth[above].sum() + truth[at].sum() * (n_pos - above.sum()) / at.sum()) / n_pos
    ranks = rankdata(values)
    auc = (ranks[truth].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * (len(values) - n_pos))
    return float(recall), float(auc)
