"""Tables and sentences for "Is it the model or the benchmark?" (report section, per-model report, CLI).

They reshape and phrase :mod:`jagged.stats.structure`'s results: the variance shares, the
relative jaggedness (:func:`relative_column`), the residual grid, the parallel analysis,
the category check and one model's residual profile.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from jagged.stats.decomposition import NOTE_FEW_MODELS, Reason
from jagged.stats.structure import Decomposition, Dimensions, Structure
from jagged.text import and_more, flag_text, listing, plural, printable
from jagged.views.overview import domain_order, left_out, model_order, others_label

#: Columns of :func:`relative_table`, in order (interval columns only when present).
RELATIVE_COLUMNS: tuple[str, ...] = (
    "model", "macro_score", "cv_error", "model_effect", "relative_jaggedness", "relative_jaggedness_corrected",
    "relative_jaggedness_lo", "relative_jaggedness_hi", "relative_noise_share", "relative_noise_flag",
)
#: Most dimensions the scree plot draws; the dimension table has every one.
SCREE_LIMIT: int = 30
_F3 = "{:.3f}"
#: Display formats of the tables below.
SHARE_FORMATS: dict[str, str] = {"variance": "{:.4f}", "share": "{:.1%}"}
RELATIVE_FORMATS: dict[str, str] = {
    "macro_score": "{:.4f}", "cv_error": "{:.4f}", "model_effect": "{:+.3f}", "relative_jaggedness": _F3,
    "relative_jaggedness_corrected": _F3, "relative_jaggedness_lo": _F3, "relative_jaggedness_hi": _F3,
    "relative_noise_share": "{:.0%}",
}
DIMENSION_FORMATS: dict[str, str] = {"eigenvalue": _F3, "threshold": _F3, "share": "{:.1%}"}
PROFILE_FORMATS: dict[str, str] = {
    "error": _F3, "expected_error": _F3, "residual": "{:+.3f}", "residual_lo": "{:+.3f}", "residual_hi": "{:+.3f}",
    "z": "{:+.1f}",
}


#: Below this share of the variance of the logit error rates, the model-specific part is called small;
#: from :data:`LARGE_PART` on, large; between them, moderate (:func:`_meaning_sentence`).
SMALL_PART: float = 0.10
LARGE_PART: float = 0.20
#: A share that rounds to 0 % in the text.
ZERO_PART: float = 0.005


def percent(value: float) -> str:
    """A share as a whole percentage, "unknown" when undefined."""
    return f"{value:.0%}" if np.isfinite(value) else "unknown"


def relative_column(table: pd.DataFrame) -> str:
    """The relative jaggedness a view sorts, selects and plots by: noise-corrected when it exists, else raw.

    ``relative_jaggedness_corrected`` needs item counts; without them (most leaderboard
    tables) it is empty everywhere.
    """
    if "relative_jaggedness_corrected" in table.columns and \
            np.isfinite(pd.to_numeric(table["relative_jaggedness_corrected"], errors="coerce")
                        .to_numpy(dtype=float)).any():
        return "relative_jaggedness_corrected"
    return "relative_jaggedness"


def relative_caption(table: pd.DataFrame) -> str:
    """Caption of :func:`relative_table`: which statistic it is sorted by."""
    if relative_column(table) == "relative_jaggedness_corrected":
        return "Relative jaggedness per model, highest first (sampling noise removed)"
    return ("Relative jaggedness per model, highest first (raw: without item counts the sampling noise cannot be "
            "removed)")


# --------------------------------------------------------------------------- tables

def share_table(structure: Structure) -> pd.DataFrame:
    """The variance shares as a reader's table: ``part``, ``variance`` (logits²), ``share``.

    The cross-term row shows only where the table is unbalanced and it reaches half a percent
    (:func:`cross_sentence` explains it then); on a complete table it is 0.
    """
    shares = structure.shares
    keep = (shares["component"] != "cross") | ((shares["share"].abs() >= ZERO_PART)
                                               & (not structure.decomposition.balanced))
    rows = shares[keep]
    return pd.DataFrame({"part": rows["label"].to_numpy(dtype=object), "variance": rows["variance"].to_numpy(),
                         "share": rows["share"].to_numpy()})


def relative_table(table: pd.DataFrame) -> pd.DataFrame:
    """Per model the :data:`RELATIVE_COLUMNS` present, by :func:`relative_column` (highest first, ties by name).

    Columns empty for every model are left out; ``relative_noise_flag`` reads ``"noise"``,
    ``""`` or ``"not tested"``.
    """
    rows = table.drop_duplicates("model").loc[:, [c for c in RELATIVE_COLUMNS if c in table.columns]]
    by = relative_column(rows)
    rows = rows.sort_values([by, "model"], ascending=[False, True], na_position="last",
                            kind="mergesort").reset_index(drop=True)
    if "relative_noise_flag" in rows.columns:
        rows["relative_noise_flag"] = flag_text(rows["relative_noise_flag"])
    empty = [c for c in rows.columns if c != "model" and rows[c].isna().all()]
    return rows.drop(columns=empty)


def residual_grid(decomposition: Decomposition, scores: pd.DataFrame, metrics: pd.DataFrame, *,
                  limit: int | None = None) -> tuple[pd.DataFrame, int]:
    """The residuals r_md as a models × domains grid (NaN: not fitted) and the summary row's position (0: none).

    Columns in the error heatmap's order (lowest median error first); rows by
    :func:`relative_column` (``cv_error`` without it), highest first. ``limit`` keeps the
    extremes with one row between them, the median residual per domain of the models left out
    (labelled :func:`~jagged.views.overview.others_label`).
    """
    res = pd.DataFrame(decomposition.residual, index=[str(m) for m in decomposition.models],
                       columns=[str(d) for d in decomposition.domains])
    errors = 1.0 - scores.pivot_table(index="model", columns="domain", values="score", aggfunc="first",
                                      observed=True)
    errors.columns = errors.columns.astype(str)
    columns = domain_order(errors, "error")
    by = relative_column(metrics) if "relative_jaggedness" in metrics.columns else "cv_error"
    shown, cut = model_order(metrics, limit=limit, by=by)
    grid = res.reindex(index=shown, columns=columns)
    if cut:
        hidden = left_out(metrics, limit=limit, by=by)
        summary = res.reindex(index=hidden, columns=columns).median(axis=0, skipna=True)
        top, bottom = grid.iloc[:cut], grid.iloc[cut:]
        grid = pd.concat([top, summary.to_frame(others_label(len(hidden))).T, bottom])
    return grid, cut


def dimension_table(dims: Dimensions, *, rows: int | None = None) -> pd.DataFrame:
    """The parallel analysis as a table (the first ``rows``, all by default); ``retained`` shows as "yes"/""."""
    table = dims.table()
    if rows is not None:
        table = table.head(rows)
    return table.assign(retained=np.where(table["retained"], "yes", ""))


def profile_table(profile: pd.DataFrame) -> pd.DataFrame:
    """:func:`jagged.stats.residual_test.residual_profile` with ``departs`` in words.

    ``"weaker than expected"`` (more errors than the level and the domain's difficulty predict,
    beyond sampling noise), ``"stronger than expected"`` or ``""``.
    """
    labels = np.array(["stronger than expected", "", "weaker than expected"], dtype=object)
    return profile.assign(departs=labels[profile["departs"].to_numpy(dtype=int) + 1])


# --------------------------------------------------------------------------- sentences

def _shares_sentence(structure: Structure) -> str:
    dec = structure.decomposition
    n_models = int(dec.fitted.any(axis=1).sum())
    n_domains = int(dec.fitted.any(axis=0).sum())
    model, domain, residual = (structure.share(c) for c in ("model", "domain", "residual"))
    noise = structure.share("noise")
    text = (f"Of the variance of the error rates (on the logit scale) across {n_models} models × {n_domains} "
            f"domains, {percent(model)} is the models' level, {percent(domain)} the domains' difficulty for every "
            f"model, and {percent(residual)} the model × domain residual")
    if not np.isfinite(noise):
        text += " (the sampling noise in it is unknown without item counts)."
    elif noise >= residual:
        text += (f"; sampling noise alone is expected to produce all of that residual (expected noise "
                 f"{percent(noise)} of the variance, the residual {percent(residual)}), so across the table none of "
                 "it stands out beyond noise.")
    else:
        text += (f"; sampling noise alone is expected to produce about {noise / residual:.0%} of that residual "
                 f"({percent(noise)} of the variance), leaving {percent(structure.share('residual_beyond_noise'))} "
                 "beyond noise.")
    order = np.argsort(-np.nan_to_num(dec.domain_effect, nan=-np.inf), kind="mergesort")
    fitted = dec.fitted.any(axis=0)
    hard = [str(dec.domains[j]) for j in order if fitted[j]][:2]
    easy = [str(dec.domains[j]) for j in order[::-1] if fitted[j]][:2]
    if len(hard) == 2 and len(easy) == 2:
        text += f" Hardest for the field: {hard[0]} and {hard[1]}; easiest: {easy[0]} and {easy[1]}."
    return text


def model_specific_part(structure: Structure) -> tuple[float, bool]:
    """The model-specific share of the variance (beyond noise when known, else the whole residual) and whether noise
    was removed."""
    beyond = structure.share("residual_beyond_noise")
    if np.isfinite(beyond):
        return beyond, True
    return structure.share("residual"), False


def size_word(part: float) -> str:
    """``"small"``, ``"moderate"`` or ``"large"``: a model-specific share (:data:`SMALL_PART`, :data:`LARGE_PART`)."""
    if part < SMALL_PART:
        return "small"
    return "moderate" if part < LARGE_PART else "large"


def _meaning_sentence(structure: Structure) -> str:
    part, net = model_specific_part(structure)
    if not np.isfinite(part):
        return ""
    level = structure.share("model") + structure.share("domain")
    size = size_word(part)
    if net and part < ZERO_PART:
        return ("So what cv_error registers is common to the field — which domains are hard, and how good each "
                "model is — and sampling noise: across the table no unevenness particular to a model stands out "
                "beyond noise. Compare models by relative_jaggedness, not by cv_error, and read its noise flag.")
    what = "unevenness particular to a model beyond sampling noise" if net else \
        "model × domain residual, sampling noise included (without item counts the two cannot be separated)"
    if size == "small":
        return (f"So most of what cv_error registers is common to the field — which domains are hard, and how "
                f"good each model is — and only about {percent(part)} is {what}: compare models by "
                f"relative_jaggedness, not by cv_error.")
    if size == "moderate":
        return (f"Level and difficulty explain {percent(level)}; a moderate part, {percent(part)}, is {what}, and "
                f"relative_jaggedness measures it model by model.")
    if net:
        return (f"The model-specific part is large ({percent(part)} beyond sampling noise): models differ in which "
                f"domains they handle, not only in how well; relative_jaggedness and the residual heatmap show "
                f"where.")
    return (f"The model × domain residual is large ({percent(part)}, sampling noise included): models differ in "
            f"which domains they handle, or the domains have few items — item counts (n_items) would tell the "
            f"two apart; relative_jaggedness and the residual heatmap show where.")


def cross_sentence(structure: Structure) -> str:
    """Why the variance shares overlap, when :func:`share_table` shows a cross term ("" otherwise)."""
    table = share_table(structure)
    if not (structure.shares["component"] == "cross").any() or \
            not table["part"].astype(str).str.startswith("cross terms").any():
        return ""
    return (f"The parts overlap by {structure.share('cross'):+.1%} of the variance (the cross-term row): some "
            "models have no score in some domains, so over the cells there are, a model's level and the difficulty "
            "of the domains it was scored on are partly confounded. Level, difficulty, residual and cross terms add "
            "up to 100 %.")


def _relative_sentence(structure: Structure, correlations: dict[str, dict[str, float]] | None) -> str:
    models = structure.models
    known = models[np.isfinite(models["relative_jaggedness_corrected"].to_numpy(dtype=float))]
    if known.empty:
        defined = models[np.isfinite(models["relative_jaggedness"].to_numpy(dtype=float))]
        if defined.empty:
            return ""
        top = defined.sort_values(["relative_jaggedness", "model"], ascending=[False, True], kind="mergesort")
        return (f"Most model-specific unevenness: {listing(top['model'].head(3).astype(str), 3)} (relative "
                f"jaggedness {', '.join(f'{v:.2f}' for v in top['relative_jaggedness'].head(3))} logits); "
                "without item counts sampling noise cannot be separated from it.")
    top = known.sort_values(["relative_jaggedness_corrected", "model"], ascending=[False, True], kind="mergesort")
    head = top.head(3)
    names = ", ".join(f"{r.model} ({r.relative_jaggedness_corrected:.2f})" for r in head.itertuples())
    flags = models["relative_noise_flag"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    flagged = int(flags.sum())
    text = (f"With level, difficulty and expected noise removed, the most model-specific unevenness is that of "
            f"{names} (logits).")
    if flagged:
        text += (f" For {plural(flagged, 'model')} of {len(known)} it cannot be told apart from sampling noise: "
                 f"{listing(models.loc[flags, 'model'].astype(str), 5)}.")
    else:
        text += f" Every one of the {len(known)} models shows some beyond noise."
    if correlations is not None:
        corr = correlations.get("relative_jaggedness_corrected", {})
        rho_cv, rho_rj = corr.get("cv_error", math.nan), corr.get("relative_jaggedness_corrected", math.nan)
        rank = corr.get("rank_agreement", math.nan)
        if np.isfinite(rho_cv) and np.isfinite(rho_rj):
            text += (f" Across models cv_error has a rank correlation of {rho_cv:+.2f} with the macro score and "
                     f"relative jaggedness {rho_rj:+.2f}")
            text += (f"; the two rank the models with a correlation of {rank:+.2f} between them."
                     if np.isfinite(rank) else ".")
    return text


def dimension_sentence(dims: Dimensions) -> str:
    """What the parallel analysis says, in one or two sentences."""
    if dims.n_dimensions is None:
        return "The number of dimensions cannot be estimated: " + (_reasons(dims.reasons) or "too little data") + "."
    p = dims.n_variables
    what = "domains" if dims.variables and len(dims.variables) == p else "variables"
    first = (f"the first eigenvalue ({dims.eigenvalues[0]:.1f} of {p}) carries {dims.first_share:.0%} of the "
             f"variance")
    if np.isfinite(dims.first_to_second):
        first += f", {dims.first_to_second:.1f} times the second"
    test = (f"parallel analysis ({dims.draws} column-permuted data sets, seed {dims.seed}, "
            f"{dims.percentile:.0%} percentile) keeps")
    if dims.n_dimensions == 0:
        text = (f"No dimension stands out: {test} none, {first}. The {what} correlate no more than shuffled data "
                f"would — the models' ranking changes from domain to domain.")
    elif dims.n_dimensions == 1:
        text = (f"One dimension: {test} 1, and {first}. The {what} rank the models nearly the same way, as one "
                f"general ability would; choosing one model for some domains and another for others finds "
                f"little support here beyond the residuals a model's own profile shows.")
    else:
        text = (f"{dims.n_dimensions} dimensions: {test} {dims.n_dimensions}; {first}. The {what} do not all "
                f"measure the same thing, so which model is best can depend on the domains that matter to you.")
    if dims.rank_deficient:
        text += (f" With {dims.n_observations} models for {p} {what} the correlation matrix has rank at most "
                 f"{dims.rank}: at most {dims.rank} dimensions could show, and how the {what} load on them cannot "
                 "be estimated; the count and the first share are what can be said.")
    return text


def category_sentence(structure: Structure) -> str:
    """Whether the categories look like distinct dimensions ("" without categories)."""
    cats = structure.categories
    if cats is None:
        return ""
    n = len(cats.categories)
    if cats.verdict == "undetermined":
        return f"With {n} categories, whether they behave like distinct abilities cannot be told: " + \
            (_reasons(cats.reasons) or "too few models") + "."
    base = (f"After each model's level is removed, domains of the same category correlate {cats.within:+.2f} on "
            f"average and domains of different categories {cats.between:+.2f} (permutation p = "
            f"{cats.p_value:.2g}, {cats.draws} draws)")
    cd = cats.category_dimensions
    extra = ""
    if cd is not None and cd.n_dimensions is not None:
        extra = (f" Parallel analysis of the {len(cd.variables)} category means keeps {cd.n_dimensions} "
                 f"(first share {cd.first_share:.0%}).")
    if cats.verdict == "distinct":
        return base + ": the categories look like distinct abilities, and a model's category profile is worth " \
                      "reading." + extra
    if cats.verdict == "trace":
        return base + ": the categories leave a trace beyond the general level, but not a separate dimension " \
                      "that parallel analysis can find." + extra
    return base + ": the categories do not look like distinct abilities; category labels say little about " \
                  "which model to pick beyond its overall level." + extra


def structure_sentences(structure: Structure, correlations: dict[str, dict[str, float]] | None = None) -> list[str]:
    """Plain sentences saying what the decomposition and the dimensions mean for this data.

    ``correlations`` (:attr:`jagged.analysis.Analysis.level_correlations`) adds how cv_error
    and the relative jaggedness relate to the level. With nothing fitted, the reason.
    """
    dec = structure.decomposition
    if not dec.ok:
        return ["No decomposition: " + _reasons(dec.reasons) + "."]
    out = [_shares_sentence(structure), cross_sentence(structure), _meaning_sentence(structure),
           _relative_sentence(structure, correlations), dimension_sentence(structure.dimensions),
           category_sentence(structure)]
    out += [f"Note: {reason_text(r)}." for r in dec.reasons]
    return [s for s in out if s]


def describe_profile(profile: pd.DataFrame, model: str, *, ci: float = 0.95) -> str:
    """One or two sentences on a model's residual profile (from :func:`profile_table`)."""
    if profile.empty:
        return f"{model} was not part of the decomposition (see its note)."
    weaker = profile[profile["departs"] == "weaker than expected"]
    stronger = profile[profile["departs"] == "stronger than expected"]

    def cells(rows: pd.DataFrame) -> str:
        text = ", ".join(f"{r.domain} ({r.error:.1%} errors where {r.expected_error:.1%} were expected)"
                         for r in rows.head(4).itertuples())
        return text + and_more(len(rows), 4)

    if not np.isfinite(profile["z"].to_numpy(dtype=float)).any():
        top, low = profile.iloc[0], profile.iloc[-1]
        return (f"Given its level and each domain's difficulty for the field, {model} is weakest in "
                f"{top['domain']} ({top['residual']:+.2f} logits) and strongest in {low['domain']} "
                f"({low['residual']:+.2f}); without item counts it cannot be said which departures exceed noise.")
    if weaker.empty and stronger.empty:
        return (f"Given its level and each domain's difficulty for the field, {model} departs from the field in "
                f"none of its {len(profile)} domains beyond sampling noise ({ci:.0%} level over all of them): "
                "its errors follow the common pattern.")
    parts = []
    if len(weaker):
        parts.append(f"more errors than expected in {cells(weaker)}")
    if len(stronger):
        parts.append(f"fewer in {cells(stronger.iloc[::-1])}")
    return (f"Given its level and each domain's difficulty for the field, {model} makes " + ", and ".join(parts)
            + f"; {len(weaker) + len(stronger)} of {len(profile)} domains depart beyond sampling noise ({ci:.0%} "
            "level over all of them).")


