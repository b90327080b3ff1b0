"""The item audit for a reader: tables and sentences of "Items to look at", from :mod:`jagged.stats.item_audit`."""

from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np
import pandas as pd

from jagged.analysis import strongest_models
from jagged.stats.item_audit import REVIEW_FLAGS, ItemAudit, domain_flags, flag_counts, rescoring_options
from jagged.text import plural

#: Items per domain in the evidence table of the report.
TOP_PER_DOMAIN = 3
#: Column of the strongest models' choices in :func:`item_listing` (CSV / JSON of ``jagged items``).
STRONGEST_COLUMN = "top_models_chose"
#: The posterior's column in the report's item tables.
POSTERIOR = "P(flawed)"


def strongest_choices(items: pd.DataFrame, models: Sequence[str], item_ids: Any = None,
                      keys: pd.Series | None = None) -> pd.Series:
    """What ``models`` (strongest first) answered on each item, most common answer first.

    Text per item such as ``"C (key): m1, m2; B: m3; no answer: m4"``: the ``choice`` letters
    (the one equal to the item's ``keys`` entry marked ``(key)``), or without a ``choice``
    column ``right`` / ``wrong`` / ``partial``. ``item_ids`` restricts the items; items none of
    the models has are absent.
    """
    rank = {m: k for k, m in enumerate(models)}
    rows = items[items["model"].isin(list(rank))]
    if item_ids is not None:
        rows = rows[rows["item"].isin(list(item_ids))]
    if "choice" in rows.columns:
        label = rows["choice"].astype(object).where(rows["choice"].notna(), "no answer").astype(str)
        if keys is not None:
            key = rows["item"].map(keys)
            label = label.where(label != key.astype(object), label + " (key)")
    else:
        correct = rows["correct"].to_numpy(dtype=float)
        label = pd.Series(np.where(correct >= 1, "right", np.where(correct <= 0, "wrong", "partial")),
                          index=rows.index)
    frame = pd.DataFrame({"item": rows["item"].to_numpy(dtype=object), "label": label.to_numpy(dtype=object),
                          "model": rows["model"].to_numpy(dtype=object),
                          "rank": rows["model"].map(rank).to_numpy()}).sort_values(["item", "rank"], kind="mergesort")
    groups = frame.groupby(["item", "label"], sort=False).agg(models=("model", ", ".join), n=("model", "size"),
                                                              first=("rank", "min")).reset_index()
    groups = groups.sort_values(["item", "n", "first"], ascending=[True, False, True], kind="mergesort")
    parts = groups["label"] + ": " + groups["models"]
    return parts.groupby(groups["item"].to_numpy(), sort=False).agg("; ".join).rename_axis("item")


def item_choices(analysis: Any, item_ids: Any = None) -> pd.Series | None:
    """:func:`strongest_choices` of the five models with the highest macro score, with the audit's keys (None: no
    items)."""
    source = analysis.item_source
    if source is None or source.items is None:
        return None
    return strongest_choices(source.items, strongest_models(analysis.scores), item_ids,
                             keys=analysis.item_audit.items.set_index("item")["key"])


def options_cell(options: Any, key: Any = None) -> str | None:
    """An ``options`` cell for reading: ``"A) … | B) … (key) | …"`` from a JSON list; other text as it is."""
    if not isinstance(options, str):
        return None
    try:
        texts = json.loads(options) if options.startswith("[") else None
    except ValueError:
        texts = None
    if not isinstance(texts, list):
        return options
    letters = [chr(ord("A") + k) for k in range(len(texts))]
    return " | ".join(f"{letter}) {text}" + (" (key)" if letter == key else "") for letter, text in zip(letters, texts))


