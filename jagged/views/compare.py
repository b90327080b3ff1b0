"""Tables and sentences of the compare report: what changed between two runs or releases.

They arrange a :class:`jagged.stats.compare.Comparison` for a reader and compute nothing.
"Beyond noise" always means the statistic's interval, as the comparison gives it, excludes
0 (paired on the common items with item-level data).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from jagged.analysis import SECTIONS_MIME
from jagged.text import listing, plural
from jagged.views.display import RECORD_MIME, json_records
from jagged.views.glance import Finding
from jagged.views.glance import glance_table as finding_table

#: Kinds of item change, in the ledger's order (:data:`jagged.stats.ledger.CHANGES`).
ITEM_CHANGES: tuple[str, ...] = ("added", "removed", "key_changed", "text_changed", "difficulty_moved")
#: Columns of the ledger shown in the report (those present), then ``text_a``/``text_b``/``options_*``.
LEDGER_COLUMNS: tuple[str, ...] = ("item", "domain", "change", "changes", "key_a", "key_b", "n_paired", "share_a",
                                   "share_b", "share_delta", "q_value")
TEXT_COLUMNS: tuple[str, ...] = ("text_a", "text_b", "options_a", "options_b")
#: Longest item text shown in a table cell (the ledger CSV keeps the whole text).
TEXT_MAX = 160
#: The columns of a model's change relative to the field (:func:`jagged.stats.shifts.field_change`).
FIELD_COLUMNS: tuple[str, ...] = ("macro_delta_vs_field", "macro_delta_vs_field_lo", "macro_delta_vs_field_hi",
                                  "vs_field_beyond_noise")
_F4, _D4, _F3, _D3, _RANK = "{:.4f}", "{:+.4f}", "{:.3f}", "{:+.3f}", "{:.0f}"
#: Display formats of the compare tables' columns (``jagged.views.display.format_table`` specs).
SCORE_FORMATS: dict[str, str] = {
    **{f"macro_score_{k}": _F4 for k in ("a", "b", "all_a", "all_b", "before", "after")},
    **{f"{s}_{k}": _D4 for s in ("macro_score", "dep_score", "wedge") for k in ("delta", "delta_lo", "delta_hi")},
    **{f"{s}_{k}": _F4 for s in ("dep_score", "wedge") for k in ("a", "b")},
    **{f"cv_error_{k}": _F3 for k in ("a", "b", "all_a", "all_b", "before", "after")},
    **{f"cv_error_{k}": _D3 for k in ("delta", "delta_lo", "delta_hi")},
    **{f"rank_{k}": _RANK for k in ("a", "b", "a_lo", "a_hi", "b_lo", "b_hi", "all_a", "all_b")},
    **{f"rank_change{k}": "{:+.0f}" for k in ("", "_lo", "_hi")},
    "share_a": _F3, "share_b": _F3, "share_delta": _D3, "q_value": "{:.2g}", "p_value": "{:.2g}",
    "noise_floor": _F4, "min_detectable_difference": _F4, "macro_delta_rms": _F4, "macro_delta_sd": _F4,
    "flip_share": _F3, "n_items": "{:,.0f}", "kendall_tau": _F3, "kendall_tau_lo": _F3, "kendall_tau_hi": _F3,
    "kendall_tau_all": _F3, "score_a": _F4, "score_b": _F4, "share": "{:.1%}",
    **{f"{s}{k}": _D4 for s in ("shift", "macro_delta_vs_field") for k in ("", "_lo", "_hi")},
}


# --------------------------------------------------------------------------- the comparison for a notebook

def compare_sections(comparison: Any) -> dict[str, bool]:
    """Which optional sections of the compare report apply (its cells tagged ``section-NAME``), in report order.

    ``field``: a shared cell changed and at least 2 models are in the two-way view; ``items``:
    item-level results on both sides (the ledger); ``changes``: a model or domain on one side
    only; ``rescoring``: A's choices re-scored with B's changed keys; ``profiles``: deployment
    profiles given; ``repeats``: the run-to-run noise floor computed.
    """
    shares = comparison.shares or {}
    return {"field": bool(np.isfinite(shares.get("benchmark", np.nan))) and not unchanged(comparison),
            "items": comparison.ledger is not None, "changes": bool(len(comparison.changes)),
            "rescoring": comparison.rescoring is not None,
            "profiles": "dep_score_delta" in comparison.models.columns,
            "repeats": comparison.floor is not None}


@dataclass
class CompareView:
    """A comparison as the compare report shows it: the sides' names, the interval level ``ci``, the ledger's
    false discovery rate ``alpha`` and the ``display`` options (``max_models``, ``theme``).
    """

    comparison: Any
    name_a: str = "A"
    name_b: str = "B"
    ci: float = 0.95
    alpha: float = 0.05
    display: dict[str, Any] = field(default_factory=dict)

    @property
    def sections(self) -> dict[str, bool]:
        """:func:`compare_sections` of the comparison."""
        return compare_sections(self.comparison)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """A one-line summary, and :attr:`sections` as JSON for the renderer (see :mod:`jagged.report.sections`)."""
        applies = self.sections
        shown = ", ".join(name for name, on in applies.items() if on) or "none"
        text = (f"Comparison of {self.name_a} (A) with {self.name_b} (B) on the shared "
                f"{self.comparison.scope}; optional sections that apply: {shown}")
        return {"text/plain": text, SECTIONS_MIME: applies}


# --------------------------------------------------------------------------- tables

def _one_per_model(models: pd.DataFrame) -> pd.DataFrame:
    """The per-model rows of ``Comparison.models`` (the profile-independent columns are repeated per profile)."""
    return models.drop_duplicates("model").reset_index(drop=True)


def beyond_noise(models: pd.DataFrame, stat: str = "macro_score") -> np.ndarray:
    """Whether each row's ``<stat>_delta`` interval excludes 0 (False without an interval)."""
    lo = models[f"{stat}_delta_lo"].to_numpy(dtype=float)
    hi = models[f"{stat}_delta_hi"].to_numpy(dtype=float)
    return (np.nan_to_num(lo, nan=-np.inf) > 0) | (np.nan_to_num(hi, nan=np.inf) < 0)