def structure_text(structure: Structure) -> str:
    """The plain-text summary ``jagged structure`` prints, control characters in names escaped."""
    dec, dims = structure.decomposition, structure.dimensions
    lines = [f"jagged structure: {plural(len(dec.models), 'model')} x {plural(len(dec.domains), 'domain')}"]
    if dec.ok:
        lines.append("variance of the logit error rates:")
        for row in share_table(structure).itertuples():
            lines.append(f"  {row.part:<50} {row.share:>7.1%}" if np.isfinite(row.share) else
                         f"  {row.part:<50}  unknown")
    lines.append("dimensions (parallel analysis):")
    if dims.n_dimensions is None:
        lines.append("  not computable: " + _reasons(dims.reasons))
    else:
        lines.append(f"  retained: {dims.n_dimensions} of {dims.n_variables}; first share {dims.first_share:.1%}; "
                     f"draws {dims.draws}, seed {dims.seed}, {dims.percentile:.0%} percentile")
        shown = dimension_table(dims, rows=min(dims.n_variables, 6))
        lines.append("  eigenvalue  threshold")
        lines += [f"  {r.eigenvalue:10.3f} {r.threshold:10.3f}{'  *' if r.retained else ''}"
                  for r in shown.itertuples()]
    lines += [f"  {s}" for s in structure_sentences(structure)]
    return "\n".join(printable(line) for line in lines)  # a name is data: its newline never starts a line


