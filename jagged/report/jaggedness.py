"""``jagged report``: the cross-model jaggedness report, and reruns from stored parameters.

Both check and load the input in this process (bad input fails fast), gather the
provenance and run the notebook with :func:`jagged.report.run.run_report`.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Mapping, Sequence

from jagged import options as opts
from jagged.errors import JaggedInputError, JaggedWarning
from jagged.option_checks import check_text
from jagged.report.facts import input_facts, input_subtitle
from jagged.report.notebooks import (
    COMPARE_NOTEBOOK,
    DEFAULT_OUTPUT,
    DEFAULT_TITLE,
    REPORT_NOTEBOOK,
    default_title,
    default_values,
    notebook_name,
    notebook_parameters,
    packaged_notebook,
)
from jagged.report.rendering import version_facts
from jagged.report.rerun import StoredRun, check_input_path, read_parameters
from jagged.report.run import check_destination, run_checked, run_report


#: The first key of every REPORT.json jagged writes, and its value (the format's version).
def validate_input(scores: str | Path | None, options: Mapping[str, Any]) -> Any:
    """Load the input and compute its metrics table (no resampling) here, so bad input fails before the notebook.

    ``options`` by name (:mod:`jagged.options`): loader options go to :func:`jagged.load`,
    analysis options to the table, others are ignored. Returns the :class:`jagged.Dataset`;
    raises :class:`JaggedInputError` for what the loader or the analysis rejects.
    """
    from jagged.analysis import metrics_table
    from jagged.readers.load import load

    dataset = load(scores, **opts.load_kwargs(options))
    # resampling checks no input; the kernel does it once
    metrics_table(dataset, opts.analysis_options(options, bootstrap=0))
    return dataset


def jaggedness_report(scores: str | Path | None = None, output: str | Path = DEFAULT_OUTPUT, *,
                      title: str = DEFAULT_TITLE, show_code: bool = False, **options: Any) -> Path:
    """Write the jaggedness report (``jagged report``).

    Parameters
    ----------
    scores : str or pathlib.Path, optional
        Score input; ``None`` or ``""``: the bundled MMLU-Pro per-category scores.
    output : str or pathlib.Path
        Destination ``.html``; the executed notebook is kept beside it.
    title : str
        Report title.
    show_code : bool
        Show the notebook's code cells.
    **options
        Loader, analysis and display options by name (:mod:`jagged.options`),
        ``sections`` (comma-separated :data:`jagged.options.REPORT_SECTIONS`; default all),
        ``level="item"`` for the bifactor section and ``external`` (a table of models) for it.

    Returns
    -------
    pathlib.Path
        The HTML file.

    Raises
    ------
    JaggedInputError
        Before the notebook runs: an option outside its type and bounds, SCORES or weights
        that are no regular file or folder, a bad title, what loading and analysis reject.
    ReportError
        The notebook failed.
    TypeError
        A keyword that is no option (the closest one suggested).
    """
    opts.check_keywords(options, "jaggedness_report", [*opts.BY_NAME, "level", "external"])
    output = check_destination(output)
    options = {k: opts.check_value(k, v) for k, v in options.items()}
    sections = opts.parse_sections(options.pop("sections", None))
    title = check_text("the title", title) or DEFAULT_TITLE
    check_input_path(scores, "scores")
    check_input_path(options.get("weights"), "weights")
    check_input_path(options.get("external"), "external")
    if options.get("external") and options.get("level") != "item":
        raise JaggedInputError("--external needs --level item")
    if options.get("external") and not Path(options["external"]).is_file():
        raise JaggedInputError(f"--external {options['external']}: no such file")
    source = None if scores in (None, "") else Path(scores)
    return run_checked(lambda: _report_run(source, output, title=title, show_code=show_code, sections=sections,
                                           **options))


def _report_run(source: Path | None, output: Path, *, title: str, show_code: bool,
                sections: Sequence[str] | None = None, **options: Any) -> dict[str, Any]:
    """:func:`jaggedness_report` once the output and options are checked: the input loaded, the run's arguments."""
    bundled = source is None
    dataset = validate_input(source, options)
    if options.get("level") == "item" and not bundled and dataset.items is None:
        raise JaggedInputError(f"--level item: {dataset.source} has no item-level results in memory")
    declared = {p.name for p in notebook_parameters(REPORT_NOTEBOOK)}
    ignored = sorted(set(options) - declared)
    if ignored:
        warnings.warn(f"{REPORT_NOTEBOOK} has no parameter {', '.join(ignored)}; "
                      f"{'that option does' if len(ignored) == 1 else 'those options do'} not reach the report",
                      JaggedWarning, stacklevel=2)
    parameters = {"scores": "" if bundled else str(source.resolve()),
                  **opts.notebook_values({k: v for k, v in options.items() if k in declared})}
    facts = input_facts(dataset, bundled=bundled) + version_facts()
    return {"notebook": REPORT_NOTEBOOK, "html_path": output, "parameters": parameters, "title": title,
            "show_code": show_code, "facts": facts, "subtitle": input_subtitle(dataset), "sections": sections}


