"""Execute a report notebook with papermill (:func:`execute`); failures become :class:`ReportError`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from jagged.report.notebooks import find_notebook, notebook_parameters, plain
from jagged.text import one_line

KERNEL_NAME = "python3"


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
    parameters = {k: plain(v) for k, v in (parameters or {}).items()}
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
            where += f" ({one_line(first, 60)})"
        message = f"{path.name} failed in {where}: {exc.ename}: {one_line(exc.evalue, 300)}"
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
