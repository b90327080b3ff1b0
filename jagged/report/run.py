"""Run a report: execute a notebook and render it, moving the results into place only when both succeed.

A run works in a temporary folder beside the destination and moves ``PATH.html``,
``PATH.ipynb`` and ``PATH.json`` (:func:`jagged.report.record.report_record`) into place
only on success. A failing run leaves an earlier report untouched and keeps the failed
notebook as ``PATH.failed.ipynb``; a run stopped by SIGTERM writes nothing. An unwritable
destination or a full disk is a one-line :class:`~jagged.errors.JaggedInputError`.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import jagged
from jagged.errors import JaggedInputError, JaggedWarning
from jagged.report.debris import make_workdir, remove_stale_workdirs
from jagged.report.execution import KERNEL_NAME, ReportError, execute
from jagged.report.kernel import check_stopped, external_kernel_kwargs, own_kernel
from jagged.report.notebooks import DEFAULT_TITLE, find_notebook, full_parameters
from jagged.report.rendering import Warmup, kernel_warnings, parameter_rows, render
from jagged.report.rerun import report_metadata, rerun_command
from jagged.text import one_line


def _failed_path(html_path: Path) -> Path:
    return html_path.with_suffix(".failed.ipynb")


def _no_space(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or an exception it came from) says the disk or the quota is full."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if isinstance(exc, ReportError) and "[Errno 28]" in str(exc.evalue or ""):  # a cell wrote to a full disk
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _complete_notebook(path: Path) -> bool:
    """Whether ``path`` holds a whole notebook (a write cut short by a full disk leaves invalid JSON)."""
    try:
        document = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(document, dict) and isinstance(document.get("cells"), list)


def _unwritable(html_path: Path, exc: OSError) -> JaggedInputError:
    """The one-line error for a destination that cannot be written (full disk, read-only, ...)."""
    if _no_space(exc):
        return JaggedInputError(f"no space left on device writing {html_path}")
    reason = exc.strerror or type(exc).__name__
    return JaggedInputError(f"{html_path}: cannot write the report in {html_path.parent}: {reason}")


def check_destination(html_path: str | Path) -> Path:
    """Check that a report can be written to ``html_path`` before anything runs; return it as a Path.

    Raises
    ------
    JaggedInputError
        Not an ``.html`` name; a folder or a non-regular file at that path; a file where a
        folder of the path should be; a ``.json`` of the same name that jagged did not write.
    """
    html_path = Path(html_path)
    if html_path.suffix.lower() not in (".html", ".htm"):
        raise JaggedInputError(f"{html_path}: the report file must end in .html")
    if html_path.is_dir():
        raise JaggedInputError(f"{html_path}: is a directory, expected an .html file path")
    if html_path.exists() and not html_path.is_file():
        raise JaggedInputError(f"{html_path}: exists and is not a regular file")
    for folder in html_path.parents:
        if folder.exists() or folder.is_symlink():
            if not folder.is_dir():
                raise JaggedInputError(f"{html_path}: {folder} is not a folder")
            break
    record = html_path.with_suffix(".json")
    if record.exists() or record.is_symlink():
        from jagged.report.record import is_report_json

        if not is_report_json(record):
            raise JaggedInputError(f"{html_path}: {record} exists and is no jagged REPORT.json (the key numbers "
                                   "are written there); choose another report name")
    return html_path


def run_report(notebook: str | Path, html_path: str | Path, parameters: Mapping[str, Any] | None = None, *,
               title: str = DEFAULT_TITLE, show_code: bool = False, facts: Iterable[Sequence[str]] = (),
               subtitle: str | None = None, metadata: Mapping[str, str] | None = None,
               theme: str | None = None, clean_stale: bool = True, sections: Sequence[str] | None = None,
               **execute_kwargs: Any) -> Path:
    """Execute a notebook and render it to ``html_path``, atomically; keep the executed notebook beside it.

    Parameters
    ----------
    notebook : str or pathlib.Path
        Notebook path or name in ``notebooks/``.
    html_path : str or pathlib.Path
        Destination ``.html``; the executed notebook goes beside it as ``.ipynb``, the key
        numbers as ``.json``.
    parameters : mapping, optional
        Notebook parameters (see :func:`execute`).
    title, show_code, facts, subtitle, sections
        See :func:`render`.
    metadata : mapping, optional
        Extra report metadata (e.g. a batch's ``input-hash``); the notebook name, title and
        full parameter set are always stored (:mod:`jagged.report.rerun`).
    theme : {"light", "dark", "auto"}, optional
        Default: the notebook's ``theme`` parameter when it declares one, else light.
    clean_stale : bool
        First remove the temporary folders dead runs left beside ``html_path``.
    **execute_kwargs
        Passed to :func:`execute` (``cwd``, ``timeout``, ``km``, ...); without ``km`` the
        report gets a kernel of its own, stopped however the run ends.

    Returns
    -------
    pathlib.Path
        ``html_path``.

    Raises
    ------
    ReportError
        The notebook failed; the earlier report is unchanged and the failed notebook is kept
        as ``PATH.failed.ipynb`` (``failed_notebook``).
    JaggedInputError
        The destination cannot be written (:func:`check_destination`), or the disk is full
        ("no space left on device writing PATH"); a failed notebook is kept only when complete.
    jagged.report.kernel.Stopped
        SIGTERM arrived (exit status 143), after the kernel was stopped and the folder removed.
    """
    html_path = check_destination(html_path)
    parameters = dict(parameters or {})
    try:
        html_path.parent.mkdir(parents=True, exist_ok=True)
        if clean_stale:
            remove_stale_workdirs(html_path.parent)
        workdir = make_workdir(html_path)
    except OSError as exc:
        raise _unwritable(html_path, exc) from None
    try:
        _run_into(workdir, notebook, html_path, parameters, title=title, show_code=show_code, facts=facts,
                  subtitle=subtitle, metadata=metadata, theme=theme, sections=sections, execute_kwargs=execute_kwargs)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return html_path


def run_checked(prepare: Callable[[], Mapping[str, Any]]) -> Path:
    """Start the report's kernel, check and load the input while it boots, then run the report in it.

    ``prepare`` validates and loads the input in this process and returns :func:`run_report`'s
    arguments by name; its :class:`JaggedInputError` means nothing is written. The kernel
    boots (and imports the libraries, :data:`jagged.report.kernel.KERNEL_ARGUMENTS`) on
    another core meanwhile, and is stopped however the run ends. Checks that need no loading
    belong before this call, so that they fail before any kernel starts.
    """
    with own_kernel(KERNEL_NAME) as km:
        return run_report(**prepare(), **external_kernel_kwargs(km))


def _run_into(workdir: Path, notebook: str | Path, html_path: Path, parameters: dict[str, Any], *, title: str,
              show_code: bool, facts: Iterable[Sequence[str]], subtitle: str | None,
              metadata: Mapping[str, str] | None, theme: str | None, sections: Sequence[str] | None,
              execute_kwargs: dict[str, Any]) -> None:
    """:func:`run_report` in its temporary folder ``workdir``: execute, render, move into place."""
    ipynb_path = html_path.with_suffix(".ipynb")
    failed_path = _failed_path(html_path)
    # The kernel runs in another process; prepare the renderer meanwhile. papermill is
    # imported first so the two threads do not import the same modules at once.
    import papermill  # noqa: F401

    warm = Warmup(show_code)
    warm.start()
    executed = workdir / "executed.ipynb"
    try:
        nb = execute(notebook, executed, parameters, **execute_kwargs)
    except ValueError:  # an undeclared parameter: a programming error, nothing ran
        raise
    except Exception as exc:
        check_stopped()  # stopped: its kernel was killed, which is no failure to keep
        kept = None
        if _complete_notebook(executed):  # never a notebook cut short by a full disk
            try:
                os.replace(executed, failed_path)
                kept = failed_path
            except OSError:
                kept = None
        if isinstance(exc, ReportError):
            message, ename, evalue = str(exc), exc.ename, exc.evalue
        else:
            message = f"{Path(notebook).name} could not run: {type(exc).__name__}: {one_line(exc, 300)}"
            ename, evalue = None, None
        if _no_space(exc):
            message = f"no space left on device writing {html_path}"
        if kept is not None:
            message += f". The executed notebook is kept as {kept}"
        if html_path.exists():
            message += f"; the earlier report {html_path} is unchanged"
        if _no_space(exc):
            raise JaggedInputError(message) from None
        raise ReportError(message, ename=ename, evalue=evalue, failed_notebook=kept) from None
    warm.wait()
    for text in kernel_warnings(nb):  # never on the page (render leaves stderr out); kept in the .ipynb
        warnings.warn(f"{Path(notebook).stem}: {text} (kept in {ipynb_path.name})", JaggedWarning, stacklevel=2)
    footer = (f"Made with jagged {jagged.__version__} from notebooks/{find_notebook(notebook).name}. "
              f"The executed notebook is kept beside this file as {ipynb_path.name}.")
    import nbformat

    full = full_parameters(notebook, parameters)
    meta = report_metadata(notebook, full, {"title": title, **(metadata or {})})
    nb.metadata["jagged"] = {**meta, "parameters": full}
    facts = [*facts, ("rerun this report", rerun_command(html_path), "command")]
    page = render(nb, title=title, show_code=show_code, facts=facts,
                  parameters=parameter_rows(notebook, parameters), subtitle=subtitle, footer=footer, meta=meta,
                  theme=theme or str(full.get("theme") or "light"), sections=sections)
    from jagged.report.record import report_json

    record = report_json(nb, notebook=notebook, title=title, parameters=full, facts=facts, sections=sections)
    rendered, recorded = workdir / "report.html", workdir / "report.json"
    check_stopped()  # a SIGTERM whose exception was swallowed while the notebook ran: write nothing
    try:
        nbformat.write(nb, str(executed))
        rendered.write_text(page, encoding="utf-8")
        recorded.write_text(record, encoding="utf-8")
        os.replace(executed, ipynb_path)
        os.replace(recorded, html_path.with_suffix(".json"))
        os.replace(rendered, html_path)
    except OSError as exc:
        error = _unwritable(html_path, exc)
        if html_path.exists():
            error = JaggedInputError(f"{error}; the earlier report {html_path} is unchanged")
        raise error from None
    failed_path.unlink(missing_ok=True)