def item_listing(audit: ItemAudit, *, text: pd.DataFrame | None = None, choices: pd.Series | None = None,
                 top: int | None = None) -> pd.DataFrame:
    """The audit table of ``jagged items``, most likely flawed first (the first ``top``).

    ``text`` (index item; ``text``, ``options`` as stored: a JSON list, option k being letter
    A + k) and ``choices`` (:func:`strongest_choices`) add their columns when given.
    """
    table = audit.items.head(top) if top else audit.items
    extra = {}
    if text is not None:
        for column in ("text", "options"):
            values = table["item"].map(text[column]) if column in text else pd.Series(None, index=table.index)
            extra[column] = values.astype(object).where(values.notna(), None)
    if choices is not None:
        values = table["item"].map(choices)
        extra[STRONGEST_COLUMN] = values.astype(object).where(values.notna(), None)
    return table.assign(**extra) if extra else table


def flag_table(audit: ItemAudit) -> pd.DataFrame:
    """Counts per flag with the share of items each catches; ``review`` "yes" for the flags that make an item
    *flagged*."""
    counts = flag_counts(audit)
    return pd.DataFrame({
        "flag": counts["flag"].str.replace("_", " "),
        "meaning": counts["meaning"],
        "items": counts["n_items"],
        "share of items": counts["share"],
        "share where computed": counts["share_computed"],
        "review": np.where(counts["review"], "yes", "no"),
    })


def domain_table(audit: ItemAudit) -> pd.DataFrame:
    """Flagged share per domain, most flagged first, with the shares of the review flags and ``what-if re-scored``."""
    d = domain_flags(audit)
    out = pd.DataFrame({"domain": d["domain"], "items": d["n_items"], "flagged": d["n_flagged"],
                        "share flagged": d["share_flagged"]})
    for name in REVIEW_FLAGS:
        out[name.replace("_", " ")] = d[f"share_{name}"]
    out["what-if re-scored"] = d["n_rescored"]
    return out


#: Display formats of :func:`domain_table`: every share as a whole percentage.
DOMAIN_TABLE_FORMATS: dict[str, str] = {"share flagged": "{:.0%}",
                                        **{name.replace("_", " "): "{:.0%}" for name in REVIEW_FLAGS}}


def top_items(audit: ItemAudit, per_domain: int = TOP_PER_DOMAIN, *, text: pd.DataFrame | None = None,
              choices: pd.Series | None = None) -> pd.DataFrame:
    """The ``per_domain`` items most likely flawed in every domain, evidence first (report table).

    Domains in the order of their first item (by P(flawed) with the flaw model, else by domain
    and item): ``domain``, ``item``, ``rank``, then what a reviewer reads — ``strong models
    chose`` (the upper group's choice and share), ``key`` (every key with its count when they
    differ), ``likely answer``, ``flags``, with ``choices`` ``top models chose``, with ``text``
    ``question`` and ``options`` (``A) … | B) …``, the key marked) — then ``P(flawed)`` with
    ``P lower`` / ``P upper``, ``p_correct`` and ``discrimination`` (r_rest). Text is as given
    (untrusted): :func:`jagged.views.display.show_table` escapes it.
    """
    items = audit.items
    ranked = "flaw_rank" in items
    top = items.groupby("domain", sort=False).head(per_domain)
    if ranked:
        first = top.groupby("domain", sort=False)["flaw_rank"].min().sort_values(kind="mergesort")
        top = top.assign(_order=top["domain"].map({d: i for i, d in enumerate(first.index)}))
        top = top.sort_values(["_order", "flaw_rank"], kind="mergesort")
    strong = [("—" if pd.isna(c) else f"{c} ({s:.0%})") for c, s in zip(top["strong_choice"],
                                                                       top["strong_choice_share"])]
    key = [("—" if pd.isna(k) else (str(ks) if ks else str(k))) for k, ks in zip(top["key"], top["keys"])]
    columns: dict[str, Any] = {"domain": top["domain"].to_numpy(dtype=object),
                               "item": top["item"].to_numpy(dtype=object)}
    if ranked:
        columns["rank"] = top["flaw_rank"].to_numpy()
    columns["strong models chose"] = strong
    columns["key"] = key
    if "likely_key" in top:
        columns["likely answer"] = top["likely_key"].replace("", None).fillna("—").to_numpy(dtype=object)
    columns["flags"] = top["flags"].str.replace("_", " ").to_numpy(dtype=object)
    if choices is not None:
        chose = top["item"].map(choices)
        columns["top models chose"] = chose.astype(object).where(chose.notna(), None).to_numpy(dtype=object)
    if text is not None:
        question = top["item"].map(text["text"]) if "text" in text else pd.Series(None, index=top.index)
        options = top["item"].map(text["options"]) if "options" in text else pd.Series(None, index=top.index)
        columns["question"] = question.astype(object).where(question.notna(), None).to_numpy(dtype=object)
        columns["options"] = [options_cell(o, k) for o, k in zip(options, top["key"])]
    if ranked:
        columns[POSTERIOR] = top["posterior"].to_numpy(dtype=float)
        columns["P lower"] = top["posterior_lower"].to_numpy(dtype=float)
        columns["P upper"] = top["posterior_upper"].to_numpy(dtype=float)
    columns.update({"p_correct": top["p_correct"].to_numpy(dtype=float),
                    "discrimination": top["r_rest"].to_numpy(dtype=float)})
    return pd.DataFrame(columns)


