"""Run a report notebook with papermill and render it to one self-contained HTML file.

The one module for rendering. Three layers, usable on their own:

* :func:`execute` runs any notebook of ``notebooks/`` with a parameter dict (papermill's
  Python API) and writes the executed notebook;
* :func:`render` turns an executed notebook into HTML with the ``templates/jagged``
  nbconvert template: code hidden unless asked for, a header with the title and a
  provenance block, a table of contents, figures embedded with their alt text, no
  script or stylesheet fetched from the network;
* :func:`run_report` does both into a temporary folder beside the destination and moves
  ``PATH.html`` and ``PATH.ipynb`` into place only when both succeed. A failing run
  leaves an earlier report untouched, keeps the failed notebook as
  ``PATH.failed.ipynb`` and raises :class:`ReportError`.

:func:`jaggedness_report` is the ``jagged report`` command: it validates the input in
this process (so bad input fails fast, before a kernel starts), gathers the provenance
and calls :func:`run_report` on ``notebooks/jaggedness_report.ipynb``.

papermill and nbconvert are imported inside the functions that need them, so importing
this module stays cheap.
"""

from __future__ import annotations

import html as html_lib
import os
import re
import shutil
import sys
import tempfile
import threading
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import jagged
from jagged.errors import JaggedInputError, JaggedWarning

ROOT = Path(jagged.__file__).resolve().parent.parent
NOTEBOOKS_DIR = ROOT / "notebooks"
TEMPLATES_DIR = ROOT / "templates"
TEMPLATE_NAME = "jagged"
REPORT_NOTEBOOK = "jaggedness_report.ipynb"
DEFAULT_OUTPUT = Path("reports") / "jaggedness_report.html"
DEFAULT_TITLE = "Jaggedness report"
#: Cells with this tag are left out of the HTML (e.g. the notebook's own title cell).
SKIP_TAG = "report-skip"
KERNEL_NAME = "python3"
#: Versions shown in the provenance block.
VERSIONED = ("pandas", "numpy", "matplotlib", "papermill", "nbconvert")
#: Page themes of the template: light, dark, or the reader's system setting ("auto").
THEMES = ("light", "dark", "auto")


class ReportError(RuntimeError):
    """A report notebook failed to run or render; the message is one short paragraph.

    Attributes
    ----------
    ename : str or None
        Exception type raised in the failing cell, when a cell failed.
    evalue : str or None
        Its message.
    failed_notebook : pathlib.Path or None
        Where the failed executed notebook was kept.
    """

    def __init__(self, message: str, *, ename: str | None = None, evalue: str | None = None,
                 failed_notebook: Path | None = None) -> None:
        super().__init__(message)
        self.ename = ename
        self.evalue = evalue
        self.failed_notebook = failed_notebook


@dataclass(frozen=True)
class Parameter:
    """One line of a notebook's ``parameters`` cell (``name: type = default  # help``)."""

    name: str
    type: str
    default: str
    help: str


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def find_notebook(name: str | Path) -> Path:
    """Resolve a notebook: a bare name (``"model_report"``, ``"x.ipynb"``) in ``notebooks/``.

    A bare name always means the packaged notebook, never a file of that name in the
    current folder (e.g. an executed copy in ``reports/``); anything with a folder part is
    a path.

    Raises
    ------
    FileNotFoundError
        When there is no such notebook.
    """
    path = Path(name)
    if path.suffix != ".ipynb":
        path = path.with_suffix(".ipynb")
    if not path.is_absolute() and path.parent == Path("."):
        path = NOTEBOOKS_DIR / path
    if not path.is_file():
        raise FileNotFoundError(f"no notebook {path}")
    return path


def notebook_parameters(notebook: str | Path) -> list[Parameter]:
    """The parameters a notebook declares in its ``parameters`` cell, in order.

    Parameters
    ----------
    notebook : str or pathlib.Path
        A notebook path or a name in ``notebooks/``.

    Returns
    -------
    list of Parameter
        Name, declared type, default (as source text) and help comment of each line.
    """
    path = find_notebook(notebook).resolve()
    return list(_inspect_parameters(str(path), path.stat().st_mtime_ns))


