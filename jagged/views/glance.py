"""The report's first section, "At a glance": its findings in a few sentences, from the numbers.

:func:`glance` turns an :class:`~jagged.analysis.Analysis` into :class:`Finding` rows (a
label, one plain-text sentence, the numbers behind it); nothing here computes a statistic.
A report section contributes one function to :data:`CONTRIBUTORS`, in report order: it
takes the ``Analysis`` and returns a ``Finding``, a list of them, or None when its section
does not apply (``analysis.sections.get("NAME")``); names as they are (:func:`glance_html`
escapes them), numbers with their intervals where they exist. ``tests/test_glance.py``
builds an ``Analysis`` around a hand-made table to test one.
"""

from __future__ import annotations

import html
import math
from dataclasses import asdict, dataclass, fields
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from jagged.stats.intervals import outside
from jagged.text import listing, plural
from jagged.views.display import RECORD_MIME, json_records
from jagged.views.overview import by_jaggedness
from jagged.views.structure import ZERO_PART, model_specific_part, percent, relative_column, size_word

#: Profiles whose wedge says nothing (the macro average itself).
NEUTRAL_PROFILES = frozenset({"uniform"})


@dataclass(frozen=True)
class Finding:
    """One line of the glance.

    Attributes
    ----------
    section : str
        The report section it summarises (``"jaggedness"``, ``"noise"``, ``"profiles"``,
        ``"items"``, ``"irt"``, ``"decomposition"``).
    label, sentence : str
        A short bold lead-in ("Most jagged") and the finding in plain text.
    subject : str
        The model (or model and profile) it is about, "" for the whole table.
    statistic : str
        The column its ``value`` comes from ("cv_error", "wedge", ...).
    value, lo, hi : float
        The value and its interval (NaN when there is none).
    count, total : float
        For counts: how many of how many (NaN otherwise).
    rests_on : str
        The domain the value rests on (leaving it out ends the subject's lead or at least
        halves its value, :func:`jagged.stats.leave_one_out.headline_rests_on`), "" when none.
    """

    section: str
    label: str
    sentence: str
    subject: str = ""
    statistic: str = ""
    value: float = math.nan
    lo: float = math.nan
    hi: float = math.nan
    count: float = math.nan
    total: float = math.nan
    rests_on: str = ""


Contributor = Callable[[Any], "Finding | Sequence[Finding] | None"]


def _finite(value: Any) -> bool:
    try:
        return bool(np.isfinite(float(value)))
    except (TypeError, ValueError):
        return False


def _per_model(table: pd.DataFrame) -> pd.DataFrame:
    """One row per model (profile rows repeat the model's own columns)."""
    return table.drop_duplicates("model").reset_index(drop=True)


def _level(analysis: Any) -> str:
    return f"{analysis.options.ci:.0%}"


def _interval_text(row: pd.Series, analysis: Any, column: str = "cv_error", what: str = "") -> str:
    lo, hi = row.get(f"{column}_lo", math.nan), row.get(f"{column}_hi", math.nan)
    if not (_finite(lo) and _finite(hi)):
        return ""
    return f"{_level(analysis)} interval{what} {float(lo):.3f} to {float(hi):.3f}"


def _rests_on(analysis: Any, column: str, values: pd.Series, subject: Any, *, largest: bool, what: str,
              digits: int = 2, absolute: bool = False) -> tuple[str, str]:
    """`` This rests on one domain: …`` and the domain, when the headline's value rests on one (else ``("", "")``).

    ``values`` are the ranked values (index: the subjects), ``column`` names the
    :attr:`~jagged.analysis.Analysis.leave_one_out` table of the same statistic ("and X would
    replace it" when another subject leads without the domain); with ``absolute`` the ranking is
    by magnitude and the signed value is quoted (the wedge).
    """
    rests = analysis.rests_on(column, values, subject, largest=largest, absolute=absolute)
    if rests is None:
        return "", ""
    found, value = rests
    model = subject[0] if isinstance(subject, tuple) else subject
    scores = analysis.scores
    there = scores.loc[(scores["model"].astype(str) == str(model)) & (scores["domain"].astype(str) == found.domain),
                       "score"]
    where = f" (where it scores {float(there.iloc[0]):.3f})" if len(there) else ""
    shown = f"{value:+.{digits}f}" if absolute else f"{value:.{digits}f}"
    text = f" This rests on one domain: without {found.domain}{where} its {what} would be {shown}"
    if found.leader is not None:
        leader = " under ".join(found.leader) if isinstance(found.leader, tuple) else found.leader
        text += f" and {leader} would replace it"
    return text + ".", found.domain


