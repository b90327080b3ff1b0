"""Tables and sentences of the item response model: where each domain measures, which items look flawed.

They choose, order and word what :mod:`jagged.stats.irt`, :mod:`jagged.stats.information`
and :mod:`jagged.stats.flaw` return (``Analysis.item_model``, ``information``, ``flaws``);
names go in as they are (:mod:`jagged.views.display` escapes them).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from jagged.stats.information import DomainInformation
from jagged.stats.irt import EXTREME_DIFFICULTY, WEAK_LOADING, IRTFit
from jagged.text import listing, plural
from jagged.views.overview import LEGEND_MAX

#: Formats of :func:`range_table`.
RANGE_FORMATS: dict[str, str] = {"measures best at θ": "{:+.2f}", "SE there": "{:.2f}"}
#: Formats of :func:`flaw_table`.
FLAW_FORMATS: dict[str, str] = {"accuracy": "{:.0%}", "miskeyed shown": "{:.1f}", "expected flawed": "{:.1f}"}
#: Formats of :func:`model_position`.
POSITION_FORMATS: dict[str, str] = {"ability θ": "{:+.2f}", "SD": "{:.2f}", "SE at θ": "{:.2f}"}
#: What the reports say when the item-level results are too large for the item response model's matrix.
NOT_FITTED = ("The item response model was not fitted: its models × items matrix is larger than the in-memory "
              "budget (select models or domains to fit it). The item audit above is the classical one.")
#: How many names a sentence lists before "and N more".
NAMES_SHOWN = 4

def _span(lower: float, upper: float) -> str:
    lo = f"{lower:+.2f}" if np.isfinite(lower) else "below −4"
    hi = f"{upper:+.2f}" if np.isfinite(upper) else "above +4"
    return f"{lo} to {hi}"


def range_table(info: DomainInformation) -> pd.DataFrame:
    """Per domain: where it measures best, its half-peak range, and the models beyond it (report table).

    ``fitted items`` leaves out those every model answers alike; ``SE there`` is 1/√ of the
    peak information; ``measuring range`` is where the information is at least half its peak;
    ``models above`` / ``below`` list names ("—": none). Most models beyond first.
    """
    ranges, places = info.ranges, info.places

    def listed(position: str, ascending: bool) -> pd.Series:
        part = places[places["position"] == position].sort_values("theta", ascending=ascending, kind="mergesort")
        return part.groupby("group", sort=False)["model"].agg(lambda m: ", ".join(m.astype(str)))

    above, below = listed("above", False), listed("below", True)
    beyond = places["position"].ne("within").groupby(places["group"]).sum()
    table = pd.DataFrame({"domain": ranges["group"].to_numpy(dtype=object),
                          "fitted items": ranges["n_items"].to_numpy(),
                          "measures best at θ": ranges["theta_peak"].to_numpy(float),
                          "SE there": ranges["se_at_peak"].to_numpy(float),
                          "measuring range": [_span(lo, hi) for lo, hi in zip(ranges["lower"], ranges["upper"])],
                          "models above": ranges["group"].map(above).fillna("—").to_numpy(dtype=object),
                          "models below": ranges["group"].map(below).fillna("—").to_numpy(dtype=object),
                          "_beyond": ranges["group"].map(beyond).fillna(0).to_numpy()})
    table = table.sort_values("_beyond", ascending=False, kind="mergesort")
    return table.drop(columns="_beyond").reset_index(drop=True)


def information_sentences(info: DomainInformation) -> list[str]:
    """What the information curves say in two or three sentences: the lowest and highest peaks, the models beyond a
    range."""
    ranges = info.ranges[np.isfinite(info.ranges["theta_peak"].to_numpy(float))]
    if not len(ranges):
        return ["No domain has an item the model could fit, so no domain's information is shown."]
    low = ranges.loc[ranges["theta_peak"].idxmin()]
    high = ranges.loc[ranges["theta_peak"].idxmax()]
    out = [f"Each domain's items measure most precisely near the middle of its models: the peaks run from "
           f"θ = {low['theta_peak']:+.2f} ({low['group']}, its items easiest for its models) to "
           f"θ = {high['theta_peak']:+.2f} ({high['group']}, hardest)."]
    beyond = info.places[info.places["position"] != "within"]
    if not len(beyond):
        out.append("Every model sits within every domain's measuring range: the items can tell all of them apart.")
        return out
    n_models = info.places["model"].nunique()
    counts = beyond.groupby(["model", "position"], sort=False).size().rename("n").reset_index()
    counts = counts.sort_values(["n", "model"], ascending=[False, True], kind="mergesort")
    for position in ("above", "below"):
        part = counts[counts["position"] == position]
        if not len(part):
            continue
        listed = [f"{m} ({plural(int(n), 'domain')})" for m, n in zip(part["model"].astype(str), part["n"])]
        word = ("above a domain's range: its items are too easy for them, and their abilities there rest on few "
                "informative items" if position == "above" else
                "below a domain's range: its items are too hard for them, so their abilities there are uncertain")
        verb = "sits" if len(part) == 1 else "sit"
        out.append(f"{plural(len(part), 'model')} of {n_models} {verb} {word}: {listing(listed, NAMES_SHOWN)}.")
    return out


def beyond_glance(info: DomainInformation | None) -> dict[str, Any] | None:
    """The "At a glance" parts of "Where each domain measures": the model beyond the most domains' ranges.

    ``count`` = domains whose range the model sits beyond, ``total`` = its domains; None
    without a fit; count 0 and no subject when every model sits within every range.
    """
    if info is None or not len(info.places):
        return None
    places = info.places
    beyond = places["position"].ne("within").groupby(places["model"], sort=False).sum()
    totals = places.groupby("model", sort=False).size()
    if int(beyond.max()) == 0:
        return {"label": "Where domains measure", "sentence": "Every model sits within every domain's measuring "
                "range: the items can tell all of them apart.", "subject": "", "statistic": "domains_beyond_range",
                "count": 0.0, "total": float(totals.max())}
    order = pd.DataFrame({"n": beyond.to_numpy(), "name": beyond.index.astype(str)})
    model = order.sort_values(["n", "name"], ascending=[False, True], kind="mergesort")["name"].iloc[0]
    beyond.index, totals.index = beyond.index.astype(str), totals.index.astype(str)
    mine = places[(places["model"].astype(str) == model) & places["position"].ne("within")]
    above = int((mine["position"] == "above").sum())
    side = ("above" if above == len(mine) else "below" if above == 0 else "beyond")
    n, total = int(beyond[model]), int(totals[model])
    return {"label": "Where domains measure", "sentence": f"{model} sits {side} the measuring range of {n} of "
            f"{total} domains.", "subject": model, "statistic": "domains_beyond_range",
            "count": float(n), "total": float(total)}


def information_alt(info: DomainInformation) -> str:
    """Alt text of :func:`jagged.plots.irt.information_plot` for the report's data."""
    ranges = info.ranges[np.isfinite(info.ranges["theta_peak"].to_numpy(float))]
    n_beyond = int((info.places["position"] != "within").sum())
    n = len(info.ranges)
    if n > LEGEND_MAX:
        text = (f"Line charts, one panel per domain ({n}), on shared axes: test information (up) against "
                "ability θ (across, −4 to 4), each model drawn as a tick at the foot of the panel.")
    else:
        text = (f"Line chart: test information (up) against ability θ (across, −4 to 4) for "
                f"{plural(n, 'domain')}, one line each, with each model drawn as a tick below the lines "
                f"in its domain's colour.")
    if len(ranges):
        top = ranges.loc[ranges["peak_information"].idxmax()]
        text += (f" The most informative domain is {top['group']} (peak {top['peak_information']:.0f} at "
                 f"θ = {top['theta_peak']:+.2f}).")
    text += (f" {plural(n_beyond, 'model–domain pair')} of {len(info.places)} lie beyond the domain's measuring "
             "range; the table below names them.")
    return text


