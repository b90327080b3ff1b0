"""``jagged compare``: two runs or releases side by side, and the compare report.

:func:`compare_inputs` loads two inputs (any two jagged reads, with the same loader
options), resolves deployment profiles over the domains of both, and runs
:func:`jagged.stats.compare.compare` once. :func:`compare_notebook` does the same from the
compare notebook's parameters and returns the :class:`~jagged.views.compare.CompareView`
its cells show. :func:`compare_report` checks every parameter and both inputs in this
process (bad input fails fast, before a kernel starts), then runs
``notebooks/compare_report.ipynb`` with :func:`jagged.report.run.run_report`.

The notebook's own parameters ``a``, ``b``, ``alpha``, ``repeats``, ``where_a`` and ``where_b``
are declared in :data:`jagged.options.NOTEBOOK_ONLY` (:data:`COMPARE_ONLY`) and checked like every
option of :mod:`jagged.options`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

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
    """Check compare parameters against their declared types and bounds.

    Parameters
    ----------
    values : mapping
        Parameter name → value (those of :data:`COMPARE_ONLY` and :data:`COMPARE_OPTIONS`).
    source : str
        Start of every message.

    Returns
    -------
    dict
        The values as plain types.

    Raises
    ------
    JaggedInputError
        An unknown name or a value outside its declared type and bounds (one line).
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


def load_side(path: str | Path | None, options: Mapping[str, Any], where: Sequence[str] = (), side: str = "a") -> Any:
    """One side: any input :func:`jagged.load` reads (loader options from ``options``); "" or None: bundled items.

    ``where`` filters this side's rows on top of ``options["where"]`` (``--where-a``/``--where-b``);
    the side is then named after them: ``releases.csv [release=2024-08-31]``.
    """
    if path in (None, ""):
        if where:
            raise JaggedInputError(f"--where-{side}: side {side.upper()} is the bundled item-level responses, which "
                                   "have no such columns; give the input file")
        from jagged.readers.items import load_bundled_items

        return load_bundled_items()
    from jagged.readers.load import load

    kwargs = opts.load_kwargs(options)
    if where:
        kwargs["where"] = (*kwargs.get("where", ()), *where)
    dataset = load(path, **kwargs)
    if where:
        dataset.source = f"{dataset.source} [{', '.join(where)}]"
    return dataset


def check_overlap(a: Any, b: Any) -> None:
    """Refuse two datasets with no model or no domain in common (nothing to compare like for like).

    Raises
    ------
    JaggedInputError
        ``A and B have no model in common: nothing to compare`` (and the same for domains).
    """
    for kind in ("model", "domain"):
        common = set(a.scores[kind].astype(str)) & set(b.scores[kind].astype(str))
        if not common:
            raise JaggedInputError(f"{a.source} and {b.source} have no {kind} in common: nothing to compare")


def profile_weights(a: Any, b: Any, options: Mapping[str, Any]) -> Any:
    """The profiles × domains weights over the domains of both sides (None without profiles).

    ``weights``, ``profiles`` and ``missing_weight`` as in :func:`jagged.analysis.resolve_profiles`
    (which reads the weights file).
    """
    analysis = opts.analysis_options(options)
    if not analysis.weights and not analysis.profiles:
        return None
    import pandas as pd

    from jagged.analysis import resolve_profiles

    both = pd.concat([a.scores.astype({"model": str, "domain": str}), b.scores.astype({"model": str, "domain": str})],
                     ignore_index=True)
    return resolve_profiles(both, analysis.weights, analysis.profiles, analysis.missing_weight)


def compare_inputs(a: str | Path | None, b: str | Path | None, *, alpha: float = 0.05, repeats: bool = False,
                   where_a: Sequence[str] = (), where_b: Sequence[str] = (), **options: Any) -> tuple[Any, Any, Any]:
    """Load two inputs and compare them (``jagged compare A B``).

    Parameters
    ----------
    a, b : str or pathlib.Path
        The earlier and the later run or release: any input :func:`jagged.load` reads
        (``""``/None: the bundled item-level MMLU-Pro responses).
    alpha : float
        False discovery rate of the ledger's ``difficulty_moved``.
    repeats : bool
        A and B are repeated runs of the same models: add the run-to-run noise floor.
    where_a, where_b : sequence of str
        ``COLUMN=VALUE`` row filters of one side (with ``where``, which applies to both):
        ``compare_inputs(f, f, where_a=["release=X"], where_b=["release=Y"])`` compares two
        releases in one file.
    **options
        Loader options (both sides) and analysis options (``weights``, ``profiles``,
        ``missing_weight``, ``bootstrap``, ``seed``, ``ci``) by name (:mod:`jagged.options`).

    Returns
    -------
    (Dataset, Dataset, jagged.stats.compare.Comparison)

    Raises
    ------
    JaggedInputError
        What the loaders reject; no model or no domain in common; weights that do not
        cover the domains of both; ``repeats`` without item-level results on both sides.
    """
    from jagged.stats.compare import compare

    opts.check_keywords(options, "compare_inputs")
    side_a, side_b = load_side(a, options, where_a, "a"), load_side(b, options, where_b, "b")
    check_overlap(side_a, side_b)
    weights = profile_weights(side_a, side_b, options)
    analysis = opts.analysis_options(options)
    comparison = compare(side_a, side_b, weights, n_boot=analysis.bootstrap, seed=analysis.seed, ci=analysis.ci,
                         alpha=alpha, repeats=(side_a, side_b) if repeats else None)
    return side_a, side_b, comparison


def compare_notebook(parameters: Mapping[str, Any]) -> Any:
    """:func:`compare_inputs` from the compare notebook's parameters (its ``globals()``).

    Returns
    -------
    jagged.views.compare.CompareView
        The comparison with the sides' names; shown in the notebook, it records which
        optional sections apply.
    """
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
        The two inputs (see :func:`compare_inputs`).
    output : str or pathlib.Path
        Destination ``.html``; the executed notebook is kept beside it as ``.ipynb``.
    title : str, optional
        Report title (default "What changed: A → B").
    show_code : bool
        Show the notebook's code cells.
    alpha, repeats
        See :func:`compare_inputs`.
    **options
        Loader, analysis and display options (``max_models``, ``theme``) by name.

    Returns
    -------
    pathlib.Path
        The HTML file.

    Raises
    ------
    JaggedInputError
        Before any kernel starts: a parameter outside its type and bounds, an input that is
        not a regular file or folder, what :func:`compare_inputs`'s loading rejects, an
        output that cannot be written.
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
    from jagged.report.facts import input_facts
    from jagged.report.rendering import version_facts

    python = opts.from_notebook(values)
    side_a, side_b = (load_side(python[s], python, python.get(f"where_{s}") or (), s) for s in "ab")
    check_overlap(side_a, side_b)
    profile_weights(side_a, side_b, python)
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