# --------------------------------------------------------------------------- contributors


def _cv_detail(row: pd.Series, analysis: Any) -> str:
    """``cv_error 0.412 (0.398 with sampling noise removed, 95% interval …)`` for a row.

    The interval is the noise-corrected value's (it contains that value, not the raw one), so
    it is written right after it.
    """
    extra = []
    corrected = row.get("cv_error_corrected", math.nan)
    if _finite(corrected):
        interval = _interval_text(row, analysis)
        extra.append(f"{float(corrected):.3f} with sampling noise removed" + (f", {interval}" if interval else ""))
    return f"cv_error {float(row['cv_error']):.3f}" + (f" ({'; '.join(extra)})" if extra else "")


def _cv_numbers(row: pd.Series) -> dict[str, Any]:
    """A cv_error finding's numbers: the corrected value with its interval if it has one, else the raw ``cv_error``."""
    corrected = row.get("cv_error_corrected", math.nan)
    lo, hi = row.get("cv_error_lo", math.nan), row.get("cv_error_hi", math.nan)
    if _finite(corrected) and _finite(lo) and _finite(hi):
        return {"statistic": "cv_error_corrected", "value": float(corrected), "lo": float(lo), "hi": float(hi)}
    return {"statistic": "cv_error", "value": float(row["cv_error"])}


def _raw_findings(analysis: Any, rows: pd.DataFrame) -> list[Finding]:
    """Most and least jagged by ``cv_error`` alone (no decomposition to adjust for the level)."""
    n = len(rows)
    out = []
    picks = [("Most jagged", rows.iloc[0])] + ([("Least jagged", rows.iloc[-1])] if n > 1 else [])
    values = pd.Series(rows["cv_error"].to_numpy(dtype=float), index=rows["model"].to_numpy(dtype=object))
    for label, row in picks:
        if n == 1:
            where = "the only model with a defined cv_error"
        elif label == "Most jagged":
            where = f"its errors are the most unevenly spread across domains of the {n:,} models"
        else:
            where = "the most evenly spread errors"
        sentence = (f"{row['model']}: {_cv_detail(row, analysis)}; {where} "
                    f"(macro score {float(row['macro_score']):.3f}).")
        rests, domain = _rests_on(analysis, "cv_error", values, row["model"], largest=label == "Most jagged",
                                  what="cv_error", digits=3)
        out.append(Finding("jaggedness", label, sentence + rests, subject=str(row["model"]), **_cv_numbers(row),
                           rests_on=domain))
    return out