def loading_sentence(fit: IRTFit) -> str:
    """How many items the item response model flags, one sentence (plain text)."""
    items = fit.items
    n = len(items)
    aside = int(items["flag_zero_variance"].sum())
    neg = int(items["flag_negative_loading"].sum())
    weak = int(items["flag_weak_loading"].sum())
    extreme = int(items["flag_extreme_difficulty"].sum())
    return (f"Of {n:,} items, {aside:,} are set aside because every model answers them alike; of the rest, "
            f"{neg:,} have a negative loading (the weaker models do better: a wrong key is the usual cause), "
            f"{weak:,} a weak one (below {WEAK_LOADING:g}) and {extreme:,} an extreme difficulty "
            f"(|b| > {EXTREME_DIFFICULTY:g}, PISA's rule).")


def loading_alt(fit: IRTFit) -> str:
    """Alt text of :func:`jagged.plots.irt.loading_difficulty_plot` for the report's data."""
    items = fit.items
    shown = int(np.isfinite(items["loading"].to_numpy(float)).sum())
    flagged = int((items["flag_negative_loading"] | items["flag_weak_loading"]
                   | items["flag_extreme_difficulty"]).sum())
    return (f"Scatter plot: one dot per item ({shown:,} fitted), difficulty b across (−6 to 6, beyond drawn at the "
            f"edge) and standardised loading up (−1 to 1); {flagged:,} items with a negative or weak loading or an "
            f"extreme difficulty are red. Lines mark loading 0 and {WEAK_LOADING:g} and difficulty ±"
            f"{EXTREME_DIFFICULTY:g}.")


