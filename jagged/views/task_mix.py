"""Sentences of the report's task-mix section that name models and profiles (plain text, shown escaped)."""

from __future__ import annotations

import numpy as np
import pandas as pd

ILLUSTRATIVE_NOTE = ("These profiles are illustrative. The jagged developers invented them for the bundled "
                     "MMLU-Pro data to show the mechanism; no organisation's traffic was measured. Run "
                     "jagged report SCORES --weights FILE with your own exposure shares.")


def illustrative_note(illustrative: bool) -> str:
    """The warning shown above illustrative profiles ("" for profiles the user gave)."""
    return ILLUSTRATIVE_NOTE if illustrative else ""


def profiles_caption(illustrative: bool) -> str:
    """Caption of the profiles table."""
    return "Deployment profiles" + (" (illustrative)" if illustrative else "") + ": the heaviest domains and why"


def exposure_heading(focus: str) -> str:
    """Heading of the exposure-against-error figure, naming the model it looks at."""
    return f"Why: exposure against error for {focus}"


def focus_sentence(table: pd.DataFrame, focus: str, requested: str | None = None) -> str:
    """Which model the exposure and drift-bound plots look at, and why (``requested``: the focus_model parameter)."""
    row = table[table["model"].astype(str) == str(focus)].iloc[0]
    why = "chosen with focus_model" if requested else "the highest macro score; set focus_model to look at another"
    return f"The next two figures look at {focus} (macro score {float(row['macro_score']):.3f}; {why})."


def slope_sentence(agreement: pd.DataFrame, profile: str) -> str:
    """Which profile the slope chart draws and how much it reorders the ranking
    (:func:`~jagged.stats.deployment.rank_agreement`)."""
    row = agreement[agreement["profile"].astype(str) == str(profile)].iloc[0]
    tau = float(row["kendall_tau"])
    tau_text = f"Kendall τ {tau:.3f} with the macro ranking" if np.isfinite(tau) else "Kendall τ undefined"
    return (f"The chart shows {profile}, the profile that reorders the ranking most ({tau_text}; "
            f"{int(row['n_rank_changes'])} of {int(row['n_models'])} models change rank, by up to "
            f"{int(row['max_rank_change'])} places).")