def jaggedness_findings(analysis: Any) -> list[Finding]:
    """The most and the least jagged model: adjusted for level first, the raw ``cv_error`` beside it.

    ``cv_error`` divides by the mean error, so it rises with the level: the model it ranks
    first is often just the strongest. With a decomposition each finding leads with the
    relative jaggedness (:func:`jagged.views.structure.relative_column`; ``lo``/``hi`` its
    interval) and names the most jagged by ``cv_error`` beside it, with their rank correlation;
    without, ``statistic`` is ``cv_error`` or, with a bootstrap, ``cv_error_corrected`` (the
    value its interval contains). A value resting on one domain says so (``rests_on``).
    """
    rows = by_jaggedness(analysis.table)
    if rows.empty:
        return []
    column = relative_column(rows) if "relative_jaggedness" in rows.columns else ""
    adjusted = rows[np.isfinite(pd.to_numeric(rows[column], errors="coerce").to_numpy(dtype=float))] \
        if column and analysis.sections.get("decomposition", True) else rows.iloc[:0]
    if adjusted.empty:
        return _raw_findings(analysis, rows)
    adjusted = adjusted.sort_values([column, "model"], ascending=[False, True], kind="mergesort")
    corrected = column == "relative_jaggedness_corrected"
    how = "logits, sampling noise removed" if corrected else "logits; raw: no item counts to remove the noise"
    n = len(adjusted)
    rho = analysis.level_correlations[column].get("cv_error", math.nan)
    out = []
    picks = [("Most jagged", adjusted.iloc[0])] + ([("Least jagged", adjusted.iloc[-1])] if n > 1 else [])
    values = pd.Series(adjusted[column].to_numpy(dtype=float), index=adjusted["model"].to_numpy(dtype=object))
    for label, row in picks:
        value = float(row[column])
        detail = [how]
        lo, hi = (row.get("relative_jaggedness_lo", math.nan), row.get("relative_jaggedness_hi", math.nan)) \
            if corrected else (math.nan, math.nan)
        if _finite(lo) and _finite(hi):
            detail.append(f"{_level(analysis)} interval {float(lo):.2f} to {float(hi):.2f}")
        flag = row.get("relative_noise_flag", pd.NA)
        if flag is not pd.NA and not pd.isna(flag) and bool(flag):
            detail.append("within sampling noise")
        if n == 1:
            where = "the only model with a relative jaggedness"
        elif label == "Most jagged":
            where = f"the most uneven of the {n:,} models once its level and each domain's difficulty are taken out"
        else:
            where = "the most even once level and difficulty are taken out"
        sentence = (f"{row['model']}: relative jaggedness {value:.2f} ({'; '.join(detail)}); {where} "
                    f"(macro score {float(row['macro_score']):.3f}; cv_error {float(row['cv_error']):.3f}).")
        rests, domain = _rests_on(analysis, column, values, row["model"], largest=label == "Most jagged",
                                  what="relative jaggedness")
        sentence += rests
        raw = rows.iloc[0] if label == "Most jagged" else rows.iloc[-1]
        if n > 1 and str(raw["model"]) != str(row["model"]):
            word = "most" if label == "Most jagged" else "least"
            sentence += (f" By the raw cv_error the {word} jagged is {raw['model']} "
                         f"(cv_error {float(raw['cv_error']):.3f}; macro score {float(raw['macro_score']):.3f})")
            sentence += (f"; cv_error rises with the level (rank correlation {rho:+.2f} with the macro score)."
                         if _finite(rho) and label == "Most jagged" else ".")
        elif n > 1:
            sentence += f" It is also the {'most' if label == 'Most jagged' else 'least'} jagged by the raw cv_error."
        out.append(Finding("jaggedness", label, sentence, subject=str(row["model"]), statistic=column, value=value,
                           lo=float(lo) if _finite(lo) else math.nan, hi=float(hi) if _finite(hi) else math.nan,
                           rests_on=domain))
    return out


def noise_finding(analysis: Any) -> Finding:
    """Whether the jaggedness is distinguishable from sampling noise (``noise_flag``); always says something.

    ``count`` = models distinguishable from noise, ``total`` = models with a noise estimate;
    without item counts the sentence says noise could not be checked.
    """
    rows = _per_model(analysis.table)
    known = rows[rows["noise_share"].notna()] if "noise_share" in rows else rows.iloc[:0]
    if not analysis.sections.get("noise") or known.empty:
        return Finding("noise", "Sampling noise", "Cannot be assessed: the scores carry no item counts "
                       "(n_items), so some of the spread of errors may be chance and there are no intervals.",
                       statistic="noise_flag")
    flagged = known[known["noise_flag"].fillna(False).astype(bool)]
    n, k = len(known), len(flagged)
    clear = n - k
    if k == 0:
        sentence = (f"For all {n:,} models the jaggedness is larger than sampling noise alone would produce.")
    elif clear == 0:
        sentence = (f"For none of the {n:,} models can the jaggedness be told apart from sampling noise: "
                    "the domains have too few items to show it. Read cv_error as an upper bound.")
    else:
        sentence = (f"For {clear:,} of {n:,} models the jaggedness is larger than sampling noise alone would "
                    f"produce; for {k:,} ({listing(flagged['model'].tolist(), 3)}) it cannot be told apart from "
                    "noise.")
    unknown = len(rows) - n
    if unknown:
        sentence += f" {unknown:,} model{'s have' if unknown != 1 else ' has'} no item counts."
    return Finding("noise", "Sampling noise", sentence, statistic="noise_flag", count=float(clear), total=float(n))


