"""The compare report: two runs or releases side by side.

:func:`compare_notebook` is what the notebook's first cell calls; :func:`compare_report`
checks every parameter and loads both inputs here (bad input fails before a kernel
starts), then runs ``notebooks/compare_report.ipynb``. The notebook's own parameters are
declared in :data:`jagged.options.NOTEBOOK_ONLY`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from jagged import options as opts
from jagged.errors import JaggedInputError
from jagged.option_checks import check_text
from jagged.report.notebooks import COMPARE_NOTEBOOK

DEFAULT_TITLE = "What changed"
DEFAULT_OUTPUT = Path("reports") / "compare_report.html"
#: Parameters of the compare notebook that are no option (declared in :data:`jagged.options.NOTEBOOK_ONLY`).
COMPARE_ONLY: dict[str, opts.Option] = {n: o for n, o in opts.NOTEBOOK_ONLY.items() if o.stage == opts.COMPARE}
#: Options of :mod:`jagged.options` the compare notebook declares (the loader's, the analysis's, two display ones).
COMPARE_OPTIONS: tuple[str, ...] = tuple(n for n in opts.NOTEBOOK_PARAMETERS["compare_report"] if n in opts.BY_NAME)
#: Parameters that name an input file or folder.
PATH_PARAMETERS: tuple[str, ...] = ("a", "b", "weights")


def check_parameters(values: Mapping[str, Any], source: str = "") -> dict[str, Any]:
    """Check compare parameters (:data:`COMPARE_ONLY`, :data:`COMPARE_OPTIONS`) against their types and bounds.

    Returns the values as plain types; raises :class:`JaggedInputError` (one line starting
    with ``source``) for an unknown name or a value out of bounds.
    """
    out: dict[str, Any] = {}
    where = f"{source}: " if source else ""
    for name, value in values.items():
        if name in COMPARE_ONLY:
            out[name] = COMPARE_ONLY[name].check(value, source)
        elif name in COMPARE_OPTIONS:
            out[name] = opts.check_value(name, value, source)
        else:
            raise JaggedInputError(f"{where}unknown parameter {opts.shown(name)} (known: "
                                   f"{', '.join([*COMPARE_ONLY, *COMPARE_OPTIONS])})")
    return out


def compare_notebook(parameters: Mapping[str, Any]) -> Any:
    """:func:`jagged.analysis.compare_inputs` from the compare notebook's ``globals()``, as a CompareView.

    Shown in the notebook, the view records which optional sections apply.
    """
    from jagged.analysis import compare_inputs
    from jagged.views.compare import CompareView

    known = {k: v for k, v in parameters.items() if k in COMPARE_ONLY or k in COMPARE_OPTIONS}
    values = opts.from_notebook(check_parameters(known, "compare notebook"))
    display = {name: values.get(name, opts.BY_NAME[name].surface_default) for name in ("max_models", "theme")}
    rest = {k: v for k, v in values.items() if k not in COMPARE_ONLY}
    side_a, side_b, comparison = compare_inputs(values.get("a") or None, values.get("b") or None,
                                                alpha=values.get("alpha", 0.05),
                                                repeats=bool(values.get("repeats", False)),
                                                where_a=values.get("where_a", ()), where_b=values.get("where_b", ()),
                                                **rest)
    ci = opts.analysis_options(rest).ci
    return CompareView(comparison, name_a=side_a.source, name_b=side_b.source, ci=ci,
                       alpha=values.get("alpha", 0.05), display=display)


def compare_report(a: str | Path | None, b: str | Path | None, output: str | Path = DEFAULT_OUTPUT, *,
                   title: str | None = None, show_code: bool = False, alpha: float = 0.05, repeats: bool = False,
                   **options: Any) -> Path:
    """Write the compare report (``jagged compare A B --report OUT.html``).

    Parameters
    ----------
    a, b : str or pathlib.Path
        The two inputs (see :func:`jagged.analysis.compare_inputs`, also for ``alpha`` and
        ``repeats``).
    output : str or pathlib.Path
        Destination ``.html``; the executed notebook is kept beside it.
    title : str, optional
        Default "What changed: A → B".
    show_code : bool
        Show the notebook's code cells.
    **options
        Loader, analysis and display options by name.

    Raises
    ------
    JaggedInputError
        Before a kernel starts: a parameter out of bounds, an input that is no regular file
        or folder, what loading rejects, an output that cannot be written.
    ReportError
        The notebook failed.
    """
    from jagged.report.rerun import check_input_path
    from jagged.report.run import check_destination, run_checked

    output = check_destination(output)
    values = check_parameters({"a": "" if a is None else str(a), "b": "" if b is None else str(b), "alpha": alpha,
                               "repeats": repeats, **{k: opts.to_notebook(k, v) if k in opts.BY_NAME else v
                                                      for k, v in options.items()}})
    title = check_text("the title", title)
    for name in PATH_PARAMETERS:
        check_input_path(values.get(name), name)
    return run_checked(lambda: _compare_run(values, output, title=title, show_code=show_code))


def _compare_run(values: dict[str, Any], output: Path, *, title: str | None, show_code: bool) -> dict[str, Any]:
    """:func:`compare_report` once its parameters are checked: both sides loaded, the run's arguments."""
    from jagged.analysis import check_overlap, compare_weights, load_side
    from jagged.report.facts import input_facts
    from jagged.report.rendering import version_facts

    python = opts.from_notebook(values)
    side_a, side_b = (load_side(python[s], python, python.get(f"where_{s}") or (), s) for s in "ab")
    check_overlap(side_a, side_b)
    compare_weights(side_a, side_b, python)
    if python["repeats"] and (side_a.items is None or side_b.items is None):
        raise JaggedInputError("--repeats needs item-level results on both sides for the run-to-run noise floor")
    for name in ("a", "b"):  # stored absolute, so a rerun from the report finds them
        if values[name]:
            values[name] = str(Path(values[name]).resolve())
    if values.get("weights"):
        values["weights"] = str(Path(values["weights"]).resolve())
    facts = ([("input", f"{side_a.source} (A) → {side_b.source} (B)", "")]
             + [(f"A: {label}", value, kind) for label, value, kind in input_facts(side_a, bundled=not values["a"])]
             + [(f"B: {label}", value, kind) for label, value, kind in input_facts(side_b, bundled=not values["b"])]
             + version_facts())
    common = len(set(side_a.scores["model"].astype(str)) & set(side_b.scores["model"].astype(str)))
    subtitle = f"{side_a.name} (A) → {side_b.name} (B): {common:,} models on both sides"
    return {"notebook": COMPARE_NOTEBOOK, "html_path": output, "parameters": values,
            "title": title or f"{DEFAULT_TITLE}: {side_a.source} → {side_b.source}", "show_code": show_code,
            "facts": facts, "subtitle": subtitle}