def model_moves(comparison: Any, by: str = "macro_score_delta") -> pd.DataFrame:
    """One row per model on both sides, largest change ``by`` (``macro_score_delta``, ``macro_delta_vs_field``) first.

    ``model``, ``n_items`` (item-level scope) or ``n_domains``, ``macro_score_a`` / ``_b`` /
    ``_delta`` with ``_lo`` / ``_hi`` and ``beyond_noise``, the change relative to the field
    (:data:`FIELD_COLUMNS`), ``cv_error_delta`` with its interval, ``rank_a``, ``rank_b``,
    ``rank_moved``, ``beyond_run_noise`` (with repeated runs) and ``note``.
    """
    models = _one_per_model(comparison.models)
    ranks = comparison.ranks[["model", "rank_a", "rank_b", "moved"]].rename(columns={"moved": "rank_moved"})
    size = "n_items" if comparison.scope == "items" else "n_domains"
    out = models[["model", size, "macro_score_a", "macro_score_b", "macro_score_delta", "macro_score_delta_lo",
                  "macro_score_delta_hi"]].copy()
    out["beyond_noise"] = beyond_noise(models)
    extra = [c for c in FIELD_COLUMNS if c in models.columns] + ["cv_error_delta", "cv_error_delta_lo",
                                                                  "cv_error_delta_hi"]
    out[extra] = models[extra]
    out = out.merge(ranks, on="model", how="left")
    if "beyond_run_noise" in models.columns:
        out["beyond_run_noise"] = models["beyond_run_noise"].to_numpy()
    out["note"] = models["note"].to_numpy()
    order = out[by].abs().sort_values(ascending=False, na_position="last", kind="mergesort").index
    return out.loc[order].reset_index(drop=True)


def domain_shifts(comparison: Any) -> pd.DataFrame:
    """The field's shift per shared domain (``Comparison.domains``): beyond noise first, each group by |shift|."""
    domains = comparison.domains
    key = pd.DataFrame({"beyond": ~domains["beyond_noise"], "size": -domains["shift"].abs()})
    order = key.sort_values(["beyond", "size"], na_position="last", kind="mergesort").index
    return domains.loc[order].drop(columns="interval_method").reset_index(drop=True)