def profiles_finding(analysis: Any) -> Finding | None:
    """The largest |wedge| and the profile behind it (None without profiles; the ``uniform`` profile left out)."""
    if not analysis.sections.get("profiles"):
        return None
    table = analysis.table
    rows = table[table["wedge"].notna() & ~table["profile"].astype(str).isin(NEUTRAL_PROFILES)]
    if rows.empty:
        return None
    order = rows.assign(_abs=rows["wedge"].abs()).sort_values(["_abs", "model", "profile"],
                                                            ascending=[False, True, True], kind="mergesort")
    row = order.iloc[0]
    wedge = float(row["wedge"])
    direction = "overstates" if wedge > 0 else "understates"
    kind = " (illustrative, not measured traffic)" if analysis.illustrative else ""
    interval = _interval_text(row, analysis, "wedge")
    sentence = (f"{wedge:+.3f} for {row['model']} under the profile {row['profile']}{kind}: the benchmark "
                f"average {direction} the score this task mix would see by {abs(wedge) * 100:.1f} percentage "
                f"points (macro {float(row['macro_score']):.3f}, deployment-weighted "
                f"{float(row['dep_score']):.3f}{'; ' + interval if interval else ''}).")
    labels = pd.MultiIndex.from_arrays([rows["model"].to_numpy(dtype=object), rows["profile"].to_numpy(dtype=object)])
    magnitudes = pd.Series(rows["wedge"].abs().to_numpy(dtype=float), index=labels)
    rests, domain = _rests_on(analysis, "wedge", magnitudes, (row["model"], row["profile"]), largest=True,
                              what="wedge", digits=3, absolute=True)
    return Finding("profiles", "Largest wedge", sentence + rests, subject=f"{row['model']} under {row['profile']}",
                   statistic="wedge", value=wedge, lo=float(row.get("wedge_lo", math.nan)),
                   hi=float(row.get("wedge_hi", math.nan)), rests_on=domain)


def items_finding(analysis: Any) -> Finding | None:
    """How many items the item audit flags, from :func:`jagged.views.item_audit.items_glance`."""
    if not analysis.sections.get("items"):
        return None
    from jagged.views.item_audit import items_glance

    parts = items_glance(analysis)
    return None if parts is None else Finding("items", **parts)


def irt_finding(analysis: Any) -> Finding | None:
    """Which model sits beyond the most domains' measuring ranges, from :func:`jagged.views.irt.beyond_glance`."""
    if not analysis.sections.get("irt"):
        return None
    from jagged.views.irt import beyond_glance

    parts = beyond_glance(analysis.information)
    return None if parts is None else Finding("irt", **parts)


def decomposition_finding(analysis: Any) -> Finding | None:
    """How much of the jaggedness is model-specific (:func:`structure_finding`); None if the section does not apply."""
    if not analysis.sections.get("decomposition"):
        return None
    sentence, statistic, value = structure_finding(analysis.structure)
    return Finding("decomposition", "Model or benchmark", sentence, statistic=statistic, value=value)


