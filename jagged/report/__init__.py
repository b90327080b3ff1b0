"""Report machinery: papermill runs, nbconvert rendering, stored parameters, and batches in warm kernels.

A report runs a notebook with papermill, renders it with the nbconvert template, stores
its parameters for exact reruns; a batch runs many reports in warm kernels.

Modules, in the order a report passes through them:

* :mod:`~jagged.report.notebooks` — the shipped notebooks and the parameters they declare;
* :mod:`~jagged.report.execution` — papermill execution, :class:`ReportError`;
* :mod:`~jagged.report.rendering` — nbconvert rendering with ``templates/jagged``;
* :mod:`~jagged.report.rerun` — the parameters and hashes a report stores, read back;
* :mod:`~jagged.report.run` — execute + render into place atomically;
* :mod:`~jagged.report.jaggedness` — ``jagged report`` and ``jagged report --params``;
* :mod:`~jagged.report.kernel` — kernels: launched, stopped, kept warm between notebooks;
  the one SIGTERM handler;
* :mod:`~jagged.report.debris` — what a run leaves on disk (kernel files, temporary
  folders) and removing what dead runs left;
* :mod:`~jagged.report.batch` — ``jagged batch`` on threads with warm kernels:
  :mod:`~jagged.report.batch_plan` (plan and content hashes),
  :mod:`~jagged.report.batch_index` (the index page), :mod:`~jagged.report.slug`
  (file names from model names);
* :mod:`~jagged.report.sections` — removing the cells of sections that do not apply.

The names below are imported on first use, so ``import jagged.report`` stays cheap.
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