def shares_table(comparison: Any) -> pd.DataFrame:
    """The parts of the squared change (:func:`jagged.stats.shifts.change_shares`): ``part``, ``whose``, ``share``;
    the last row is what sampling noise alone is expected to put in the models' part.
    """
    shares = comparison.shares or {}
    rows = [("overall shift (every model, every domain)", "benchmark", "overall"),
            ("domain shifts (every model, one domain)", "benchmark", "domains"),
            ("model effects (a model's change relative to the field)", "models", "model_effects"),
            ("residual (one model in one domain)", "models", "residual"),
            ("  expected from sampling noise alone", "models", "noise")]
    return pd.DataFrame([(part, whose, shares.get(key, np.nan)) for part, whose, key in rows],
                        columns=["part", "whose", "share"]).astype({"part": object, "whose": object})


def profile_moves(comparison: Any) -> pd.DataFrame | None:
    """Per profile × model: the like-for-like change of dep_score and wedge (None without profiles)."""
    models = comparison.models
    if "dep_score_delta" not in models.columns:
        return None
    columns = ["profile", "model", "dep_score_a", "dep_score_b", "dep_score_delta", "dep_score_delta_lo",
               "dep_score_delta_hi", "wedge_a", "wedge_b", "wedge_delta", "wedge_delta_lo", "wedge_delta_hi"]
    out = models[columns].copy()
    out["dep_beyond_noise"] = beyond_noise(models, "dep_score")
    out["wedge_beyond_noise"] = beyond_noise(models, "wedge")
    return out.reset_index(drop=True)


def _ledger_has(ledger: pd.DataFrame | None, kind: str) -> np.ndarray:
    if ledger is None or not len(ledger):
        return np.zeros(0, dtype=bool)
    pattern = rf"(?:^|; ){re.escape(kind)}(?:;|$)"
    return ledger["changes"].astype(str).str.contains(pattern, regex=True).to_numpy(dtype=bool)


def change_counts(comparison: Any) -> pd.DataFrame:
    """How many items show each kind of change, in :data:`ITEM_CHANGES` order (an item can show several)."""
    ledger = comparison.ledger
    if ledger is None:
        return pd.DataFrame({"change": pd.Series(dtype=object), "n_items": pd.Series(dtype=np.int64)})
    counts = [int(_ledger_has(ledger, kind).sum()) for kind in ITEM_CHANGES]
    return pd.DataFrame({"change": list(ITEM_CHANGES), "n_items": counts})


def domain_changes(comparison: Any) -> pd.DataFrame:
    """Per changed domain: ``status`` (``"both"``, ``"added"``, ``"removed"``), a count per kind of :data:`ITEM_CHANGES`
    (item-level comparisons) and ``n_changed``, most changed first.
    """
    changes = comparison.changes
    status = changes[changes["kind"] == "domain"].set_index("name")["change"].astype(object)
    ledger = comparison.ledger
    if ledger is None or not len(ledger):
        out = pd.DataFrame({"domain": status.index.astype(object), "status": status.to_numpy(dtype=object)})
        return out.assign(n_changed=0).reset_index(drop=True)
    flags = pd.DataFrame({kind: _ledger_has(ledger, kind) for kind in ITEM_CHANGES})
    flags["domain"] = ledger["domain"].astype(str).to_numpy()
    counts = flags.groupby("domain", sort=True)[list(ITEM_CHANGES)].sum().astype(np.int64)
    counts["n_changed"] = flags.groupby("domain", sort=True).size().astype(np.int64)
    counts = counts.reindex(counts.index.union(status.index), fill_value=0)
    out = counts.rename_axis("domain").reset_index()
    out.insert(1, "status", status.reindex(out["domain"]).fillna("both").to_numpy(dtype=object))
    return out.sort_values(["n_changed", "domain"], ascending=[False, True], kind="mergesort").reset_index(drop=True)


def _clip(value: Any, limit: int = TEXT_MAX) -> Any:
    if not isinstance(value, str) or len(value) <= limit:
        return value
    return value[: limit - 1].rstrip() + "…"


