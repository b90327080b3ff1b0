"""Deployment profiles: exposure weights per domain, from a weights table or built in (pure, no file reading).

A *profile* says how often an organisation meets each domain. Profiles come from a weights
table (:func:`jagged.readers.weights.read_weights`) or are built in: ``uniform``
(w_d = 1/D: the macro average, wedge exactly 0) and ``items`` (w_d ∝ n_d: the item-level
micro average Σ_d n_d s_d / Σ_d n_d that lm-evaluation-harness reports for MMLU). Each
profile's weights are normalised to sum to 1; problems raise a one-line JaggedInputError
naming the offending profiles, domains or values.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.resources import data_dir
from jagged.text import listing

BUILTIN_PROFILES: tuple[str, ...] = ("uniform", "items")
MISSING_WEIGHT_POLICIES: tuple[str, ...] = ("error", "zero")

BUNDLED_PROFILES = data_dir() / "profiles_mmlu_pro.csv"


def report_weights(scores: str, weights: str) -> str | None:
    """The weights file a report uses: ``weights`` if given, the bundled illustrative profiles for bundled scores."""
    if weights:
        return weights
    return None if scores else str(BUNDLED_PROFILES)


def is_illustrative(weights: str | None, profile_names: Sequence[str]) -> bool:
    """Whether the profiles shown are the bundled illustrative ones (the report labels them so)."""
    return weights == str(BUNDLED_PROFILES) and bool(set(profile_names) - set(BUILTIN_PROFILES))


def profile_descriptions(weights: pd.DataFrame) -> pd.Series:
    """Each profile's first non-empty ``description`` in a weights table ("" when none), in file order."""
    order = pd.unique(weights["profile"])
    desc = weights[weights["description"] != ""].groupby("profile", sort=False)["description"].first()
    return desc.reindex(order).fillna("").rename("description").rename_axis("profile")


def items_weights(scores: pd.DataFrame, domains: Sequence[str]) -> np.ndarray:
    """Per-domain item counts n_d for the ``items`` profile (not normalised): the largest ``n_items`` any model gives.

    Notes
    -----
    A profile is one weight vector for every model. With partial coverage (models reporting
    different ``n_items``) the largest count is the domain's size; a fully covering model's
    ``items`` dep_score is then its item-level mean, a partial one's the composition-adjusted
    micro average (its accuracies weighted by the benchmark's domain sizes). JaggedInputError
    when a domain has no ``n_items``.
    """
    n = scores.groupby("domain", sort=False)["n_items"].max().reindex(list(domains))
    lacking = n.index[n.isna().to_numpy()].tolist()
    if lacking:
        raise JaggedInputError(
            f"profile 'items' needs n_items for every domain; the scores have none for: "
            f"{listing(lacking, 30)}")
    return n.to_numpy(dtype=float)


def items_coverage(scores: pd.DataFrame) -> pd.Series:
    """Per model, Σ_d n_d(m) / Σ_d n_d with n_d from :func:`items_weights` (NaN where ``n_items`` is missing)."""
    own = scores["n_items"].groupby(scores["model"]).sum(min_count=1)
    full = scores.groupby("domain")["n_items"].max().sum()
    return (own / full).rename("coverage")


def normalise_weights(raw: np.ndarray, names: Sequence[str], source: str = "") -> np.ndarray:
    """Scale each row of profiles × domains ``raw`` weights to sum to 1, without overflow or underflow.

    Each row is divided by its largest weight (values in [0, 1], no overflow even for 1e308s),
    then by its sum; weights below ~1e-308 of the largest become 0. Raises JaggedInputError
    naming the profile (``names``; ``source`` prefixes the message) for a weight that is not
    finite, a negative weight, or all weights zero.
    """
    w = np.asarray(raw, dtype=float)
    prefix = f"{source}: " if source else ""
    for problem, bad in (("a weight that is not a finite number", ~np.isfinite(w).all(axis=1)),
                         ("a negative weight", (w < 0).any(axis=1))):
        if bad.any():
            raise JaggedInputError(f"{prefix}profile(s) with {problem}: "
                                   f"{listing([str(n) for n, b in zip(names, bad) if b], 30)}")
    top = w.max(axis=1, initial=0.0)
    zero = ~(top > 0)
    if zero.any():
        bad = [str(n) for n, z in zip(names, zero) if z]
        raise JaggedInputError(f"{prefix}profile(s) with all weights zero: {listing(bad, 30)}; "
                               f"give at least one domain a positive weight")
    scaled = w / top[:, None]
    return scaled / scaled.sum(axis=1, keepdims=True)


def check_missing_weight(missing_weight: str) -> None:
    """Refuse a ``missing_weight`` policy that is not one of :data:`MISSING_WEIGHT_POLICIES`."""
    if missing_weight not in MISSING_WEIGHT_POLICIES:
        raise JaggedInputError(
            f"missing weight policy must be one of {', '.join(MISSING_WEIGHT_POLICIES)}, not {missing_weight!r}")


