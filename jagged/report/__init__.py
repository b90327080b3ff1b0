"""Report machinery: papermill runs, nbconvert rendering, stored parameters, and batches in warm kernels.

In the order a report passes through them: :mod:`~jagged.report.notebooks` (the shipped
notebooks and their parameters), :mod:`~jagged.report.execution` (papermill),
:mod:`~jagged.report.rendering` (nbconvert), :mod:`~jagged.report.rerun` (stored
parameters), :mod:`~jagged.report.run` (execute + render into place),
:mod:`~jagged.report.jaggedness` (``jagged report``), :mod:`~jagged.report.kernel` (kernels
and the one SIGTERM handler), :mod:`~jagged.report.debris` (what dead runs left),
:mod:`~jagged.report.batch` with :mod:`~jagged.report.batch_plan`,
:mod:`~jagged.report.batch_index` and :mod:`~jagged.report.slug` (``jagged batch``), and
:mod:`~jagged.report.sections`. The names below are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> module that defines it
_LAZY: dict[str, str] = {
    "jaggedness_report": "jaggedness", "report_from_parameters": "jaggedness", "validate_input": "jaggedness",
    "input_facts": "jaggedness", "DEFAULT_OUTPUT": "notebooks", "DEFAULT_TITLE": "notebooks",
    "run_report": "run",
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