#: Display formats of :func:`top_items`.
TOP_FORMATS: dict[str, str] = {POSTERIOR: "{:.2f}", "P lower": "{:.2f}", "P upper": "{:.2f}", "p_correct": "{:.2f}",
                               "discrimination": "{:.2f}"}


def sensitivity_table(sensitivity: pd.DataFrame) -> pd.DataFrame:
    """cv_error with all items, with the flagged ones set aside and with key errors re-scored (what-if), largest change
    first."""
    s = sensitivity.assign(_abs=sensitivity["cv_change"].abs()).sort_values(
        ["_abs", "model"], ascending=[False, True], kind="mergesort")
    return pd.DataFrame({
        "model": s["model"].to_numpy(dtype=object), "cv_error (all items)": s["cv_error"].to_numpy(dtype=float),
        "flagged set aside": s["cv_error_set_aside"].to_numpy(dtype=float),
        "change": s["cv_change"].to_numpy(dtype=float),
        "what-if: key errors re-scored": s["cv_error_rescored"].to_numpy(dtype=float),
        "what-if change": s["cv_change_rescored"].to_numpy(dtype=float),
    })


def _share(n: int, total: int) -> str:
    return f"{n:,} of {total:,} items ({n / total:.1%})" if total else "no items"


def _changes(sensitivity: pd.DataFrame | None) -> np.ndarray:
    """The finite changes of cv_error when the flagged items are set aside (empty without them)."""
    if sensitivity is None or not len(sensitivity):
        return np.zeros(0)
    change = sensitivity["cv_change"].to_numpy(dtype=float)
    return change[np.isfinite(change)]


def audit_sentences(audit: ItemAudit, sensitivity: pd.DataFrame | None = None) -> list[str]:
    """What the audit found, in a few plain sentences (names as they are; escape when shown as HTML)."""
    items = audit.items
    total = len(items)
    counts = flag_counts(audit).set_index("flag")
    flagged = int(items["flagged"].sum())
    by_flag = ", ".join(f"{name.replace('_', ' ')} {int(counts.loc[name, 'n_items']):,}" for name in REVIEW_FLAGS)
    out = [f"{_share(flagged, total)} carry at least one review flag ({by_flag}); flags are reasons to look, "
           f"not to exclude."]
    domains = domain_flags(audit)
    if len(domains) > 1:
        top, low = domains.iloc[0], domains.iloc[-1]
        out.append(f"The most flagged domain is {top['domain']} ({top['share_flagged']:.0%} of its "
                   f"{int(top['n_items']):,} items), the least {low['domain']} ({low['share_flagged']:.0%}).")
    rescore = rescoring_options(audit)
    if rescore:
        out.append(f"{plural(len(rescore), 'item')} look like key errors with a clear alternative (at least half "
                   "of the strongest models agree on one other option, decisive evidence): the what-if columns "
                   "re-score them against that option.")
    change = _changes(sensitivity)
    if len(change):
        out.append(f"Setting the flagged items aside changes cv_error by {np.median(change):+.3f} for the median "
                   f"model (the change ranges from {change.min():+.3f} to {change.max():+.3f} across models); "
                   "this is a sensitivity analysis, not a "
                   "corrected CV: leaving out hard but valid items lowers the mean error and so raises the CV.")
    out.extend(note[0].upper() + note[1:] + ("" if note.endswith(".") else ".") for note in audit.notes)
    return out