def reason_text(reason: Reason) -> str:
    """A :data:`~jagged.stats.decomposition.Reason` of the decomposition, dimensions or category check in words."""
    code, f = reason
    if code == "no_n_items":
        return "the scores do not all carry n_items: the sampling noise is unknown"
    if code == "not_connected":
        return (f"{plural(len(f['models']), 'model')} share no domain with the main table and are not decomposed: "
                f"{listing(f['models'])}")
    if code == "too_small":
        return f"{NOTE_FEW_MODELS}; the table has {plural(f['models'], 'model')} and {plural(f['domains'], 'domain')}"
    if code == "too_few_observations":
        return (f"parallel analysis needs at least 3 observations and 2 variables; there are {f['observations']} "
                f"and {f['variables']}")
    if code == "rank_deficient":
        return (f"rank-deficient: {f['models']} models for {f['domains']} domains, so the correlation matrix has rank "
                f"at most {f['rank']}; at most {f['rank']} dimensions can show, and loadings on several dimensions "
                "cannot be estimated")
    if code == "incomplete_models":
        return (f"{plural(f['models'], 'model')} lacking domains left out of the parallel analysis (it needs complete "
                "rows)")
    if code == "constant_domains":
        return (f"{plural(len(f['domains']), 'domain')} with the same score for every model dropped: "
                f"{listing(f['domains'])}")
    if code == "fewer_draws":
        return (f"{f['draws']} permutation draws instead of {f['default']}, to bound the work on {f['models']} models "
                f"× {f['domains']} domains")
    if code == "too_few_models":
        return ("too few complete models, or no category with 2 domains, to compare correlations within and between "
                "categories")
    if code == "undefined_correlations":
        return "residual correlations undefined"
    return code