def ledger_top(ledger: pd.DataFrame | None, top: int | None = 20) -> pd.DataFrame | None:
    """The ledger's first ``top`` entries (None: all): items on both sides by q-value, then by |share_delta|; then
    those added or removed.

    The :data:`LEDGER_COLUMNS` and, when present, the item's text and options on each side,
    cut to :data:`TEXT_MAX` characters.
    """
    if ledger is None:
        return None
    both = ledger["in_a"].astype(bool) & ledger["in_b"].astype(bool)
    key = pd.DataFrame({"one_side": (~both).astype(int), "q": ledger["q_value"].astype(float),
                        "size": -ledger["share_delta"].astype(float).abs(), "pos": np.arange(len(ledger))})
    key.loc[~both.to_numpy(), ["q", "size"]] = np.nan
    order = key.sort_values(["one_side", "q", "size", "pos"], na_position="last", kind="mergesort").index
    columns = [c for c in LEDGER_COLUMNS if c in ledger.columns] + [c for c in TEXT_COLUMNS if c in ledger.columns]
    out = ledger.loc[order, columns].reset_index(drop=True)
    for column in TEXT_COLUMNS:
        if column in out.columns:
            out[column] = out[column].map(_clip)
    return out if top is None else out.head(top)


def glance_table(comparison: Any) -> pd.DataFrame:
    """The comparison in numbers: ``measure`` and ``value`` (text), one row per measure."""
    models = _one_per_model(comparison.models)
    summary = comparison.rank_summary.iloc[0]
    beyond = f"{int(beyond_noise(models).sum()):,}" if _has_intervals(models) else "no intervals"
    domains = comparison.domains
    field = models.get("macro_delta_vs_field_lo", pd.Series(dtype=float))
    rows = [("compared on", "common items" if comparison.scope == "items" else "common domains"),
            ("models on both sides", f"{len(models):,}"),
            ("benchmark's share of the squared change (overall + domain shifts)", _share(comparison, "benchmark")),
            ("models' share (model effects + residual)", _share(comparison, "models")),
            ("  of which sampling noise alone (expected)", _share(comparison, "noise")),
            ("domains shifted beyond noise for every model",
             f"{int(domains['beyond_noise'].sum()):,} of {int(domains['shift'].notna().sum()):,}"
             if domains is not None and domains["shift_lo"].notna().any() else "no intervals"),
            ("macro-score changes beyond noise", beyond),
            ("changes beyond noise relative to the field", f"{int(models['vs_field_beyond_noise'].sum()):,}"
             if field.notna().any() else "no intervals"),
            ("Kendall's tau of the macro rankings", _tau_text(summary)),
            ("models whose rank changed", f"{int(summary['n_rank_changes']):,}"),
            ("rank changes beyond noise", f"{int(summary['n_moved']):,}")]
    changes = comparison.changes
    for kind in ("model", "domain"):
        for change in ("added", "removed"):
            n = int(((changes["kind"] == kind) & (changes["change"] == change)).sum())
            rows.append((f"{kind}s {change}", f"{n:,}"))
    for row in change_counts(comparison).itertuples(index=False):
        rows.append((f"items {row.change.replace('_', ' ')}", f"{row.n_items:,}"))
    if comparison.floor is not None:
        rows.append(("run-to-run min. detectable difference",
                     f"{float(comparison.floor['min_detectable_difference'].iloc[0]):.4f}"))
    return pd.DataFrame(rows, columns=["measure", "value"]).astype(object)


def _share(comparison: Any, name: str) -> str:
    value = (comparison.shares or {}).get(name)
    if unchanged(comparison):
        return "no shared cell changed"
    return f"{value:.1%}" if value is not None and np.isfinite(value) else "not defined"


def _has_intervals(models: pd.DataFrame) -> bool:
    return bool(models["macro_score_delta_lo"].notna().any())


def _tau_text(summary: pd.Series) -> str:
    tau = float(summary["kendall_tau"])
    if not np.isfinite(tau):
        return "undefined (fewer than 2 models, or all tied)"
    lo, hi = float(summary["kendall_tau_lo"]), float(summary["kendall_tau_hi"])
    return f"{tau:.3f}" + (f" [{lo:.3f}, {hi:.3f}]" if np.isfinite(lo) and np.isfinite(hi) and lo < hi else "")


# --------------------------------------------------------------------------- sentences

def _delta(value: float, lo: float = np.nan, hi: float = np.nan, digits: int = 4) -> str:
    def signed(x: float) -> str:  # a change that rounds to 0 is written +0.0000, never -0.0000
        return f"{x if round(x, digits) else 0.0:+.{digits}f}"

    text = signed(value)
    if np.isfinite(lo) and np.isfinite(hi):
        text += f" [{signed(lo)}, {signed(hi)}]"
    return text


def unchanged(comparison: Any) -> bool:
    """Whether no shared cell changed (every model's score on every shared domain or item set is the same)."""
    return bool(comparison.shares) and comparison.shares["sum_of_squares"] == 0


