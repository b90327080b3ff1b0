"""Run a report: execute a notebook and render it, moving the results into place only when both succeed.

:func:`run_report` executes into a temporary folder beside the destination and moves
``PATH.html`` and ``PATH.ipynb`` into place only when execution and rendering succeeded.
A failing run leaves an earlier report untouched, keeps the failed notebook as
``PATH.failed.ipynb`` and raises :class:`~jagged.report.execution.ReportError`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import jagged
from jagged.errors import JaggedInputError
from jagged.report.execution import ReportError, execute
from jagged.report.notebooks import find_notebook, full_parameters
from jagged.report.rendering import _warm_exporter, parameter_rows, render
from jagged.report.rerun import report_metadata, rerun_command
from jagged.text import one_line

DEFAULT_TITLE = "Jaggedness report"


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
        command that reruns the report (see :mod:`jagged.report.rerun`).
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
                message = f"{Path(notebook).name} could not run: {type(exc).__name__}: {one_line(exc, 300)}"
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
