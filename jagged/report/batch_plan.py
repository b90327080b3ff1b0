"""A batch's plan: every report's path, parameters and content hash, and which are out of date."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

import jagged
from jagged import options as opts
from jagged.errors import JaggedInputError
from jagged.report.notebooks import (
    DEFAULT_OUTPUT,
    MODEL_NOTEBOOK,
    REPORT_NOTEBOOK,
    default_title,
    default_values,
    find_notebook,
    notebook_name,
)

PACKAGE_DIR = Path(jagged.__file__).resolve().parent
#: Folder of the per-model reports inside the batch folder.
MODELS_DIR = "models"
#: The :func:`jagged.views.summary.read_facts` the batch index shows before the input hashes.
INDEX_FACTS = ("input", "models", "domains")


@dataclass(frozen=True)
class Job:
    """One report to make: a per-model (``kind="model"``) or the cross-model report (``"overview"``).

    ``parameters`` is the notebook's full parameter set, ``facts`` the provenance rows and
    ``input_hash`` the :func:`content_hash` that makes the report up to date.
    """

    kind: str
    model: str | None
    notebook: str
    html_path: Path
    parameters: dict
    title: str
    subtitle: str
    facts: tuple
    input_hash: str


@dataclass(frozen=True)
class Outcome:
    """What became of a job: ``status`` is "written", "skipped" (up to date) or "failed"."""

    job: Job
    status: str
    error: str = ""
    failed_notebook: Path | None = None
    seconds: float = 0.0


@dataclass
class Plan:
    """Everything a batch needs, decided before any kernel starts."""

    out_dir: Path
    jobs: list[Job]
    todo: list[Job]
    table: Any
    models: list[str]
    profiles: list[str]
    index_facts: list[tuple[str, str]] = field(default_factory=list)


def _sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@lru_cache(maxsize=16)
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    """SHA-256 of a file, cached while its modification time and size stay the same."""
    return _sha256_bytes(Path(path).read_bytes())


@lru_cache(maxsize=1)
def code_digest() -> str:
    """SHA-256 over jagged's Python sources and the report template (names and contents).

    The index template is left out: the index is rendered on every run.
    """
    from jagged.report.rendering import TEMPLATE_NAME, TEMPLATES_DIR

    digest = hashlib.sha256()
    template = TEMPLATES_DIR / TEMPLATE_NAME
    files = [(path, "jagged/" + path.relative_to(PACKAGE_DIR).as_posix()) for path in sorted(PACKAGE_DIR.rglob("*.py"))]
    files += [(path, "templates/" + path.relative_to(TEMPLATES_DIR).as_posix()) for path in sorted(template.rglob("*"))]
    for path, name in files:
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(name.encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()


def content_hash(notebook: str | Path, parameters: Mapping[str, Any], input_digests: Sequence[str]) -> str:
    """The content hash that decides whether a report is up to date.

    SHA-256 of a canonical JSON document holding the notebook's SHA-256, the full
    ``parameters``, ``input_digests`` (SHA-256 of every input file, in a fixed order), jagged's
    version and :func:`code_digest`. Paths are part of the parameters, so moving an input
    makes its reports stale; the digests catch a file changed in place.
    """
    path = find_notebook(notebook)
    stat = path.stat()
    payload = {
        "notebook": _file_digest(str(path), stat.st_mtime_ns, stat.st_size),
        "parameters": dict(parameters),
        "inputs": list(input_digests),
        "jagged": jagged.__version__,
        "code": code_digest(),
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))
    return _sha256_bytes(text.encode("utf-8"))


def _for_notebook(notebook: str, declared: Mapping[str, Any], values: Mapping[str, Any],
                  extra: Mapping[str, Any]) -> dict[str, Any]:
    """The full parameter set of one notebook: its defaults (``declared``), then the values it declares.

    An option the notebook has no parameter for is an error unless it is unset.
    """
    dropped = sorted(k for k, v in values.items() if k not in declared and v not in ("", None, False, [], ()))
    if dropped:
        raise JaggedInputError(f"notebooks/{notebook_name(notebook)}.ipynb has no parameter for option(s) "
                               f"{', '.join(dropped)}")
    return {**declared, **{k: v for k, v in {**values, **extra}.items() if k in declared}}


def plan_batch(scores: str | Path | None, out_dir: str | Path, *, models: Sequence[str] = (), force: bool = False,
               load: Mapping[str, Any] | None = None, analysis: Mapping[str, Any] | None = None,
               overview: bool = True) -> Plan:
    """Load the input, decide every report's path, parameters and hash, and what to run.

    Parameters
    ----------
    scores : str, pathlib.Path or None
        Score input (None or "": the bundled data, with its illustrative profiles).
    out_dir : str or pathlib.Path
        Output folder.
    models : sequence of str
        Models to report on (default: all), each in the input.
    force : bool
        Rebuild reports that are up to date.
    load, analysis : mapping, optional
        Loader options (as :func:`jagged.load` takes them) and analysis options (as
        :class:`jagged.options.AnalysisOptions` takes them).
    overview : bool
        Also make the cross-model report.

    Raises
    ------
    JaggedInputError
        Bad input, an unknown model, an output folder that is a file.
    """
    from jagged.analysis import metrics_table
    from jagged.readers.dataset import sha256_file
    from jagged.readers.load import load as load_dataset
    from jagged.report.facts import input_facts, input_subtitle
    from jagged.report.rendering import version_facts
    from jagged.report.slug import output_path, unique_slugs
    from jagged.stats.weights import report_weights
    from jagged.views.summary import read_facts, selection_text

    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise JaggedInputError(f"{out_dir}: exists and is not a folder")
    load = dict(load or {})
    analysis = dict(analysis or {})
    bundled = scores in (None, "")
    source = None if bundled else Path(scores).resolve()
    dataset = load_dataset(source, **load)
    weights = report_weights("" if bundled else str(source), analysis.get("weights") or "")
    options = opts.analysis_options(analysis, weights=weights, bootstrap=0)
    table = metrics_table(dataset, options)
    names = sorted(str(m) for m in table["model"].unique())
    chosen = list(dict.fromkeys(str(m) for m in models)) or names
    unknown = [m for m in chosen if m not in set(names)]
    if unknown:
        raise JaggedInputError(f"--models: no model {unknown[0]!r} in {dataset.source} ({len(names)} models)")
    slugs = dict(zip(names, unique_slugs(names)))

    if analysis.get("weights"):
        analysis["weights"] = str(Path(analysis["weights"]).resolve())
    values = opts.notebook_values({"scores": "" if bundled else str(source), **load, **analysis})
    inputs = [Path(p) for p in dataset.paths if Path(p).is_file()]
    if weights:
        inputs.append(Path(weights))
    digests = [sha256_file(p) for p in inputs]
    facts = tuple(input_facts(dataset, bundled=bundled) + version_facts())
    n_models, n_domains = len(names), int(dataset.scores["domain"].nunique())

    jobs: list[Job] = []
    model_dir = out_dir / MODELS_DIR
    model_notebook, overview_notebook = notebook_name(MODEL_NOTEBOOK), notebook_name(REPORT_NOTEBOOK)
    model_defaults = default_values(model_notebook)
    for name in chosen:
        params = _for_notebook(model_notebook, model_defaults, values, {"model": name})
        jobs.append(Job(
            kind="model", model=name, notebook=model_notebook, html_path=output_path(model_dir, slugs[name], ".html"),
            parameters=params, title=default_title(model_notebook, params),
            subtitle=f"{name} against {n_models - 1} other models × {n_domains} domains from {dataset.name}"
                     + (f" — {selection_text(dataset.selection)}" if dataset.selection else ""),
            facts=facts, input_hash=content_hash(model_notebook, params, digests)))
    if overview:
        params = _for_notebook(overview_notebook, default_values(overview_notebook), values, {})
        jobs.append(Job(
            kind="overview", model=None, notebook=overview_notebook,
            html_path=out_dir / DEFAULT_OUTPUT.name,
            parameters=params, title=default_title(overview_notebook, params),
            subtitle=input_subtitle(dataset),
            facts=facts, input_hash=content_hash(overview_notebook, params, digests)))
    todo = [j for j in jobs if force or not up_to_date(j)]
    profiles = [str(p) for p in table["profile"].unique()] if "profile" in table.columns else []
    index_facts = [(f.label, f.value) for f in read_facts(dataset) if f.key in INDEX_FACTS]
    index_facts += [(f"SHA-256 of {p.name}", d) for p, d in zip(inputs, digests)]
    return Plan(out_dir=out_dir, jobs=jobs, todo=todo, table=table, models=chosen, profiles=profiles,
                index_facts=index_facts)


def up_to_date(job: Job) -> bool:
    """Whether the job's HTML exists and carries the job's content hash."""
    from jagged.report.rerun import stored_hash

    return job.html_path.is_file() and stored_hash(job.html_path) == job.input_hash
