"""A synthetic score table of many models × many domains, with item counts and weights profiles.

Used by ``bench_report_scale.py`` and by the scale test of ``tests/test_browser.py``: both
need the same 300 × 60 table. Scores are binomial draws around a model level minus a domain
difficulty, with a per-model unevenness, so the models differ in jaggedness as real ones do.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

VENDORS = ("acme", "zenith", "orca", "lumen", "nova", "kite", "delta", "quill")
KINDS = ("base", "chat", "instruct", "pro", "mini")
FIELDS = ("physics", "law", "biology", "economics", "chemistry", "ethics", "statistics", "linguistics",
          "geology", "music", "medicine", "accounting")
ANGLES = ("applied", "theoretical", "clinical", "computational", "historical")


def model_names(n: int) -> list[str]:
    """``n`` distinct plausible model names (``acme-chat-20b-v0.1`` ...)."""
    return [f"{VENDORS[i % 8]}-{KINDS[i % 5]}-{7 + (i * 13) % 400}b-v{i // 40}.{i % 7}" for i in range(n)]


def domain_names(n: int) -> list[str]:
    """``n`` distinct plausible domain names (``clinical_law`` ...), numbered beyond 60."""
    names = [f"{ANGLES[j % 5]}_{FIELDS[j % 12]}" for j in range(n)]
    return [name if j < 60 else f"{name}_{j // 60}" for j, name in enumerate(names)]


def scores(n_models: int = 300, n_domains: int = 60, *, seed: int = 7) -> pd.DataFrame:
    """The long table ``model, domain, score, n_items`` (fractions, 100–1000 items per domain)."""
    rng = np.random.default_rng(seed)
    models, domains = model_names(n_models), domain_names(n_domains)
    level = rng.normal(0.6, 0.12, n_models)
    difficulty = rng.normal(0.0, 0.1, n_domains)
    unevenness = rng.uniform(0.02, 0.15, n_models)
    p = np.clip(level[:, None] - difficulty[None, :] + rng.normal(0, 1, (n_models, n_domains))
                * unevenness[:, None], 0.01, 0.99)
    items = rng.integers(100, 1000, (n_models, n_domains))
    correct = rng.binomial(items, p)
    return pd.DataFrame({"model": np.repeat(models, n_domains), "domain": np.tile(domains, n_models),
                         "score": (correct / items).ravel().round(4), "n_items": items.ravel()})


def weights(domains: list[str], profiles: tuple[str, ...] = ("clinic", "law_firm", "lab"), *,
            seed: int = 3) -> pd.DataFrame:
    """Uneven (Dirichlet) exposure profiles over ``domains``: ``profile, domain, weight`` in percent."""
    rng = np.random.default_rng(seed)
    rows = []
    for profile in profiles:
        share = rng.dirichlet(np.full(len(domains), 0.5))
        rows.extend((profile, d, round(float(w) * 100, 4)) for d, w in zip(domains, share))
    return pd.DataFrame(rows, columns=["profile", "domain", "weight"])


def write(folder: Path, n_models: int = 300, n_domains: int = 60) -> tuple[Path, Path]:
    """Write ``scores.csv`` and ``weights.csv`` into ``folder``; return both paths."""
    folder.mkdir(parents=True, exist_ok=True)
    table = scores(n_models, n_domains)
    score_path, weight_path = folder / "scores.csv", folder / "weights.csv"
    table.to_csv(score_path, index=False)
    weights(sorted(table["domain"].unique())).to_csv(weight_path, index=False)
    return score_path, weight_path
