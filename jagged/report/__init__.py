"""Report machinery: run a notebook with papermill, render it with the nbconvert template,
store its parameters for exact reruns, and run many reports in warm kernels (batch).

Modules, in the order a report passes through them:

* :mod:`~jagged.report.notebooks` — the shipped notebooks and the parameters they declare;
* :mod:`~jagged.report.execution` — papermill execution, :class:`ReportError`;
* :mod:`~jagged.report.rendering` — nbconvert rendering with ``templates/jagged``;
* :mod:`~jagged.report.rerun` — the parameters and hashes a report stores, read back;
* :mod:`~jagged.report.run` — execute + render into place atomically;
* :mod:`~jagged.report.jaggedness` — ``jagged report`` and ``jagged report --params``;
* :mod:`~jagged.report.kernel`, :mod:`~jagged.report.batch`, :mod:`~jagged.report.slug` —
  ``jagged batch``: warm kernels, many reports and their index.

The names below are imported on first use, so ``import jagged.report`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> module that defines it
_LAZY: dict[str, str] = {
    "jaggedness_report": "jaggedness", "report_from_parameters": "jaggedness", "validate_input": "jaggedness",
    "input_facts": "jaggedness", "DEFAULT_OUTPUT": "jaggedness",
    "run_report": "run", "DEFAULT_TITLE": "run",
    "execute": "execution", "ReportError": "execution", "KERNEL_NAME": "execution",
    "render": "rendering", "version_facts": "rendering", "parameter_rows": "rendering", "TEMPLATES_DIR": "rendering",
    "TEMPLATE_NAME": "rendering", "SKIP_TAG": "rendering",
    "find_notebook": "notebooks", "notebook_parameters": "notebooks", "REPORT_NOTEBOOK": "notebooks",
    "MODEL_NOTEBOOK": "notebooks", "NOTEBOOKS_DIR": "notebooks",
    "read_parameters": "rerun",
    "run_batch": "batch",
}


def __getattr__(name: str) -> Any:
    if name == "THEMES":
        from jagged.options import THEMES

        return THEMES
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jagged.report' has no attribute {name!r}")
    return getattr(importlib.import_module(f"jagged.report.{module}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | {"THEMES"})