def _what_changed(comparison: Any, name_a: str, name_b: str) -> str:
    changes = comparison.changes
    parts = []
    for kind in ("model", "domain"):
        for change, side in (("added", name_b), ("removed", name_a)):
            names = changes.loc[(changes["kind"] == kind) & (changes["change"] == change), "name"]
            if len(names):
                parts.append(f"{plural(len(names), kind)} {change} ({listing(names, 5)}: only in {side})")
    if comparison.ledger is not None:
        counts = change_counts(comparison)
        said = [f"{n:,} {kind.replace('_', ' ')}" for kind, n in zip(counts["change"], counts["n_items"]) if n]
        if said:
            parts.append("items: " + ", ".join(said))
    if not parts:
        return "Nothing was added or removed: the same models and domains are on both sides" + (
            ", and no item's key, text or difficulty changed." if comparison.ledger is not None else ".")
    return "What changed: " + "; ".join(parts) + "."


def _shares_finding(c: Any) -> Finding | None:
    shares = c.shares
    if not shares:
        return None
    if unchanged(c):
        where = "the items each model answered on both sides" if c.scope == "items" else "every domain both score"
        return Finding("shares", "Nothing changed", f"No shared cell changed: every model scores the same in A and B "
                       f"on {where}.", statistic="sum_of_squares", value=0.0)
    if not np.isfinite(shares["benchmark"]):
        return Finding("shares", "Benchmark or models", "The benchmark's part of the change cannot be told from the "
                       "models': that needs at least 2 models sharing domains on both sides.")
    text = (f"{shares['benchmark']:.0%} of the squared change on the {shares['n_cells']:,} shared cells is the "
            f"benchmark's, shared by every model (an overall shift of {_delta(shares['overall_shift'])} and each "
            f"domain's own shift); {shares['models']:.0%} is the models' (each model's change relative to the field, "
            "and what is left)")
    noise = shares["noise"]
    if noise > 1:
        text += (f"; sampling noise alone is expected to give {noise:.1f} times as much as all that" + (
            ": A and B share most of their results, and the intervals, which treat the sides as independent, are "
            "conservative" if c.scope == "domains" else ""))
    elif np.isfinite(noise):
        text += f"; sampling noise alone would put about {noise:.0%} in the models' part" + (
            ", as much as it holds" if noise >= shares["models"] else "")
    if not shares["complete"]:
        text += " (not every model has every domain: the shares are of the parts' sum, not of the total)"
    return Finding("shares", "Benchmark or models", text + ".", statistic="benchmark_share",
                   value=shares["benchmark"], count=shares["n_cells"])


def _moved_finding(rows: pd.DataFrame, name: str, value: str, beyond: str, *, section: str, label: str, text: str
                   ) -> Finding:
    """A finding about the first of ``rows`` (its ``value`` and interval), counting the rows ``beyond`` noise."""
    first = rows.iloc[0]
    return Finding(section, label, text, subject=str(first[name]), statistic=value, value=float(first[value]),
                   lo=float(first[f"{value}_lo"]), hi=float(first[f"{value}_hi"]), count=float(rows[beyond].sum()),
                   total=float(len(rows)))


def _said(rows: pd.DataFrame, name: str, value: str) -> list[str]:
    return [f"{r[name]} {_delta(r[value], r[f'{value}_lo'], r[f'{value}_hi'])}" for r in rows.to_dict("records")]


def _domains_finding(c: Any, ci: float, top: int = 5) -> Finding | None:
    fit = domain_shifts(c) if c.domains is not None and not unchanged(c) else None
    fit = None if fit is None else fit[fit["shift"].notna()]
    if fit is None or not len(fit):
        return None
    said, n = _said(fit, "domain", "shift"), int(fit["beyond_noise"].sum())
    if not fit["shift_lo"].notna().any():
        text = ("The largest shifts for the field (the mean change over the models; no intervals were computed for "
                f"them): {listing(said, top)}.")
    elif n:
        text = (f"{n:,} of {plural(len(fit), 'domain')} moved for every model beyond noise (the field's mean change "
                f"with its {ci:.0%} interval): {listing(said[:n], top)}.")
    else:
        text = f"No domain moved for every model beyond noise; the largest shift for the field is {said[0]}."
    return _moved_finding(fit, "domain", "shift", "beyond_noise", section="domains", label="Moved for everyone",
                          text=text)


