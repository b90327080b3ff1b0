"""Tables and sentences of the compare report: what changed between two runs or releases.

Everything here reads a :class:`jagged.stats.compare.Comparison` (computed once by
:func:`jagged.stats.compare.compare`) and arranges it for a reader; nothing computes a
statistic. "Beyond noise" always means the statistic's interval, as the comparison gives
it, excludes 0 (a paired interval on the common items with item-level data; see
:func:`jagged.stats.compare.paired_replicates`).

* :class:`CompareView` — the comparison with the names of its sides; shown in a notebook,
  it records which optional sections of the compare report apply (:func:`compare_sections`);
* :func:`findings` — the sentences of "What changed", findings first;
* :func:`model_moves`, :func:`glance_table`, :func:`change_counts`, :func:`domain_changes`,
  :func:`ledger_top`, :func:`profile_moves` — the report's tables;
* :func:`forest_alt`, :func:`pairs_alt` — alt text of the two figures.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from jagged.text import listing, plural

#: Optional sections of the compare report, in report order (cells tagged ``section-NAME``).
COMPARE_SECTIONS: tuple[str, ...] = ("changes", "items", "rescoring", "profiles", "repeats")
#: Kinds of item change, in the ledger's order (:data:`jagged.stats.ledger.CHANGES`).
ITEM_CHANGES: tuple[str, ...] = ("added", "removed", "key_changed", "text_changed", "difficulty_moved")
#: Columns of the ledger shown in the report (those present), then ``text_a``/``text_b``/``options_*``.
LEDGER_COLUMNS: tuple[str, ...] = ("item", "domain", "change", "changes", "key_a", "key_b", "n_paired", "share_a",
                                   "share_b", "share_delta", "q_value")
TEXT_COLUMNS: tuple[str, ...] = ("text_a", "text_b", "options_a", "options_b")
#: Longest item text shown in a table cell (the ledger CSV keeps the whole text).
TEXT_MAX = 160
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
    "kendall_tau_all": _F3,
}


# --------------------------------------------------------------------------- the comparison for a notebook

def compare_sections(comparison: Any) -> dict[str, bool]:
    """Which optional sections of the compare report apply (:data:`COMPARE_SECTIONS`).

    ``changes``: a model or domain is on one side only; ``items``: item-level results on
    both sides (the item ledger); ``rescoring``: A's recorded choices re-scored with B's
    changed keys; ``profiles``: deployment profiles were given; ``repeats``: the run-to-run
    noise floor was computed.
    """
    return {"changes": bool(len(comparison.changes)), "items": comparison.ledger is not None,
            "rescoring": comparison.rescoring is not None,
            "profiles": "dep_score_delta" in comparison.models.columns,
            "repeats": comparison.floor is not None}


@dataclass
class CompareView:
    """A comparison as the compare report shows it.

    Attributes
    ----------
    comparison : jagged.stats.compare.Comparison
        What :func:`jagged.stats.compare.compare` returned.
    name_a, name_b : str
        The sides' names (their sources).
    ci, alpha : float
        Interval level and the ledger's false discovery rate, for the sentences.
    display : dict
        Display options (``max_models``, ``theme``).
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
        from jagged.analysis import SECTIONS_MIME

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


def model_moves(comparison: Any) -> pd.DataFrame:
    """One row per model on both sides, largest like-for-like macro-score change first.

    Returns
    -------
    pandas.DataFrame
        ``model``, ``n_items`` (item-level scope) or ``n_domains``, ``macro_score_a``,
        ``macro_score_b``, ``macro_score_delta`` with ``_lo``/``_hi``, ``beyond_noise``
        (its interval excludes 0), ``cv_error_delta`` with ``_lo``/``_hi``, ``rank_a``,
        ``rank_b``, ``rank_moved`` (the rank change is beyond noise), ``beyond_run_noise``
        (with repeated runs) and ``note``.
    """
    models = _one_per_model(comparison.models)
    ranks = comparison.ranks[["model", "rank_a", "rank_b", "moved"]].rename(columns={"moved": "rank_moved"})
    size = "n_items" if comparison.scope == "items" else "n_domains"
    out = models[["model", size, "macro_score_a", "macro_score_b", "macro_score_delta", "macro_score_delta_lo",
                  "macro_score_delta_hi"]].copy()
    out["beyond_noise"] = beyond_noise(models)
    for column in ("cv_error_delta", "cv_error_delta_lo", "cv_error_delta_hi"):
        out[column] = models[column].to_numpy()
    out = out.merge(ranks, on="model", how="left")
    if "beyond_run_noise" in models.columns:
        out["beyond_run_noise"] = models["beyond_run_noise"].to_numpy()
    out["note"] = models["note"].to_numpy()
    order = out["macro_score_delta"].abs().sort_values(ascending=False, na_position="last", kind="mergesort").index
    return out.loc[order].reset_index(drop=True)


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
    """How many items show each kind of change (an item can show several, e.g. a key change that moved it).

    Returns
    -------
    pandas.DataFrame
        ``change`` (:data:`ITEM_CHANGES` order) and ``n_items``; empty without a ledger.
    """
    ledger = comparison.ledger
    if ledger is None:
        return pd.DataFrame({"change": pd.Series(dtype=object), "n_items": pd.Series(dtype=np.int64)})
    counts = [int(_ledger_has(ledger, kind).sum()) for kind in ITEM_CHANGES]
    return pd.DataFrame({"change": list(ITEM_CHANGES), "n_items": counts})