def structure_finding(structure: Any) -> tuple[str, str, float]:
    """(sentence, statistic, value): how much of the unevenness is model-specific.

    ``statistic`` is ``"residual_beyond_noise"`` (the share of the variance of the logit error
    rates the model × domain residual carries beyond sampling noise), or ``"residual"``
    without item counts. The sentence adds the level and difficulty shares and the number of
    dimensions; when 0 % is beyond noise it says how many models still show unevenness beyond
    noise by their own test (``relative_noise_flag``).
    """
    value, net = model_specific_part(structure)
    statistic = "residual_beyond_noise" if net else "residual"
    levels = (f"the models' level carries {percent(structure.share('model'))} and the domains' difficulty "
              f"{percent(structure.share('domain'))}.")
    if net and value < ZERO_PART:
        models = structure.models
        flags = models["relative_noise_flag"].astype("boolean")
        tested = int(flags.notna().sum())
        clear = int((~flags).fillna(False).sum())
        sentence = (f"Across the table the model × domain residual ({percent(structure.share('residual'))} of the "
                    f"variance of the error rates) is no larger than sampling noise would produce, so 0 % is "
                    f"model-specific beyond noise; {levels}")
        if clear:
            sentence += (f" Tested one by one, {clear} of {tested} models still show unevenness of their own "
                         "beyond noise.")
    else:
        kind = "beyond sampling noise" if net else "with sampling noise included (no item counts to separate it)"
        sentence = (f"{percent(value)} of the variance of the error rates is model-specific unevenness {kind}, "
                    f"a {size_word(value)} part; {levels}")
    dims = structure.dimensions
    if dims.n_dimensions is not None:
        sentence += (f" Parallel analysis keeps {plural(dims.n_dimensions, 'dimension')} (the first carries "
                     f"{dims.first_share:.0%} of the variance")
        sentence += ")." if not dims.rank_deficient else f"; fewer models than domains, rank at most {dims.rank})."
    return sentence, statistic, float(value)


#: The glance's contributors, in report order: (section, function). See the module notes.
CONTRIBUTORS: tuple[tuple[str, Contributor], ...] = (
    ("jaggedness", jaggedness_findings),
    ("noise", noise_finding),
    ("profiles", profiles_finding),
    ("items", items_finding),
    ("irt", irt_finding),
    ("decomposition", decomposition_finding),
)


# --------------------------------------------------------------------------- assembly and display


def glance(analysis: Any, contributors: Sequence[tuple[str, Contributor]] = CONTRIBUTORS) -> list[Finding]:
    """Every contributor's findings, in order; a value outside its printed interval is an internal error."""
    out: list[Finding] = []
    for _, contribute in contributors:
        found = contribute(analysis)
        if found is None:
            continue
        out.extend([found] if isinstance(found, Finding) else list(found))
    for finding in out:  # invariant: a value printed with an interval lies in it
        if outside(finding.value, finding.lo, finding.hi):
            raise RuntimeError(f"internal check failed: the glance's {finding.label!r} gives {finding.statistic} "
                               f"{finding.value:.6g} outside its interval [{finding.lo:.6g}, {finding.hi:.6g}]")
    return out


def glance_table(findings: Sequence[Finding]) -> pd.DataFrame:
    """The findings as a tidy table: one row per finding, the columns of :class:`Finding`."""
    columns = [f.name for f in fields(Finding)]
    return pd.DataFrame([asdict(f) for f in findings], columns=columns)


def glance_html(findings: Sequence[Finding]) -> str:
    """An escaped HTML list of the findings (``<ul class="glance">``, one ``<li>`` each)."""
    items = [f'<li data-section="{html.escape(f.section, quote=True)}"><strong>{html.escape(f.label)}.</strong> '
             f"{html.escape(f.sentence)}</li>" for f in findings]
    return '<ul class="glance">\n' + "\n".join(items) + "\n</ul>"


def glance_text(findings: Sequence[Finding]) -> str:
    """The plain-text twin of :func:`glance_html`."""
    return "\n".join(f"- {f.label}. {f.sentence}" for f in findings)


def show_glance(analysis: Any) -> None:
    """Display the glance of an analysis (HTML with a plain-text twin)."""
    from IPython.display import display

    findings = glance(analysis)
    display({"text/html": glance_html(findings), "text/plain": glance_text(findings)}, raw=True)


def show_record(analysis: Any) -> None:
    """Display the report's record for REPORT.json: the glance's findings and the metrics table.

    The output carries only :data:`jagged.views.display.RECORD_MIME` (nothing to see); the
    renderer leaves it out of the HTML and :mod:`jagged.report.record` writes it.
    """
    from IPython.display import display


    display({RECORD_MIME: {"glance": json_records(glance_table(glance(analysis))),
                           "metrics": json_records(analysis.table)}}, raw=True)
