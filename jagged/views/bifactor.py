"""The item-level structure (a general factor and one per domain) in words and as JSON."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from jagged.text import one_line

#: A domain's own factor counts as a distinct ability when the lower end of its ω_s interval exceeds this.
DISTINCT_OMEGA_S = 0.25
#: Residual correlations listed in the text and the JSON.
TOP_RESIDUALS = 5


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value.item() if hasattr(value, "item") else value


def _records(table: pd.DataFrame) -> list[dict[str, Any]]:
    return [{k: _plain(v) for k, v in row.items()} for row in table.to_dict(orient="records")]


def verdict(fit: Any) -> str:
    """One sentence answering "distinct abilities or one?", with its uncertainty."""
    dom = fit.domains
    models = fit.scores["model"].nunique()
    distinct = dom[dom["omega_s_lo"] > DISTINCT_OMEGA_S]
    head = (f"One general ability carries ω_h = {fit.omega_h:.2f} [{fit.omega_h_lo:.2f}, {fit.omega_h_hi:.2f}] of "
            f"the total score's variance")
    if distinct.empty:
        top = dom.loc[dom["omega_s"].idxmax()]
        tail = (f"; no domain has an own ability with a clear share (largest: {one_line(top['domain'], 40)}, "
                f"ω_s = {top['omega_s']:.2f} [{top['omega_s_lo']:.2f}, {top['omega_s_hi']:.2f}])")
    else:
        names = ", ".join(f"{one_line(r.domain, 40)} (ω_s = {r.omega_s:.2f} [{r.omega_s_lo:.2f}, {r.omega_s_hi:.2f}])"
                          for r in distinct.itertuples())
        tail = f"; distinct abilities beyond it: {names}"
    return (f"{head}{tail}. Intervals are 90 %, from the item parameters' sampling error; with {models} models "
            f"they understate the uncertainty about which models are strong where (factor-score correlations "
            f"carry bootstrap-over-models intervals).")


def bifactor_summary(fit: Any, external: pd.DataFrame | None = None) -> dict[str, Any]:
    """The JSON of ``jagged structure --level item``: ω per domain and test, residual and external correlations."""
    return {
        "level": "item", "models": int(fit.scores["model"].nunique()), "items": int(len(fit.items)),
        "omega_h": {"value": _plain(fit.omega_h), "lo": _plain(fit.omega_h_lo), "hi": _plain(fit.omega_h_hi)},
        "domains": _records(fit.domains),
        "residual_correlations": _records(fit.residual_correlations.head(TOP_RESIDUALS)),
        "external": [] if external is None else _records(external),
        "converged": bool(fit.converged), "cycles": int(fit.cycles),
        "reasons": [{"code": code, **{k: _plain(v) for k, v in fields.items()}} for code, fields in fit.reasons],
        "verdict": verdict(fit),
    }


def bifactor_text(fit: Any, external: pd.DataFrame | None = None) -> str:
    """Plain-text lines for ``jagged structure --level item`` (every name escaped to one line)."""
    lines = [verdict(fit), "", "domain: omega_h, omega_s, rest [90 % intervals]; dimensions (parallel analysis)"]
    for r in fit.domains.itertuples():
        lines.append(f"  {one_line(r.domain, 60)}: {r.omega_h:.2f} [{r.omega_h_lo:.2f}, {r.omega_h_hi:.2f}], "
                     f"{r.omega_s:.2f} [{r.omega_s_lo:.2f}, {r.omega_s_hi:.2f}], {r.rest:.2f}; "
                     f"{'n/a' if r.dimensions is None else r.dimensions} [{r.dimensions_lo:g}, {r.dimensions_hi:g}]")
    lines.append("largest residual correlations of domain factors beyond the general one (EAP scores, shrunk):")
    for r in fit.residual_correlations.head(TOP_RESIDUALS).itertuples():
        pair = f"{one_line(r.domain_a, 40)} ~ {one_line(r.domain_b, 40)}"
        lines.append(f"  {pair}: {r.r:+.2f} [{r.lo:+.2f}, {r.hi:+.2f}]")
    if external is not None:
        lines.append("external correlations (factor score vs column; residual: general component removed):")
        for r in external.itertuples():
            kind = "own" if r.residual else "raw"
            lines.append(f"  {one_line(r.factor, 40)} ({kind}) ~ {one_line(r.column, 40)}: "
                         + ("n/a (too few models)" if pd.isna(r.r) else f"{r.r:+.2f} [{r.lo:+.2f}, {r.hi:+.2f}]")
                         + f", {r.n_models} models")
    return "\n".join(lines)


def omega_alt(fit: Any) -> str:
    """Alt text of :func:`jagged.plots.bifactor.omega_bars`: the chart, and the domains with the largest shares."""
    dom = fit.domains.dropna(subset=["omega_h", "omega_s"])
    text = (f"Stacked horizontal bar chart, one bar per domain ({len(fit.domains)}): the share of the domain's "
            "total-score variance from the general ability, from the domain's own factor, and item-specific.")
    if len(dom):
        g, s = dom.loc[dom["omega_h"].idxmax()], dom.loc[dom["omega_s"].idxmax()]
        text += (f" Largest general share: {one_line(g['domain'], 60)} ({g['omega_h']:.0%}); largest own share: "
                 f"{one_line(s['domain'], 60)} ({s['omega_s']:.0%}).")
    return text


def loading_alt(fit: Any) -> str:
    """Alt text of :func:`jagged.plots.bifactor.loading_scatter`: the chart, and the median loading per domain."""
    items = fit.items.dropna(subset=["general_loading", "difficulty"])
    medians = items.groupby("domain", sort=False)["general_loading"].median()
    text = (f"Scatter plot, one dot per item ({len(items):,}), coloured by domain: general loading (up, −1 to 1) "
            "against difficulty (across).")
    if len(medians):
        text += (f" Highest median loading: {one_line(medians.idxmax(), 60)} ({medians.max():.2f}); lowest: "
                 f"{one_line(medians.idxmin(), 60)} ({medians.min():.2f}).")
    return text


def external_table(external: pd.DataFrame) -> pd.DataFrame:
    """The external correlations for the report: factor, raw or own (general removed), column, r, interval, models."""
    return pd.DataFrame({"factor": external["factor"], "kind": external["residual"].map({True: "own", False: "raw"}),
                         "column": external["column"], "r": external["r"], "90 % lo": external["lo"],
                         "90 % hi": external["hi"], "models": external["n_models"]})
