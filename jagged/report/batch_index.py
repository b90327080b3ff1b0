"""A batch's index page: one sortable row per model report, rendered from ``templates/batch/``."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Iterable, Sequence

import jagged
from jagged.report.batch_plan import Outcome, Plan
from jagged.resources import templates_dir
from jagged.text import printable

INDEX_TEMPLATE_DIR = templates_dir() / "batch"
INDEX_NAME = "index.html"


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number else None  # NaN → None


def index_rows(plan: Plan, outcomes: Iterable[Outcome]) -> list[dict[str, Any]]:
    """One row per model report for the index template, most jagged first (undefined cv_error last, ties by name).

    Each row: ``model``, ``href`` (or None), ``status`` ("ok"/"failed"), ``error``,
    ``failed_href``, ``macro_score``, ``cv_error``, ``relative_jaggedness`` (the column
    :func:`jagged.views.structure.relative_column` picks, named in ``relative_column``),
    ``noise_flag`` and ``relative_noise_flag`` as text ("noise", "" or "not tested"), and
    ``profiles``: per profile of :attr:`Plan.profiles` its ``dep_score`` and ``wedge``.
    Numbers are floats or None.
    """
    from jagged.stats.uncertainty import flag_text
    from jagged.views.structure import relative_column

    table = plan.table
    base = table.drop_duplicates("model").set_index("model")
    relative = relative_column(base) if "relative_jaggedness" in base.columns else ""
    flags = {name: dict(zip(base.index, flag_text(base[name]))) if name in base.columns else {}
             for name in ("noise_flag", "relative_noise_flag")}
    deployment = None
    if plan.profiles:
        deployment = table.set_index(["model", "profile"])[["dep_score", "wedge"]]
    rows = []
    for outcome in outcomes:
        job = outcome.job
        if job.kind != "model":
            continue
        rel = job.html_path.relative_to(plan.out_dir).as_posix()
        failed = outcome.status == "failed"
        failed_href = None
        if failed and outcome.failed_notebook is not None:
            try:
                failed_href = Path(outcome.failed_notebook).resolve().relative_to(plan.out_dir.resolve()).as_posix()
            except ValueError:
                failed_href = None
        per_profile = []
        for profile in plan.profiles:
            dep = deployment.loc[(job.model, profile)] if deployment is not None else None
            per_profile.append({"dep_score": _number(dep["dep_score"]) if dep is not None else None,
                                "wedge": _number(dep["wedge"]) if dep is not None else None})
        rows.append({
            "model": job.model, "href": None if failed and not job.html_path.exists() else rel,
            "status": "failed" if failed else "ok", "error": outcome.error, "failed_href": failed_href,
            "macro_score": _number(base.loc[job.model, "macro_score"]),
            "cv_error": _number(base.loc[job.model, "cv_error"]), "profiles": per_profile,
            "relative_column": relative,
            "relative_jaggedness": _number(base.loc[job.model, relative]) if relative else None,
            "noise_flag": flags["noise_flag"].get(job.model, ""),
            "relative_noise_flag": flags["relative_noise_flag"].get(job.model, ""),
        })
    rows.sort(key=lambda r: r["model"])
    rows.sort(key=lambda r: -r["cv_error"] if r["cv_error"] is not None else float("inf"))
    return rows


def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(INDEX_TEMPLATE_DIR)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters["num"] = lambda v, spec="{:.4f}": "—" if v is None else spec.format(v)
    env.filters["sortkey"] = lambda v: "" if v is None else repr(float(v))
    return env


def render_index(plan: Plan, outcomes: Sequence[Outcome]) -> str:
    """The index page: self-contained HTML whose Content-Security-Policy allows only its own hashed inline script.

    Every name and message is autoescaped, control characters and bidi overrides written as
    visible escapes (:func:`jagged.text.printable`); links are built from slugs only.
    """
    import base64

    env = _environment()
    script = (INDEX_TEMPLATE_DIR / "sort.js").read_text(encoding="utf-8")
    style = (INDEX_TEMPLATE_DIR / "index.css").read_text(encoding="utf-8")
    script_hash = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    overview = next((o for o in outcomes if o.job.kind == "overview"), None)
    rows = index_rows(plan, outcomes)
    return printable(env.get_template("index.html.j2").render(
        title="jagged batch: reports per model", rows=rows, profiles=plan.profiles, facts=plan.index_facts,
        overview=overview and {
            "href": overview.job.html_path.relative_to(plan.out_dir).as_posix(),
            "status": "failed" if overview.status == "failed" else "ok", "error": overview.error,
            "exists": overview.job.html_path.exists()},
        n_failed=sum(r["status"] == "failed" for r in rows), script=script, style=style,
        script_hash=script_hash, version=jagged.__version__), keep="\t\n\r")


def write_index(plan: Plan, outcomes: Sequence[Outcome]) -> Path:
    """Render the index and write it atomically, only when its content changed."""
    from jagged.fileio import atomic_write_text

    path = plan.out_dir / INDEX_NAME
    page = render_index(plan, outcomes)
    if path.is_file() and path.read_text(encoding="utf-8", errors="replace") == page:
        return path
    return atomic_write_text(path, page)
