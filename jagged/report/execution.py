"""Execute a report notebook with papermill (:func:`execute`); failures become :class:`ReportError`.

Parameters are data, never code. papermill's own translator writes a value of a type it
does not know as ``"<str(value)>"`` unescaped, so a ``bytes`` value could close the string
and run code. Here the parameters cell is built by :func:`parameters_source`: values made
plain data (:func:`jagged.report.notebooks.plain`), one ``name = repr(value)`` per line,
and the cell parsed back with :mod:`ast` to exactly those literals before papermill uses it.
"""

from __future__ import annotations

import ast
import keyword
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from jagged.report.kernel import external_kernel_kwargs, own_kernel
from jagged.report.notebooks import find_notebook, notebook_parameters, plain
from jagged.text import one_line

KERNEL_NAME = "python3"


class ReportError(RuntimeError):
    """A report notebook failed to run or render; the message is one short paragraph.

    ``ename`` and ``evalue`` are the failing cell's exception type and message (None when no
    cell failed), ``failed_notebook`` where the failed executed notebook was kept.
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
    """Execute a notebook with papermill and write the executed copy (also when a cell fails).

    Parameters
    ----------
    notebook : str or pathlib.Path
        Notebook path, or a name in ``notebooks/``.
    output : str or pathlib.Path
        Where the executed notebook goes.
    parameters : mapping, optional
        Values for the notebook's declared parameters, plain data (:func:`parameters_source`).
    cwd : str or pathlib.Path, optional
        Working directory of the kernel it starts.
    kernel_name : str
        Jupyter kernel to start.
    timeout : float, optional
        Per-cell time limit in seconds (default: none).
    **engine_kwargs
        Passed through papermill to :class:`nbclient.NotebookClient`. Without ``km`` (a kernel
        the caller owns) the notebook runs in a kernel of its own, stopped however it ends.

    Returns
    -------
    nbformat.NotebookNode
        The executed notebook, with papermill's timing metadata.

    Raises
    ------
    TypeError
        A value that is not plain data.
    ValueError
        A parameter the notebook does not declare.
    ReportError
        A cell raised; the message names the cell and the error.
    """
    import papermill

    path = find_notebook(notebook)
    parameters = {k: plain(v) for k, v in (parameters or {}).items()}
    parameters_source(parameters)  # refuses what cannot be a cell before papermill reads the notebook
    _register_translator()
    declared = {p.name for p in notebook_parameters(path)}
    unknown = sorted(set(parameters) - declared)
    if unknown:
        raise ValueError(f"{path.name} declares no parameter {', '.join(unknown)} (it has: "
                         f"{', '.join(sorted(declared)) or 'none'})")
    if "km" not in engine_kwargs:
        with own_kernel(kernel_name, cwd=None if cwd is None else str(cwd)) as km:
            return execute(path, output, parameters, kernel_name=kernel_name, timeout=timeout,
                           **engine_kwargs, **external_kernel_kwargs(km))
    try:
        return papermill.execute_notebook(  # papermill formats paths with the parameters: {} stay literal
            _literal_braces(path), _literal_braces(output), parameters=parameters, kernel_name=kernel_name,
            progress_bar=False, request_save_on_cell_execute=False, execution_timeout=timeout, **engine_kwargs)
    except papermill.PapermillExecutionError as exc:
        where = f"cell [{exc.exec_count}]" if exc.exec_count is not None else f"cell {exc.cell_index + 1}"
        first = next((line.strip() for line in str(exc.source).splitlines() if line.strip()
                      and not line.strip().startswith("#")), "")
        if first:
            where += f" ({one_line(first, 60)})"
        message = f"{path.name} failed in {where}: {exc.ename}: {one_line(exc.evalue, 300)}"
        raise ReportError(message, ename=exc.ename, evalue=str(exc.evalue)) from None

def _literal_braces(path: str | Path) -> str:
    """A path papermill's ``str.format`` with the parameters leaves unchanged (``{x}`` → ``{{x}}``)."""
    return str(path).replace("{", "{{").replace("}", "}}")


def parameters_source(parameters: Mapping[str, Any], comment: str = "Parameters") -> str:
    """The source of the injected parameters cell: ``# Parameters``, then ``name = <repr(value)>`` per line.

    Names must be identifiers and no keywords, values plain data
    (:func:`jagged.report.notebooks.plain`); newlines in ``comment`` are dropped.

    Raises
    ------
    TypeError
        A value that is not plain data.
    ValueError
        A name that is not an identifier, or a cell that does not parse back to exactly the
        given assignments (never expected: it would mean a literal became code).
    """
    values = {}
    for name, value in parameters.items():
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise ValueError(f"{name!r} cannot be a notebook parameter name")
        values[name] = plain(value)
    lines = ["# " + " ".join(str(comment).split())]
    lines += [f"{name} = {value!r}" for name, value in values.items()]
    source = "\n".join(lines) + "\n"
    _check_cell(source, values)
    return source


def _check_cell(source: str, values: Mapping[str, Any]) -> None:
    """Raise ValueError unless ``source`` is exactly the assignments ``name = values[name]``, in order."""
    body = ast.parse(source).body
    if len(body) != len(values):
        raise ValueError("the parameters cell does not parse back to one assignment per parameter")
    for node, (name, value) in zip(body, values.items()):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == name and _same(ast.literal_eval(node.value), value)):
            raise ValueError(f"the parameters cell does not parse back to the value of {name!r}")


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same types, all the way down (``True`` is not ``1``, ``1`` not ``1.0``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


@lru_cache(maxsize=1)
def _translator() -> type:
    """papermill's Python translator, writing only checked plain literals (see the module docstring)."""
    from papermill.translators import PythonTranslator

    class LiteralTranslator(PythonTranslator):
        @classmethod
        def translate(cls, val: Any) -> str:
            return repr(plain(val))

        @classmethod
        def codify(cls, parameters: Mapping[str, Any], comment: str = "Parameters") -> str:
            return parameters_source(parameters, comment)

    return LiteralTranslator


def _register_translator() -> None:
    """Make :func:`parameters_source` papermill's translator for Python kernels (done before every run)."""
    from papermill.translators import papermill_translators

    for name in ("python", KERNEL_NAME):  # papermill looks the kernel's name up first, then its language
        papermill_translators.register(name, _translator())