def summary_lines(audit: ItemAudit) -> list[str]:
    """What ``jagged items`` says on stderr: the counts, the expected flawed items, flagged models, the notes."""
    items = audit.items
    n, flagged = len(items), int(items["flagged"].sum())
    head = f"{n:,} items from {audit.n_models} models; {flagged:,} ({flagged / n:.1%}) carry a review flag" if n \
        else f"no items from {audit.n_models} models"
    if audit.flaws is None:
        return [head + "; by domain and item", *(f"note: {note}" for note in audit.notes)]
    t = audit.flaws.total
    lines = [f"{head}; expected flawed items {t['expected_flawed']:,.0f} ({t['lower']:,.0f}–{t['upper']:,.0f}, "
             f"{audit.flaws.level:.0%} interval; {t['visible']:,.0f} of them shown by the responses); the most likely "
             "flawed first"]
    lines += [f"{name} agrees with likely wrong keys (possible contamination or benchmark-specific training)"
              for name in audit.flaws.models.loc[audit.flaws.models["flagged"], "model"].astype(str)]
    return lines + [f"note: {note}" for note in audit.notes]


def discrimination_alt(audit: ItemAudit) -> str:
    """Alt text of :func:`jagged.plots.item_audit.discrimination_difficulty`."""
    items = audit.items
    shown = items["r_rest"].notna() & items["p_correct"].notna()
    flagged = int((items["flagged"] & shown).sum())
    negative = int((items["r_rest"] < 0).sum())
    return (f"Scatter plot of {int(shown.sum()):,} items: share of models right across, item–rest correlation up; "
            f"{flagged:,} flagged items in red, {negative:,} below zero (weaker models do better).")


def domain_alt(audit: ItemAudit) -> str:
    """Alt text of :func:`jagged.plots.item_audit.flagged_share_by_domain`."""
    d = domain_flags(audit)
    if not len(d):
        return "No domains."
    return (f"Bar chart of the flagged share of items in {plural(len(d), 'domain')}, from {d['domain'].iloc[0]} "
            f"({d['share_flagged'].iloc[0]:.0%}) down to {d['domain'].iloc[-1]} ({d['share_flagged'].iloc[-1]:.0%}).")


def items_glance(analysis: Any) -> dict[str, Any] | None:
    """The item audit's line in "At a glance", as the fields of a ``jagged.views.glance.Finding`` (None: no section).

    With the flaw model the sentence gives the expected number of flawed items with its
    interval, else the flagged share; ``value`` is the median change of cv_error when the
    flagged items are set aside.
    """
    if not analysis.sections.get("items"):
        return None
    audit = analysis.item_audit
    if audit is None:
        return None
    items = audit.items
    total, flagged = len(items), int(items["flagged"].sum())
    if audit.flaws is not None:  # the one ranking: the expected flawed items and the one to read first
        t = audit.flaws.total
        sentence = (f"About {t['expected_flawed']:,.0f} of {total:,} items are expected to be flawed "
                    f"({t['lower']:,.0f}–{t['upper']:,.0f}, {audit.flaws.level:.0%}; "
                    f"about {t['visible']:,.0f} shown by the answers, the rest assumed)")
        if total and float(items["posterior"].iloc[0]) > 0.5:
            sentence += f", item {items['item'].iloc[0]} ({items['domain'].iloc[0]}) most likely"
    else:
        sentence = (f"{_share(flagged, total)} carry a review flag (discrimination, distractors, strong models' "
                    "agreement on a wrong option, key)")
    value = float("nan")
    change = _changes(analysis.item_sensitivity)
    if len(change):
        value = float(np.median(change))
        sentence += (f"; setting the {flagged:,} flagged items aside moves the median model's cv_error by "
                     f"{value:+.3f} (a sensitivity check)")
    return {"label": "Items to look at", "sentence": sentence + ".", "statistic": "flagged", "value": value,
            "count": float(flagged), "total": float(total)}