def domain_changes(comparison: Any) -> pd.DataFrame:
    """Per domain: on which side it is, and how many of its items show each kind of change.

    Returns
    -------
    pandas.DataFrame
        ``domain``, ``status`` (``"both"``, ``"added"``, ``"removed"``), one count column per
        kind of :data:`ITEM_CHANGES` (item-level comparisons only) and ``n_changed`` (items
        with any change), most changed first. Domains without any change are left out.
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
    """The ledger's top entries: items on both sides whose change is best established first.

    Parameters
    ----------
    ledger : pandas.DataFrame or None
        :func:`jagged.stats.ledger.item_ledger` output.
    top : int, optional
        How many rows (None: all).

    Returns
    -------
    pandas.DataFrame or None
        The :data:`LEDGER_COLUMNS` and, when the ledger has them, the item's text and
        options on each side (cut to :data:`TEXT_MAX` characters). Order: items on both
        sides by q-value (smallest first), then by |share_delta| (largest first); then
        the items added or removed, in the ledger's order.
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
    rows = [("compared on", "common items" if comparison.scope == "items" else "common domains"),
            ("models on both sides", f"{len(models):,}"),
            ("macro-score changes beyond noise", beyond),
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


def _has_intervals(models: pd.DataFrame) -> bool:
    return bool(models["macro_score_delta_lo"].notna().any())


def _tau_text(summary: pd.Series) -> str:
    tau = float(summary["kendall_tau"])
    if not np.isfinite(tau):
        return "undefined (fewer than 2 models)"
    text = f"{tau:.3f}"
    lo, hi = float(summary["kendall_tau_lo"]), float(summary["kendall_tau_hi"])
    return text + (f" [{lo:.3f}, {hi:.3f}]" if np.isfinite(lo) and np.isfinite(hi) else "")


# --------------------------------------------------------------------------- sentences

def _delta(value: float, lo: float = np.nan, hi: float = np.nan, digits: int = 4) -> str:
    text = f"{value:+.{digits}f}"
    if np.isfinite(lo) and np.isfinite(hi):
        text += f" [{lo:+.{digits}f}, {hi:+.{digits}f}]"
    return text


def _names(values: Any, limit: int = 5) -> str:
    return listing([str(v) for v in values], limit)


def _what_changed(comparison: Any, name_a: str, name_b: str) -> str:
    changes = comparison.changes
    parts = []
    for kind in ("model", "domain"):
        for change, side in (("added", name_b), ("removed", name_a)):
            names = changes.loc[(changes["kind"] == kind) & (changes["change"] == change), "name"]
            if len(names):
                parts.append(f"{plural(len(names), kind)} {change} ({_names(names)}: only in {side})")
    if comparison.ledger is not None:
        counts = change_counts(comparison)
        said = [f"{n:,} {kind.replace('_', ' ')}" for kind, n in zip(counts["change"], counts["n_items"]) if n]
        if said:
            parts.append("items: " + ", ".join(said))
    if not parts:
        return "Nothing was added or removed: the same models and domains are on both sides" + (
            ", and no item's key, text or difficulty changed." if comparison.ledger is not None else ".")
    return "What changed: " + "; ".join(parts) + "."


def _noise_sentence(comparison: Any, ci: float) -> str:
    models = _one_per_model(comparison.models)
    compared = models[models["n_domains"] > 0]
    if not len(compared):
        return "No model has items or domains in common on both sides: nothing is compared like for like."
    if not _has_intervals(compared):
        return (f"The like-for-like macro-score changes range from {compared['macro_score_delta'].min():+.4f} to "
                f"{compared['macro_score_delta'].max():+.4f}; no intervals were computed, so whether they exceed "
                "the noise is not known (use a bootstrap and item counts or item-level results).")
    beyond = beyond_noise(compared)
    paired = "paired " if comparison.scope == "items" else ""
    level = f"{ci:.0%}"
    if not beyond.any():
        return (f"No model's macro score changed beyond noise: every {paired}{level} interval of the like-for-like "
                f"change includes 0 ({plural(len(compared), 'model')}).")
    moved = compared[beyond]
    up, down = int((moved["macro_score_delta"] > 0).sum()), int((moved["macro_score_delta"] < 0).sum())
    return (f"The macro score changed beyond noise for {len(moved):,} of {len(compared):,} models ({up:,} up, "
            f"{down:,} down: their {paired}{level} interval of B − A excludes 0); the changes range from "
            f"{compared['macro_score_delta'].min():+.4f} to {compared['macro_score_delta'].max():+.4f}.")


def _largest_sentence(comparison: Any, top: int = 3) -> str | None:
    moves = model_moves(comparison)
    moves = moves[moves["macro_score_delta"].notna()].head(top)
    if not len(moves):
        return None
    said = [f"{row.model} {_delta(row.macro_score_delta, row.macro_score_delta_lo, row.macro_score_delta_hi)}"
            for row in moves.itertuples(index=False)]
    return "Largest macro-score changes (B − A, like for like): " + "; ".join(said) + "."


def _rank_sentence(comparison: Any) -> str:
    summary = comparison.rank_summary.iloc[0]
    text = f"Ranking by macro score: Kendall's tau between the sides is {_tau_text(summary)}"
    n_changed, n_moved = int(summary["n_rank_changes"]), int(summary["n_moved"])
    if not n_changed:
        return text + "; no model changed rank."
    ranks = comparison.ranks
    text += f"; {plural(n_changed, 'model')} changed rank"
    if n_moved:
        moved = ranks[ranks["moved"]]
        said = [f"{r.model} ({int(r.rank_a)} → {int(r.rank_b)})" for r in moved.itertuples(index=False)]
        return text + f", {n_moved:,} beyond noise: " + listing(said, 5) + "."
    return text + (", none beyond noise." if summary["interval_method"] else " (no intervals computed).")


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


def findings(view: CompareView) -> list[str]:
    """The sentences of "What changed", most important first.

    Parameters
    ----------
    view : CompareView
        The comparison and the names of its sides.

    Returns
    -------
    list of str
        Plain text (escape before showing as HTML): what was compared; what was added,
        removed or changed; whether the like-for-like changes exceed the noise; the
        largest changes; the ranking; the domains and the item with the most evidence of
        change; the re-scoring of changed keys; the run-to-run noise floor (each when it
        applies).
    """
    c = view.comparison
    models = _one_per_model(c.models)
    most = int(models["n_items"].max()) if c.scope == "items" and models["n_items"].notna().any() else 0
    where = (f"the items each model answered on both sides (up to {most:,})" if c.scope == "items"
             else "the domains both sides score")
    out = [f"A is {view.name_a}, B is {view.name_b}; {plural(len(models), 'model')} on both sides are compared "
           f"like for like on {where}; every change is B − A.",
           _what_changed(c, view.name_a, view.name_b), _noise_sentence(c, view.ci)]
    for sentence in (_largest_sentence(c), _rank_sentence(c), _domain_sentence(c), _top_item_sentence(c),
                     _rescoring_sentence(c), _floor_sentence(c)):
        if sentence:
            out.append(sentence)
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


# --------------------------------------------------------------------------- alt text

def forest_alt(models: pd.DataFrame, stat: str = "macro_score", limit: int | None = None) -> str:
    """Alt text of :func:`jagged.plots.compare.delta_forest`."""
    rows = _one_per_model(models)
    rows = rows[rows[f"{stat}_delta"].notna()]
    if not len(rows):
        return f"Forest plot of the change in {stat}: no model has a value on both sides."
    beyond = beyond_noise(rows, stat)
    hi = rows.loc[rows[f"{stat}_delta"].idxmax()]
    lo = rows.loc[rows[f"{stat}_delta"].idxmin()]
    shown = "" if limit is None or len(rows) <= limit else f" (the {limit} largest changes of {len(rows):,} shown)"
    return (f"Forest plot of the change in {stat} from A to B for {plural(len(rows), 'model')}{shown}, with "
            f"intervals; {int(beyond.sum()):,} exclude 0. Largest rise: {hi['model']} {hi[f'{stat}_delta']:+.4f}; "
            f"largest fall or smallest rise: {lo['model']} {lo[f'{stat}_delta']:+.4f}.")


def pairs_alt(models: pd.DataFrame, stat: str = "macro_score") -> str:
    """Alt text of :func:`jagged.plots.compare.a_against_b`."""
    rows = _one_per_model(models)
    rows = rows[rows[f"{stat}_a"].notna() & rows[f"{stat}_b"].notna()]
    above = int((rows[f"{stat}_b"] > rows[f"{stat}_a"]).sum())
    return (f"Scatter of {stat} in B against A for {plural(len(rows), 'model')} on what both share, with the "
            f"line B = A; {above:,} lie above it (higher in B). Vertical bars are the intervals of the change.")