def _reasons(reasons: list[Reason]) -> str:
    return "; ".join(reason_text(r) for r in reasons)


def structure_summary(structure: Structure) -> dict:
    """What ``jagged structure --json`` prints: :meth:`Structure.summary` with its reasons in words (``notes``)."""
    out = structure.summary()
    out["notes"] = [reason_text(r) for r in out["notes"]]
    if out["categories"] is not None:
        out["categories"]["notes"] = [reason_text(r) for r in out["categories"]["notes"]]
    return out


# --------------------------------------------------------------------------- alt texts

def shares_alt(structure: Structure) -> str:
    """Alt text of :func:`jagged.plots.structure.variance_bars`."""
    parts = [f"{row.part.strip()} {percent(row.share)}" for row in share_table(structure).itertuples()]
    return "Bar chart of the shares of the variance of the logit error rates: " + "; ".join(parts) + "."


def residual_heatmap_alt(grid: pd.DataFrame, cut: int) -> str:
    """Alt text of :func:`jagged.plots.structure.residual_heatmap`, with its largest cells."""
    values = grid.to_numpy(dtype=float)
    text = (f"Heatmap of model × domain residuals on the logit scale: {plural(len(grid) - (1 if cut else 0), 'model')}"
            f" in rows, highest relative jaggedness on top, {plural(grid.shape[1], 'domain')} in columns (in the "
            "error heatmap's order); red cells "
            "are more errors than the model's level and the domain's difficulty predict, blue fewer, white as "
            "predicted.")
    if np.isfinite(values).any():
        flat = np.nan_to_num(values, nan=0.0)
        hi = np.unravel_index(np.argmax(flat), flat.shape)
        lo = np.unravel_index(np.argmin(flat), flat.shape)
        text += (f" Largest: {grid.index[hi[0]]} in {grid.columns[hi[1]]} ({flat[hi]:+.2f}); most negative: "
                 f"{grid.index[lo[0]]} in {grid.columns[lo[1]]} ({flat[lo]:+.2f}).")
    return text