def _field_finding(c: Any, ci: float, top: int = 5) -> Finding | None:
    if not c.shares or unchanged(c) or "macro_delta_vs_field" not in c.models.columns:
        return None
    moves = model_moves(c, by="macro_delta_vs_field")
    fit = moves[moves["macro_delta_vs_field"].notna()]
    if len(fit) < 2:
        return None
    lead = ("Relative to the field (each model's change minus the field's mean change, "
            f"{_delta(c.shares['overall_shift'])})")
    said, beyond = _said(fit, "model", "macro_delta_vs_field"), fit["vs_field_beyond_noise"].to_numpy()
    if not fit["macro_delta_vs_field_lo"].notna().any():
        text = f"{lead}, the largest changes are {listing(said, top)} (no intervals were computed for them)."
    elif beyond.any():
        text = (f"{lead}, {int(beyond.sum()):,} of {len(fit):,} models changed beyond noise: "
                f"{listing([s for s, b in zip(said, beyond) if b], top)}; about {(1 - ci) * len(fit):.1f} would by "
                f"chance at the {ci:.0%} level.")
    else:
        text = f"{lead}, no model's change is beyond noise: the models moved together."
    return _moved_finding(fit, "model", "macro_delta_vs_field", "vs_field_beyond_noise", section="models",
                          label="Beyond the field", text=text)


def _noise_finding(comparison: Any, ci: float) -> Finding | None:
    models = _one_per_model(comparison.models)
    compared = models[models["n_domains"] > 0]
    if not len(compared):
        return Finding("changes", "Nothing in common", "No model has items or domains in common on both sides: "
                       "nothing is compared like for like.")
    if unchanged(comparison):
        return None
    low, high = compared["macro_score_delta"].min(), compared["macro_score_delta"].max()
    if not _has_intervals(compared):
        return Finding("changes", "Macro-score changes", f"The like-for-like macro-score changes range from "
                       f"{low:+.4f} to {high:+.4f}; no intervals were computed for them, so whether they exceed the "
                       "noise is not known (use a bootstrap and item counts or item-level results).",
                       statistic="macro_score_delta", total=float(len(compared)))
    beyond = beyond_noise(compared)
    paired = "paired " if comparison.scope == "items" else ""
    level = f"{ci:.0%}"
    field = ""
    if "vs_field_beyond_noise" in compared.columns and compared["macro_delta_vs_field_lo"].notna().any():
        field = f"; relative to the field, {int(compared['vs_field_beyond_noise'].sum()):,}"
    if not beyond.any():
        text = (f"No model's macro score changed beyond noise: every {paired}{level} interval of the like-for-like "
                f"change includes 0 ({plural(len(compared), 'model')}).")
    else:
        moved = compared[beyond]
        up, down = int((moved["macro_score_delta"] > 0).sum()), int((moved["macro_score_delta"] < 0).sum())
        text = (f"The macro score changed beyond noise for {len(moved):,} of {len(compared):,} models ({up:,} up, "
                f"{down:,} down: their {paired}{level} interval of B − A excludes 0{field}); the changes range from "
                f"{low:+.4f} to {high:+.4f}.")
    return Finding("changes", "Macro-score changes", text, statistic="macro_score_delta", count=float(beyond.sum()),
                   total=float(len(compared)))


def _largest_sentence(comparison: Any, top: int = 3) -> str | None:
    moves = model_moves(comparison)
    moves = moves[moves["macro_score_delta"].notna()].head(top)
    if not len(moves) or unchanged(comparison):
        return None
    said = [f"{row.model} {_delta(row.macro_score_delta, row.macro_score_delta_lo, row.macro_score_delta_hi)}"
            for row in moves.itertuples(index=False)]
    return "Largest macro-score changes (B − A, like for like): " + "; ".join(said) + "."