@lru_cache(maxsize=16)
def _inspect_parameters(path: str, mtime_ns: int) -> tuple[Parameter, ...]:
    """papermill's reading of a parameters cell, once per notebook version."""
    from papermill import inspect_notebook

    found = inspect_notebook(path)
    return tuple(Parameter(name=p["name"], type=p.get("inferred_type_name") or "",
                           default=p.get("default") or "", help=p.get("help") or "") for p in found.values())


def _plain(value: Any) -> Any:
    """Parameter values papermill can write: tuples become lists, paths strings."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def execute(notebook: str | Path, output: str | Path, parameters: Mapping[str, Any] | None = None, *,
            cwd: str | Path | None = None, kernel_name: str = KERNEL_NAME, timeout: float | None = None,
            **engine_kwargs: Any) -> Any:
    """Execute a notebook with papermill and write the executed copy.

    Parameters
    ----------
    notebook : str or pathlib.Path
        Notebook path, or a name in ``notebooks/``.
    output : str or pathlib.Path
        Where the executed notebook goes (also when a cell fails).
    parameters : mapping, optional
        Values for the notebook's ``parameters`` cell. Every name must be declared there.
    cwd : str or pathlib.Path, optional
        Working directory of the kernel (default: this process's).
    kernel_name : str
        Jupyter kernel to run.
    timeout : float, optional
        Per-cell time limit in seconds (default: none).
    **engine_kwargs
        Passed through papermill to :class:`nbclient.NotebookClient` (e.g. ``km`` for a
        warm kernel manager).

    Returns
    -------
    nbformat.NotebookNode
        The executed notebook, with papermill's timing metadata.

    Raises
    ------
    ValueError
        A parameter the notebook does not declare.
    ReportError
        A cell raised; the message names the cell and the error in one paragraph.
    """
    import papermill

    path = find_notebook(notebook)
    parameters = {k: _plain(v) for k, v in (parameters or {}).items()}
    declared = {p.name for p in notebook_parameters(path)}
    unknown = sorted(set(parameters) - declared)
    if unknown:
        raise ValueError(f"{path.name} declares no parameter {', '.join(unknown)} (it has: "
                         f"{', '.join(sorted(declared)) or 'none'})")
    # ipykernel's debugger prints a frozen-modules warning to the kernel's stderr otherwise.
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    engine_kwargs.setdefault("shutdown_kernel", "immediate")
    if "km" not in engine_kwargs and "config" not in engine_kwargs and os.name == "posix":
        engine_kwargs["config"] = _client_config()
    try:
        return papermill.execute_notebook(
            str(path), str(output), parameters=parameters, kernel_name=kernel_name, progress_bar=False,
            request_save_on_cell_execute=False, cwd=None if cwd is None else str(cwd),
            execution_timeout=timeout, **engine_kwargs)
    except papermill.PapermillExecutionError as exc:
        where = f"cell [{exc.exec_count}]" if exc.exec_count is not None else f"cell {exc.cell_index + 1}"
        first = next((line.strip() for line in str(exc.source).splitlines() if line.strip()
                      and not line.strip().startswith("#")), "")
        if first:
            where += f" ({_one_line(first, 60)})"
        message = f"{path.name} failed in {where}: {exc.ename}: {_one_line(exc.evalue)}"
        raise ReportError(message, ename=exc.ename, evalue=str(exc.evalue)) from None


def _client_config() -> Any:
    """nbclient configuration: the kernel talks over local IPC sockets, not TCP.

    IPC keeps the traffic off the network stack (ipykernel warns about unencrypted TCP);
    its socket files live beside the kernel's connection file and are removed on shutdown.
    ZeroMQ has no IPC transport on Windows, where the default (TCP) is kept.
    """
    from traitlets.config import Config

    config = Config()
    config.KernelManager.transport = "ipc"
    return config


def _heading_entries(content: str) -> list[tuple[int, str, str]]:
    """Level, id and text of each ``<h2 id>`` / ``<h3 id>`` in rendered HTML (the TOC)."""
    entries = []
    for level, anchor, inner in re.findall(r'<h([23])\s+id="([^"]+)"[^>]*>(.*?)</h\1>', content, flags=re.S):
        inner = re.sub(r'<a class="anchor-link".*?</a>', "", inner, flags=re.S)
        text = html_lib.unescape(re.sub(r"<[^>]+>", "", inner)).strip()
        entries.append((int(level), html_lib.unescape(anchor), text))
    return entries


@lru_cache(maxsize=4)
def _exporter(show_code: bool) -> Any:
    """One HTMLExporter per setting, reused across renders (its template is compiled once)."""
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    config = Config()
    config.TagRemovePreprocessor.enabled = True
    config.TagRemovePreprocessor.remove_cell_tags = {SKIP_TAG}
    config.HTMLExporter.exclude_input = not show_code
    config.HTMLExporter.exclude_input_prompt = True
    config.HTMLExporter.exclude_output_prompt = True
    exporter = HTMLExporter(config=config, template_name=TEMPLATE_NAME,
                            extra_template_basedirs=[str(TEMPLATES_DIR)])
    exporter.register_filter("jagged_headings", _heading_entries)
    return exporter


def _warm_exporter(show_code: bool) -> None:
    """Import nbconvert and compile the template (run in a thread while the kernel works)."""
    import nbformat

    try:
        _exporter(bool(show_code)).from_notebook_node(nbformat.v4.new_notebook(), resources={"jagged": {}})
    except Exception:  # pragma: no cover - the real render reports any problem
        pass


def run_facts(nb: Any) -> list[tuple[str, str, str]]:
    """Provenance rows from papermill's metadata of an executed notebook (start, duration)."""
    meta = nb.get("metadata", {}).get("papermill", {})
    rows = []
    if meta.get("start_time"):
        rows.append(("run started (UTC)", str(meta["start_time"]).replace("T", " ")[:19], ""))
    if meta.get("duration") is not None:
        rows.append(("run duration", f"{float(meta['duration']):.1f} s", ""))
    return rows


def version_facts() -> list[tuple[str, str, str]]:
    """Provenance rows: versions of jagged, Python and the main libraries."""
    from importlib.metadata import PackageNotFoundError, version

    rows = [("jagged", jagged.__version__, ""), ("Python", sys.version.split()[0], "")]
    for name in VERSIONED:
        try:
            rows.append((name, version(name), ""))
        except PackageNotFoundError:  # pragma: no cover - all are dependencies
            continue
    return rows


def parameter_rows(notebook: str | Path, parameters: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """Each declared parameter with the value it ran with (given, or the notebook default)."""
    rows = []
    for p in notebook_parameters(notebook):
        value = repr(_plain(parameters[p.name])) if p.name in parameters else p.default
        rows.append((p.name, value, p.help))
    return rows


def render(nb: Any, *, title: str, show_code: bool = False, facts: Iterable[Sequence[str]] = (),
           parameters: Iterable[Sequence[str]] = (), subtitle: str | None = None,
           footer: str | None = None, meta: Mapping[str, str] | None = None, theme: str = "light") -> str:
    """Render an executed notebook to a self-contained HTML page.

    Parameters
    ----------
    nb : nbformat.NotebookNode
        An executed notebook (see :func:`execute`).
    title : str
        Page title and heading.
    show_code : bool
        Show code cells (hidden by default).
    facts : iterable of (label, value[, kind])
        Provenance rows; ``kind == "hash"`` sets the value in monospace. Run start and
        duration from papermill's metadata are appended.
    parameters : iterable of (name, value, help)
        Parameter rows (see :func:`parameter_rows`).
    subtitle, footer : str, optional
        A line under the title; a line at the end.
    meta : mapping, optional
        Report metadata (see :mod:`jagged.rerun`): each entry becomes
        ``<meta name="jagged-KEY" content="VALUE">`` in the head; ``parameters`` (YAML)
        is also shown in the provenance block.
    theme : {"light", "dark", "auto"}
        Page colours; ``"auto"`` follows the reader's system setting
        (``prefers-color-scheme``). Figures keep their white background in every theme.

    Returns
    -------
    str
        The HTML. Every title, fact and parameter is autoescaped by the template.

    Raises
    ------
    ValueError
        An unknown theme.
    """
    if theme not in THEMES:
        raise ValueError(f"theme must be one of {', '.join(THEMES)}, not {theme!r}")
    rows = [tuple(f) + ("",) * (3 - len(f)) for f in facts] + run_facts(nb)
    meta = dict(meta or {})
    resources = {"jagged": {"title": title, "subtitle": subtitle, "facts": rows,
                            "parameters": [tuple(p) for p in parameters], "footer": footer,
                            "meta": list(meta.items()), "parameters_yaml": meta.get("parameters"),
                            "theme": theme}}
    body, _ = _exporter(bool(show_code)).from_notebook_node(nb, resources=resources)
    return body


def _failed_path(html_path: Path) -> Path:
    return html_path.with_suffix(".failed.ipynb")


def run_report(notebook: str | Path, html_path: str | Path, parameters: Mapping[str, Any] | None = None, *,
               title: str = DEFAULT_TITLE, show_code: bool = False, facts: Iterable[Sequence[str]] = (),
               subtitle: str | None = None, metadata: Mapping[str, str] | None = None,
               theme: str | None = None, **execute_kwargs: Any) -> Path:
    """Execute a notebook and render it to ``html_path``, atomically; keep the executed notebook.

    Parameters
    ----------
    notebook : str or pathlib.Path
        Notebook path or name in ``notebooks/``.
    html_path : str or pathlib.Path
        Destination ``.html``; the executed notebook goes beside it with the suffix
        ``.ipynb``.
    parameters : mapping, optional
        Notebook parameters (see :func:`execute`).
    title, show_code, facts, subtitle
        See :func:`render`.
    metadata : mapping, optional
        Extra report metadata (e.g. the batch's ``input-hash``). The notebook name, the
        title and the full parameter set (YAML) are always stored, in the HTML head and in
        the kept notebook's ``metadata.jagged``, and the provenance block shows the
        command that reruns the report (see :mod:`jagged.rerun`).
    theme : {"light", "dark", "auto"}, optional
        Page theme (see :func:`render`); by default the notebook's ``theme`` parameter
        when it declares one (so a rerun from stored parameters keeps it), else light.
    **execute_kwargs
        Passed to :func:`execute` (``cwd``, ``timeout``, ``km``, ...).

    Returns
    -------
    pathlib.Path
        ``html_path``.

    Raises
    ------
    ReportError
        The notebook failed. ``html_path`` and its ``.ipynb`` are left as they were; the
        failed executed notebook is kept as ``PATH.failed.ipynb`` (its path is in the
        message and in ``failed_notebook``).

    Notes
    -----
    Both files are written to a temporary folder beside the destination and moved into
    place with :func:`os.replace` only after execution and rendering succeeded. A
    successful run removes a stale ``PATH.failed.ipynb``.
    """
    html_path = Path(html_path)
    if html_path.suffix.lower() not in (".html", ".htm"):
        raise JaggedInputError(f"{html_path}: the report file must end in .html")
    if html_path.is_dir():
        raise JaggedInputError(f"{html_path}: is a directory, expected an .html file path")
    parameters = dict(parameters or {})
    html_path.parent.mkdir(parents=True, exist_ok=True)
    ipynb_path = html_path.with_suffix(".ipynb")
    failed_path = _failed_path(html_path)
    workdir = Path(tempfile.mkdtemp(prefix=f".{html_path.stem[:40]}.", dir=html_path.parent))
    # The kernel runs in another process; prepare the renderer meanwhile. papermill is
    # imported first so the two threads do not import the same modules at once.
    import papermill  # noqa: F401

    warm = threading.Thread(target=_warm_exporter, args=(show_code,), daemon=True)
    warm.start()
    try:
        executed = workdir / "executed.ipynb"
        try:
            nb = execute(notebook, executed, parameters, **execute_kwargs)
        except ValueError:  # an undeclared parameter: a programming error, nothing ran
            raise
        except Exception as exc:
            kept = None
            if executed.exists():
                os.replace(executed, failed_path)
                kept = failed_path
            if isinstance(exc, ReportError):
                message, ename, evalue = str(exc), exc.ename, exc.evalue
            else:
                message = f"{Path(notebook).name} could not run: {type(exc).__name__}: {_one_line(str(exc))}"
                ename, evalue = None, None
            if kept is not None:
                message += f". The executed notebook is kept as {kept}"
            if html_path.exists():
                message += f"; the earlier report {html_path} is unchanged"
            raise ReportError(message, ename=ename, evalue=evalue, failed_notebook=kept) from None
        warm.join()
        footer = (f"Made with jagged {jagged.__version__} from notebooks/{find_notebook(notebook).name}. "
                  f"The executed notebook is kept beside this file as {ipynb_path.name}.")
        import nbformat

        from jagged.rerun import full_parameters, report_metadata, rerun_command

        full = full_parameters(notebook, parameters)
        meta = report_metadata(notebook, full, {"title": title, **(metadata or {})})
        nb.metadata["jagged"] = {**meta, "parameters": full}
        nbformat.write(nb, str(executed))
        facts = [*facts, ("rerun this report", rerun_command(html_path), "command")]
        page = render(nb, title=title, show_code=show_code, facts=facts,
                      parameters=parameter_rows(notebook, parameters), subtitle=subtitle, footer=footer, meta=meta,
                      theme=theme or str(full.get("theme") or "light"))
        rendered = workdir / "report.html"
        rendered.write_text(page, encoding="utf-8")
        os.replace(executed, ipynb_path)
        os.replace(rendered, html_path)
        failed_path.unlink(missing_ok=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return html_path


# ---------------------------------------------------------------------------------------
# The jaggedness report


def input_facts(dataset: Any, bundled: bool = False) -> list[tuple[str, str, str]]:
    """Provenance rows of a loaded dataset: file name(s) with SHA-256, counts.

    Parameters
    ----------
    dataset : jagged.Dataset
        The loaded input.
    bundled : bool
        Whether it is the data bundled with jagged.

    Returns
    -------
    list of (label, value, kind)
    """
    from jagged.loaders import sha256_file
    from jagged.table import summarize

    rows: list[tuple[str, str, str]] = []
    paths = [Path(p) for p in dataset.paths]
    name = dataset.source + (" (bundled with jagged)" if bundled else "")
    rows.append(("input", name, ""))
    if len(paths) == 1 and paths[0].is_file():
        rows.append(("input SHA-256", sha256_file(paths[0]), "hash"))
    else:
        shown = [p for p in paths if p.is_file()][:20]
        for path in shown:
            rows.append((f"SHA-256 of {path.name}", sha256_file(path), "hash"))
        if len(paths) > len(shown):
            rows.append(("other files", f"{len(paths) - len(shown)} more (see the executed notebook)", ""))
    facts = summarize(dataset.scores)
    rows.append(("scores (rows)", str(facts["rows"]), ""))
    rows.append(("models", str(facts["models"]), ""))
    rows.append(("domains", str(facts["domains"]), ""))
    return rows


def validate_input(scores: str | Path | None, options: Mapping[str, Any]) -> Any:
    """Load and analyse the input here, before any kernel starts, so bad input fails fast.

    Parameters
    ----------
    scores : str, pathlib.Path or None
        Input (``None``: bundled data).
    options : mapping
        Notebook parameters named like :class:`jagged.analysis.AnalysisOptions` fields
        become analysis options; those :func:`jagged.cli.load_options` picks are passed
        to :func:`jagged.load`. Others (e.g. ``max_models``) are ignored here.

    Returns
    -------
    jagged.Dataset

    Raises
    ------
    JaggedInputError
        Whatever the loader or the analysis rejects.
    """
    from jagged.analysis import AnalysisOptions, metrics_table
    from jagged.cli import load_options
    from jagged.loaders import load

    fields = AnalysisOptions.__dataclass_fields__
    analysis = {k: (tuple(v) if isinstance(v, list) else v) for k, v in options.items() if k in fields}
    if "bootstrap" in analysis:  # resampling checks no input; the kernel does it once
        analysis["bootstrap"] = 0
    dataset = load(scores, **load_options(dict(options)))
    metrics_table(dataset, AnalysisOptions(**analysis))
    return dataset


def jaggedness_report(scores: str | Path | None = None, output: str | Path = DEFAULT_OUTPUT, *,
                      title: str = DEFAULT_TITLE, show_code: bool = False, **options: Any) -> Path:
    """Write the jaggedness audit report (``jagged report``).

    Parameters
    ----------
    scores : str or pathlib.Path, optional
        Score input; ``None`` (or ``""``) uses the bundled MMLU-Pro per-category scores.
    output : str or pathlib.Path
        Destination ``.html`` (default ``reports/jaggedness_report.html``); the executed
        notebook is kept beside it as ``.ipynb``.
    title : str
        Report title.
    show_code : bool
        Show the notebook's code cells.
    **options
        Notebook parameters of the same name: loader options (``score_scale``, ...),
        analysis options (``weights``, ``profiles``, ``missing_weight``, ...) and display
        options (``max_models``, ``theme``: ``"light"``, ``"dark"`` or ``"auto"``).

    Returns
    -------
    pathlib.Path
        The HTML file.

    Raises
    ------
    JaggedInputError
        Bad input, found before the notebook runs.
    ReportError
        The notebook failed (see :func:`run_report`).
    """
    output = Path(output)
    if output.suffix.lower() not in (".html", ".htm"):
        raise JaggedInputError(f"{output}: the report file must end in .html")
    if options.get("theme", "light") not in THEMES:
        raise JaggedInputError(f"theme must be one of {', '.join(THEMES)}, not {options['theme']!r}")
    from jagged.kernel import launch_kernel, stop_kernel

    bundled = scores in (None, "")
    source = None if bundled else Path(scores)
    if "km" in options:  # a kernel the caller manages (e.g. a warm one)
        return _jaggedness_report(source, output, title=title, show_code=show_code, **options)
    # The kernel boots in its own process while this one validates the input and reads the
    # notebook: about a third of a second of the run, on a second core.
    km = launch_kernel(KERNEL_NAME)
    try:
        return _jaggedness_report(source, output, title=title, show_code=show_code, km=km, **options)
    finally:
        stop_kernel(km)


def _jaggedness_report(source: Path | None, output: Path, *, title: str, show_code: bool,
                       km: Any = None, **options: Any) -> Path:
    """:func:`jaggedness_report` once the output and theme are checked."""
    from jagged.kernel import external_kernel_kwargs

    bundled = source is None
    dataset = validate_input(source, options)
    declared = {p.name for p in notebook_parameters(REPORT_NOTEBOOK)}
    ignored = sorted(set(options) - declared)
    if ignored:
        warnings.warn(f"{REPORT_NOTEBOOK} has no parameter {', '.join(ignored)}; "
                      f"{'that option does' if len(ignored) == 1 else 'those options do'} not reach the report",
                      JaggedWarning, stacklevel=2)
    parameters = {"scores": "" if bundled else str(source.resolve()),
                  **{k: v for k, v in options.items() if k in declared}}
    facts = input_facts(dataset, bundled=bundled) + version_facts()
    counts = {row[0]: row[1] for row in facts}
    subtitle = f"{counts['models']} models × {counts['domains']} domains from {dataset.source}"
    return run_report(REPORT_NOTEBOOK, output, parameters, title=title, show_code=show_code, facts=facts,
                      subtitle=subtitle, **(external_kernel_kwargs(km) if km is not None else {}))