def flagged_by_model(fit: IRTFit) -> pd.Series:
    """Per item (in ``fit.items`` order): whether the item response model flags it (negative, weak, extreme)."""
    items = fit.items
    return (items["flag_negative_loading"] | items["flag_weak_loading"]
            | items["flag_extreme_difficulty"]).astype(bool)


def flaw_table(flaws: Any) -> pd.DataFrame:
    """Expected flawed items per domain with intervals (report table), most first.

    ``accuracy`` is the share of answers scored right, ``miskeyed shown`` the expected number of
    miskeyed items the responses show, ``expected flawed`` every flaw (also those responses
    cannot show), each with its interval at the posterior's level.
    """
    d = flaws.domains.sort_values(["expected_flawed", "domain"], ascending=[False, True], kind="mergesort")

    def span(lo: pd.Series, hi: pd.Series) -> list[str]:
        return [f"{a:,.0f} – {b:,.0f}" for a, b in zip(lo, hi)]

    return pd.DataFrame({"domain": d["domain"].to_numpy(dtype=object), "items": d["n_items"].to_numpy(),
                         "accuracy": d["accuracy"].to_numpy(float), "miskeyed shown": d["visible"].to_numpy(float),
                         "shown interval": span(d["visible_lower"], d["visible_upper"]),
                         "expected flawed": d["expected_flawed"].to_numpy(float),
                         "interval": span(d["lower"], d["upper"])})


def flaw_sentence(flaws: Any) -> str:
    """The expected number of flawed items with its interval, what it rests on, in two sentences (plain text)."""
    d, t = flaws.domains, flaws.total
    if not len(d):
        return "There are no items to estimate flaws for."
    top = d.loc[d["expected_flawed"].idxmax()]
    level = f"{flaws.level:.0%}"
    return (f"About {t['expected_flawed']:,.0f} of {t['n_items']:,} items are expected to be flawed ({level} interval "
            f"{t['lower']:,.0f} – {t['upper']:,.0f}); the most in {top['domain']}: {top['expected_flawed']:.0f} "
            f"({top['lower']:.0f} – {top['upper']:.0f}) of {int(top['n_items']):,}. Of them about "
            f"{t['visible']:,.0f} are miskeyed items the responses show; the rest is an assumption, not a measurement: "
            "published audits find about as many flaws of wording, which models answer alike and no response "
            "pattern can show, as flaws of the answer, and the interval carries that uncertainty.")


def agreement_table(flaws: Any) -> pd.DataFrame:
    """Per model: agreement with the file's key on likely miskeyed items, against its peers (report table).

    ``agrees with key`` (weighted share of key choices), ``peers``, ``expected`` (from its
    ability and the others' answers), ``z``, ``q`` (Benjamini–Hochberg), ``finding``.
    """
    m = flaws.models
    return pd.DataFrame({"model": m["model"].to_numpy(dtype=object), "agrees with key": m["agree"].to_numpy(float),
                         "peers": m["agree_peers"].to_numpy(float), "expected": m["agree_expected"].to_numpy(float),
                         "z": m["z"].to_numpy(float), "q": m["q_value"].to_numpy(float),
                         "finding": np.where(m["flagged"], "agrees with likely wrong keys", "—")})


#: Formats of :func:`agreement_table`.
AGREEMENT_FORMATS: dict[str, str] = {"agrees with key": "{:.0%}", "peers": "{:.0%}", "expected": "{:.0%}",
                                     "z": "{:+.1f}", "q": "{:.3f}"}