def _rank_finding(comparison: Any) -> Finding:
    summary = comparison.rank_summary.iloc[0]
    n_changed, n_moved = int(summary["n_rank_changes"]), int(summary["n_moved"])
    numbers = {"statistic": "kendall_tau", "value": float(summary["kendall_tau"]), "count": float(n_moved),
               "total": float(summary["n_models"])}
    if unchanged(comparison):
        return Finding("ranks", "Ranking", "Ranking by macro score: the same on both sides.", **numbers)
    text = f"Ranking by macro score: Kendall's tau between the sides is {_tau_text(summary)}"
    if summary["interval_method"] and not _has_intervals(comparison.models) and " [" in text:
        text += " (its interval from resampling the domains)"
    if not n_changed:
        text += "; no model changed rank."
    elif n_moved:
        moved = comparison.ranks[comparison.ranks["moved"]]
        said = [f"{r.model} ({int(r.rank_a)} → {int(r.rank_b)})" for r in moved.itertuples(index=False)]
        text += f"; {plural(n_changed, 'model')} changed rank, {n_moved:,} beyond noise: " + listing(said, 5) + "."
    else:
        text += f"; {plural(n_changed, 'model')} changed rank, " + (
            "none beyond noise." if summary["interval_method"] else "with no intervals computed for the ranks.")
    return Finding("ranks", "Ranking", text, lo=float(summary["kendall_tau_lo"]), hi=float(summary["kendall_tau_hi"]),
                   **numbers)


def _domain_sentence(comparison: Any, top: int = 3) -> str | None:
    if comparison.ledger is None or not len(comparison.ledger):
        return None
    table = domain_changes(comparison)
    table = table[table["n_changed"] > 0].head(top)
    if not len(table):
        return None
    said = []
    for row in table.to_dict("records"):
        kinds = [f"{row[k]:,} {k.replace('_', ' ')}" for k in ITEM_CHANGES if row.get(k)]
        said.append(f"{row['domain']} ({', '.join(kinds)})")
    return "Domains with the most changed items: " + "; ".join(said) + "."


def _top_item_sentence(comparison: Any) -> str | None:
    top = ledger_top(comparison.ledger, top=1)
    if top is None or not len(top):
        return None
    row = top.iloc[0]
    if not np.isfinite(float(row.get("q_value", np.nan))):
        return None
    text = (f"Top entry of the item ledger: {row['item']} ({row['domain']}; {row['changes'].replace('_', ' ')}): "
            f"share correct {float(row['share_a']):.2f} → {float(row['share_b']):.2f} "
            f"(q = {float(row['q_value']):.2g})")
    if row.get("key_a") is not None and row.get("key_b") is not None and row["key_a"] != row["key_b"]:
        text += f", key {row['key_a']} → {row['key_b']}"
    words = next((row[c] for c in ("text_b", "text_a") if c in top.columns and isinstance(row[c], str)), None)
    return text + (f": “{_clip(words, 100)}”." if words else ".")


def _rescoring_sentence(comparison: Any) -> str | None:
    table = comparison.rescoring
    if table is None or not len(table):
        return None
    delta = table["macro_score_delta"].astype(float)
    biggest = table.loc[delta.abs().idxmax()]
    return (f"Re-scoring A's recorded choices with B's changed keys moves A's macro scores by {delta.min():+.4f} to "
            f"{delta.max():+.4f} (most: {biggest['model']}, {plural(int(biggest['n_gained']), 'result')} gained and "
            f"{int(biggest['n_lost']):,} lost); this is the part of the change the keys alone explain.")


def _floor_sentence(comparison: Any) -> str | None:
    if comparison.floor is None:
        return None
    floor = comparison.floor.iloc[0]
    limit = float(floor["min_detectable_difference"])
    text = (f"Run-to-run noise: {float(floor['flip_share']):.1%} of the paired results flip between the runs; a "
            f"macro-score difference below {limit:.4f} is within run-to-run noise")
    if "beyond_run_noise" in comparison.models.columns:
        n = int(_one_per_model(comparison.models)["beyond_run_noise"].sum())
        text += f" ({plural(n, 'model')} changed by more)"
    return text + "."


def glance(view: CompareView) -> list[Finding]:
    """The key findings with their numbers, as :class:`jagged.views.glance.Finding` rows for the JSON beside the
    report."""
    c = view.comparison
    found = (_shares_finding(c), _domains_finding(c, view.ci), _field_finding(c, view.ci),
             _noise_finding(c, view.ci), _rank_finding(c))
    return [f for f in found if f is not None]