def report_from_parameters(source: str | Path | None, output: str | Path, *, notebook: str | None = None,
                           overrides: Mapping[str, Any] | None = None, title: str | None = None,
                           show_code: bool = False) -> Path:
    """Rerun a report from a stored or hand-written parameter set (``jagged report --params``).

    Parameters
    ----------
    source : str, pathlib.Path or None
        YAML file, or a jagged report (``.html`` / ``.ipynb``) holding its parameters; None:
        the notebook's defaults.
    output : str or pathlib.Path
        Destination ``.html``.
    notebook : str, optional
        Notebook to run (default: the stored one, else the cross-model report).
    overrides : mapping, optional
        Parameters replacing the stored ones. Stored capabilities (engine, Spark master,
        input cap) are set aside unless given here (:func:`jagged.options.set_aside_capabilities`).
    title : str, optional
        Default: the stored title, else the notebook's.
    show_code : bool
        Show the code cells.

    Raises
    ------
    JaggedInputError
        Before a kernel starts: unreadable or hostile parameters
        (:func:`~jagged.report.rerun.read_parameters`), a notebook that is not packaged, an
        undeclared parameter, a value out of bounds, SCORES or weights that are no regular
        file or folder, bad input or an unknown model.
    ReportError
        The notebook failed.
    """
    label = "--params " + str(source) if source is not None else "--notebook"
    stored = StoredRun(None, {}) if source is None else read_parameters(source, label)
    if notebook is not None:
        name = packaged_notebook(notebook, "--notebook")
    elif stored.notebook is not None:
        name = packaged_notebook(stored.notebook, label)
    else:
        name = notebook_name(REPORT_NOTEBOOK)
    declared = default_values(name)
    params = opts.check_parameters(stored.parameters, label, declared)
    overrides = dict(overrides or {})
    sections = opts.parse_sections(overrides.pop("sections", None))  # a choice of the page, no parameter
    overrides = opts.check_parameters(overrides, "the command line", declared)
    params = opts.set_aside_capabilities(params, declared, overrides, label)
    for key in opts.PATH_PARAMETERS:  # paths typed now are stored absolute, like the batch's
        if overrides.get(key):
            overrides[key] = str(Path(overrides[key]).resolve())
    params.update(overrides)
    for key in opts.PATH_PARAMETERS:
        check_input_path(params.get(key), key, label if key not in overrides else "")
    title = check_text("the title", title)
    if name == notebook_name(COMPARE_NOTEBOOK):  # two inputs: the compare report checks and loads them
        from jagged.report.compare import compare_report

        a, b = params.pop("a", None) or None, params.pop("b", None) or None
        return compare_report(a, b, output, title=title or stored.title, show_code=show_code, **params)
    scores = params.get("scores") or None
    dataset = validate_input(scores, opts.from_notebook(params))
    if "model" in declared:
        from jagged.views.model_view import resolve_model

        params["model"] = resolve_model(dataset.scores, params.get("model", declared["model"]))
    facts = input_facts(dataset, bundled=scores is None) + version_facts()
    return run_report(name, output, params, title=title or stored.title or default_title(name, params),
                      show_code=show_code, facts=facts, subtitle=input_subtitle(dataset), sections=sections)