def agreement_sentence(flaws: Any) -> str:
    """Which models agree with likely wrong keys beyond chance, in one sentence (plain text)."""
    m = flaws.models
    if not len(m):
        return "Without choices and keys, agreement with likely wrong keys cannot be checked."
    flagged = m[m["flagged"]]
    if not len(flagged):
        return (f"No model agrees with the keys of likely miskeyed items more than its ability and its peers explain "
                f"(Benjamini–Hochberg over {plural(len(m), 'model')}).")
    listed = [f"{r.model} ({r.agree:.0%} against {r.agree_peers:.0%} for its peers)" for r in flagged.itertuples()]
    verb = "agrees" if len(flagged) == 1 else "agree"
    return (f"{listing(listed, NAMES_SHOWN)} {verb} with likely wrong keys more than ability and peers explain: "
            "possible contamination or training on this benchmark (a reason to look, not a verdict).")


def _places(info: DomainInformation, model: str) -> pd.DataFrame:
    """The model's rows of :attr:`DomainInformation.places`: beyond the range first, then the fit's order."""
    places = info.places[info.places["model"].astype(str) == str(model)]
    return places.assign(_o=(places["position"] == "within").astype(int)).sort_values("_o", kind="mergesort")


def model_position(info: DomainInformation, model: str) -> pd.DataFrame:
    """One model on every domain's information curve (per-model report table).

    ``ability θ`` (EAP) with its ``SD``, ``measuring range``, ``position`` (above / below /
    within), ``SE at θ`` (1/√ of the information there); beyond the range first.
    """
    places, r = _places(info, model), info.ranges.set_index("group")
    return pd.DataFrame({"domain": places["group"].to_numpy(dtype=object),
                         "ability θ": places["theta"].to_numpy(float), "SD": places["theta_sd"].to_numpy(float),
                         "measuring range": [_span(r.at[g, "lower"], r.at[g, "upper"]) for g in places["group"]],
                         "position": places["position"].to_numpy(dtype=object),
                         "SE at θ": places["se"].to_numpy(float)})


def position_data(info: DomainInformation, model: str) -> pd.DataFrame:
    """One model's ``domain, theta, theta_sd, lower, upper, position`` for the position plot, as
    :func:`model_position`."""
    places, r = _places(info, model), info.ranges.set_index("group")
    return pd.DataFrame({"domain": places["group"].to_numpy(dtype=object), "theta": places["theta"].to_numpy(float),
                         "theta_sd": places["theta_sd"].to_numpy(float),
                         "lower": places["group"].map(r["lower"]).to_numpy(float),
                         "upper": places["group"].map(r["upper"]).to_numpy(float),
                         "position": places["position"].to_numpy(dtype=object)})


def position_alt(info: DomainInformation, model: str) -> str:
    """Alt text of :func:`jagged.plots.irt.position_plot` for one model."""
    data = position_data(info, model)
    beyond = data.loc[data["position"] != "within", "domain"].astype(str).tolist()
    return (f"Range chart, one row per domain ({len(data)}): a bar for the abilities the domain measures well, and "
            f"{model}'s ability in it as a dot with its SD. "
            + (f"The dot lies beyond the bar in {plural(len(beyond), 'domain')}: {', '.join(beyond)} (red, top rows)."
               if beyond else "Every dot lies on its bar."))


def describe_position(info: DomainInformation | None, model: str) -> str:
    """Where the model sits on the domains' information curves, said plainly (plain text)."""
    if info is None:
        return ("Without item-level results held in memory (within the in-memory budget) there is no item response "
                "model, so the report cannot say where on each domain's ability scale the model sits.")
    table = model_position(info, model)
    if not len(table):
        return f"{model} has no ability estimate in any domain (no item-level responses)."
    above = table.loc[table["position"] == "above", "domain"].astype(str).tolist()
    below = table.loc[table["position"] == "below", "domain"].astype(str).tolist()
    if not above and not below:
        return (f"{model} sits within every domain's measuring range ({plural(len(table), 'domain')}): the items "
                "measure its ability there about as precisely as they measure any model's.")
    parts = []
    if above:
        parts.append(f"beyond the range, above it, in {plural(len(above), 'domain')} ({', '.join(above)}): those "
                     "domains' items are too easy for it, so its ability there is measured imprecisely (see its SD)")
    if below:
        parts.append(f"beyond the range, below it, in {plural(len(below), 'domain')} ({', '.join(below)}): those "
                     "domains' items are too hard for it, and its ability there is uncertain")
    within = len(table) - len(above) - len(below)
    return f"{model} sits " + "; and ".join(parts) + f". It sits within the range in {plural(within, 'domain')}."