def findings(view: CompareView) -> list[str]:
    """The sentences of "What changed", most important first (plain text: escape before showing as HTML).

    What was compared; what was added, removed or changed; the benchmark's and the models'
    parts; the domains that moved for every model; the models beyond the field; whether the
    raw changes exceed the noise; the largest changes; the ranking; the domains and the item
    with the most evidence of change; the re-scoring; the run-to-run noise floor.
    """
    c = view.comparison
    models = _one_per_model(c.models)
    most = int(models["n_items"].max()) if c.scope == "items" and models["n_items"].notna().any() else 0
    where = (f"the items each model answered on both sides (up to {most:,})" if c.scope == "items"
             else "the domains both sides score")
    out = [f"A is {view.name_a}, B is {view.name_b}; {plural(len(models), 'model')} on both sides are compared "
           f"like for like on {where}; every change is B − A.", _what_changed(c, view.name_a, view.name_b)]
    found = glance(view)
    out += [f.sentence for f in found if f.section != "ranks"]
    out += [s for s in (_largest_sentence(c), found[-1].sentence, _domain_sentence(c), _top_item_sentence(c),
                        _rescoring_sentence(c), _floor_sentence(c)) if s]
    return out


def findings_html(sentences: list[str]) -> str:
    """The findings as an HTML list, every sentence escaped."""
    items = "\n".join(f"<li>{html.escape(s)}</li>" for s in sentences)
    return f'<ul class="findings">\n{items}\n</ul>'


def show_findings(view: CompareView) -> None:
    """Display :func:`findings` (escaped HTML list with a plain-text twin)."""
    from IPython.display import display

    sentences = findings(view)
    display({"text/html": findings_html(sentences), "text/plain": "\n".join(f"- {s}" for s in sentences)}, raw=True)


def show_record(view: CompareView) -> None:
    """Display the record for the JSON beside the report (nothing to see): :func:`glance`, ``metrics``, ``domains``,
    ``change_shares``.
    """
    from IPython.display import display

    c = view.comparison
    display({RECORD_MIME: {"glance": json_records(finding_table(glance(view))), "metrics": json_records(c.models),
                           "domains": json_records(c.domains),
                           "change_shares": json_records(pd.DataFrame([c.shares]))[0]}}, raw=True)


# --------------------------------------------------------------------------- alt text

def _forest_alt(rows: pd.DataFrame, value: str, label: str, what: str, limit: int | None) -> str:
    rows = rows[rows[value].notna()]
    if not len(rows):
        return f"Forest plot of {what}: no {label} has a value."
    beyond = int(((rows[f"{value}_lo"] > 0) | (rows[f"{value}_hi"] < 0)).sum()) if f"{value}_lo" in rows else 0
    hi, lo = rows.loc[rows[value].idxmax()], rows.loc[rows[value].idxmin()]
    shown = "" if limit is None or len(rows) <= limit else f" (the {limit} largest changes of {len(rows):,} shown)"
    return (f"Forest plot of {what} for {plural(len(rows), label)}{shown}, with intervals; {beyond:,} exclude 0. "
            f"Largest rise: {hi[label]} {hi[value]:+.4f}; largest fall or smallest rise: {lo[label]} {lo[value]:+.4f}.")


def forest_alt(models: pd.DataFrame, stat: str = "macro_score", limit: int | None = None) -> str:
    """Alt text of :func:`jagged.plots.compare.delta_forest` (``stat``), with ``stat="field"`` of ``field_forest``."""
    if stat == "field":
        return _forest_alt(_one_per_model(models), "macro_delta_vs_field", "model",
                           "each model's macro-score change relative to the field", limit)
    return _forest_alt(_one_per_model(models), f"{stat}_delta", "model", f"the change in {stat} from A to B", limit)


def shifts_alt(domains: pd.DataFrame, limit: int | None = None) -> str:
    """Alt text of :func:`jagged.plots.compare.domain_shifts`."""
    return _forest_alt(domains, "shift", "domain", "the field's shift (mean change over the models) per domain",
                       limit)


def pairs_alt(models: pd.DataFrame, stat: str = "macro_score") -> str:
    """Alt text of :func:`jagged.plots.compare.a_against_b`."""
    rows = _one_per_model(models)
    rows = rows[rows[f"{stat}_a"].notna() & rows[f"{stat}_b"].notna()]
    above = int((rows[f"{stat}_b"] > rows[f"{stat}_a"]).sum())
    return (f"Scatter of {stat} in B against A for {plural(len(rows), 'model')} on what both share, with the "
            f"line B = A; {above:,} lie above it (higher in B). Vertical bars are the intervals of the change.")