def _file_profiles(table: pd.DataFrame, domains: list[str], profiles: Sequence[str], missing_weight: str,
                   source: str) -> tuple[list[str], dict[str, np.ndarray]]:
    """The profile names of a weights table and the normalised rows of those wanted."""
    prefix = f"{source}: " if source else ""
    lacking_columns = [c for c in ("profile", "domain", "weight") if c not in table.columns]
    if lacking_columns:
        raise JaggedInputError(f"{prefix}the weights table has no column(s) {', '.join(lacking_columns)}")
    reserved = sorted(set(table["profile"]) & set(BUILTIN_PROFILES))
    if reserved:
        raise JaggedInputError(
            f"{prefix}profile name(s) {', '.join(reserved)} are reserved for the built-in profiles; "
            f"rename them")
    known = set(domains)
    unknown = [d for d in pd.unique(table["domain"]) if d not in known]
    if unknown:
        folded = {d.casefold(): d for d in domains}
        hints = [f"{u} (did you mean {folded[u.casefold()]!r}?)" if str(u).casefold() in folded else str(u)
                 for u in unknown]
        raise JaggedInputError(
            f"{prefix}weights for domain(s) absent from the scores: {listing(hints, 30)} "
            f"(score domains: {listing(domains, 20)})")
    file_names = pd.unique(table["profile"]).tolist()
    wide = table.pivot(index="profile", columns="domain", values="weight").reindex(
        index=file_names, columns=domains)
    wanted = [p for p in file_names if not profiles or p in profiles]
    if missing_weight == "error":
        for name in wanted:
            lacking = [d for d, v in zip(domains, wide.loc[name].to_numpy()) if math.isnan(v)]
            if lacking:
                raise JaggedInputError(
                    f"{prefix}profile {name!r} has no weight for score domain(s) {listing(lacking, 30)}; "
                    f"add them or use --missing-weight zero to give them no exposure")
    raw = wide.loc[wanted].fillna(0.0).to_numpy(dtype=float)
    return file_names, dict(zip(wanted, normalise_weights(raw, wanted, source)))


def resolve_profiles(scores: pd.DataFrame, table: pd.DataFrame | None = None,
                     profiles: Sequence[str] = (), missing_weight: str = "error", *,
                     source: str = "") -> pd.DataFrame:
    """The normalised profiles × domains weight matrix for a score table.

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical per-domain table (``model``, ``domain``, ``score``, ``n_items``).
    table : pandas.DataFrame, optional
        Raw weights in long form (``profile``, ``domain``, ``weight``, any positive scale);
        :func:`jagged.analysis.resolve_profiles` starts from a file.
    profiles : sequence of str
        Profiles to return, in order (table names or the built-ins); empty: every table profile.
    missing_weight : {"error", "zero"}
        A score domain absent from a table profile is an error, or weight 0.
    source : str
        Prefixed to error messages.

    Returns
    -------
    pandas.DataFrame
        float64, index ``profile``, columns ``domain`` (sorted); rows ≥ 0 summing to 1, so
        S @ W.T gives every deployment-weighted score. Nothing asked: zero rows.

    Raises
    ------
    JaggedInputError
        A table profile named like a built-in; weights for domains absent from the scores;
        score domains missing from a profile (unless ``missing_weight="zero"``); weights all
        zero, negative or not finite; an unknown profile; ``items`` without ``n_items``.
    """
    check_missing_weight(missing_weight)
    domains = sorted(pd.unique(scores["domain"]).tolist())
    profiles = [str(p).strip() for p in profiles]
    rows: dict[str, np.ndarray] = {}
    file_names: list[str] = []
    if table is not None:
        file_names, rows = _file_profiles(table, domains, profiles, missing_weight, source)
    unknown_names = [p for p in profiles if p not in rows and p not in BUILTIN_PROFILES]
    if unknown_names:
        available = file_names + list(BUILTIN_PROFILES)
        raise JaggedInputError(
            f"unknown profile(s) {', '.join(unknown_names)} (available: {', '.join(available)})")
    order = profiles if profiles else file_names
    out = []
    for name in dict.fromkeys(order):
        if name in rows:
            out.append(rows[name])
        elif name == "uniform":
            out.append(np.full(len(domains), 1.0 / len(domains)))
        else:  # items
            out.append(normalise_weights(items_weights(scores, domains)[None, :], ["items"])[0])
    matrix = np.vstack(out) if out else np.zeros((0, len(domains)))
    return pd.DataFrame(matrix, index=pd.Index(list(dict.fromkeys(order)), name="profile", dtype=object),
                        columns=pd.Index(domains, name="domain", dtype=object))


BUILTIN_DESCRIPTIONS: dict[str, str] = {
    "uniform": "every domain weighted equally: the macro average (wedge 0 by construction)",
    "items": "weights proportional to each domain's item count: the item-level (micro) average",
}


def describe_profiles(weights: pd.DataFrame, table: pd.DataFrame | None = None, *, top: int = 3) -> pd.DataFrame:
    """Per profile: ``description``, the ``top`` heaviest domains (``"law 40% (reason); ..."``) and ``sigma_w``.

    ``table``, the weights table behind ``weights``, gives the descriptions and comments.
    """
    comments: dict[tuple[str, str], str] = {}
    descriptions: dict[str, str] = dict(BUILTIN_DESCRIPTIONS)
    if table is not None and "comment" in table.columns:
        comments = {(p, d): c for p, d, c in zip(table["profile"], table["domain"], table["comment"]) if c}
    if table is not None and "description" in table.columns:
        descriptions.update({k: v for k, v in profile_descriptions(table).items() if v})
    rows = []
    for profile, row in weights.iterrows():
        heavy = row.sort_values(ascending=False, kind="mergesort").head(top)
        parts = []
        for domain, w in heavy.items():
            note = comments.get((profile, domain), "")
            parts.append(f"{domain} {w:.0%}" + (f" ({note})" if note else ""))
        rows.append({"profile": profile, "description": descriptions.get(profile, ""),
                     "heaviest": "; ".join(parts), "sigma_w": float(np.std(row.to_numpy(dtype=float)))})
    return pd.DataFrame(rows, columns=["profile", "description", "heaviest", "sigma_w"])