def relative_alt(table: pd.DataFrame) -> str:
    """Alt text of :func:`jagged.plots.structure.relative_vs_cv` (drawn with ``corrected=None``)."""
    column = relative_column(table)
    rows = table.drop_duplicates("model")
    values = pd.to_numeric(rows[column], errors="coerce").to_numpy(dtype=float) if column in rows else \
        np.full(len(rows), np.nan)
    cv = pd.to_numeric(rows["cv_error"], errors="coerce").to_numpy(dtype=float) if "cv_error" in rows else values
    keep = np.isfinite(values) & np.isfinite(cv)
    defined = rows[keep].assign(_y=values[keep]).sort_values(["_y", "model"], ascending=[False, True],
                                                             kind="mergesort")
    what = "noise removed" if column == "relative_jaggedness_corrected" else \
        "raw: without item counts the sampling noise cannot be removed"
    text = (f"Scatter plot of relative jaggedness (up, logits, {what}) against cv_error (across), one point "
            f"per model ({plural(len(defined), 'model')}).")
    if len(defined):
        text += f" Highest relative jaggedness: {defined.iloc[0]['model']}."
    return text


def scree_shown(eigenvalues: np.ndarray, limit: int | None = SCREE_LIMIT) -> int:
    """How many leading dimensions the scree plot draws.

    Up to the last eigenvalue above 10⁻⁹ of the first (with fewer models than domains the rest
    are 0), at least 2 and at most ``limit`` (None: no limit), never more than there are.
    """
    eig = np.asarray(eigenvalues, dtype=float)
    top = eig[0] if len(eig) and np.isfinite(eig[0]) and eig[0] > 0 else 0.0
    nonzero = int(np.sum(eig > 1e-9 * top)) if top > 0 else len(eig)
    shown = max(2, nonzero) if limit is None else max(2, min(nonzero, int(limit)))
    return min(shown, len(eig))


def scree_alt(dims: Dimensions) -> str:
    """Alt text of :func:`jagged.plots.structure.scree`."""
    if dims.n_dimensions is None:
        return "Scree plot not available."
    shown = scree_shown(dims.eigenvalues)
    which = f"the {dims.n_variables}" if shown == dims.n_variables else f"the first {shown} of the {dims.n_variables}"
    return (f"Scree plot: {which} eigenvalues of the domains' correlation matrix, largest first, "
            f"against the {dims.percentile:.0%} percentile of eigenvalues from column-permuted data; "
            f"{dims.n_dimensions} lie above it; the first is {dims.eigenvalues[0]:.2f}.")


def profile_alt(profile: pd.DataFrame, model: str) -> str:
    """Alt text of :func:`jagged.plots.structure.residual_profile_plot`."""
    if profile.empty:
        return f"No residual profile for {model}."
    top, low = profile.iloc[0], profile.iloc[-1]
    return (f"Dot plot of {model}'s residual in each of {len(profile)} domains, weakest relative to expectation "
            f"first, with sampling intervals and a line at 0: largest {top['domain']} ({top['residual']:+.2f}), "
            f"smallest {low['domain']} ({low['residual']:+.2f}).")
