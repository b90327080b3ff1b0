"""The ``jagged`` command line: parse, call the library, print, exit 0 / 1 / 2.

Exit status: 0 success; 1 internal error (or a batch with failed reports); 2 bad input,
with a one-line message on stderr that names the file and the column or value at fault.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Callable

import click

from jagged.errors import JaggedInputError

EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
#: Report page themes (the same as :data:`jagged.report.THEMES`, which imports more).
THEMES = ("light", "dark", "auto")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _print_warning(message: Any, category: type, filename: str, lineno: int, file: Any = None,
                   line: str | None = None) -> None:
    click.echo(f"jagged: warning: {_one_line(str(message))}", err=True)


def guarded(func: Callable[..., Any]) -> Callable[..., Any]:
    """Run a command body, turning errors into one-line messages and exit statuses."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        previous = warnings.showwarning
        warnings.showwarning = _print_warning
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("default")
                warnings.showwarning = _print_warning
                return func(*args, **kwargs)
        except JaggedInputError as exc:
            click.echo(f"jagged: error: {_one_line(str(exc))}", err=True)
            sys.exit(EXIT_BAD_INPUT)
        except KeyboardInterrupt:
            click.echo("jagged: interrupted", err=True)
            sys.exit(130)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except Exception as exc:  # the last guard: never a traceback unless asked for
            if os.environ.get("JAGGED_DEBUG"):
                raise
            click.echo(f"jagged: internal error: {type(exc).__name__}: {_one_line(str(exc))} "
                       "(set JAGGED_DEBUG=1 to see the traceback)", err=True)
            sys.exit(EXIT_INTERNAL)
        finally:
            warnings.showwarning = previous

    return wrapper


def input_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Options that say how to read SCORES (shared by every command that reads scores)."""
    func = click.option("--score-scale", type=click.Choice(["fraction", "percent"]), default="fraction",
                        show_default=True,
                        help="Scale of scores in CSV/Parquet tables; 'percent' divides by 100.")(func)
    func = click.option("--allow-incomplete", "allow_incomplete", is_flag=True, default=False,
                        help="Inspect: accept logs whose status is not 'success' (cancelled, error, "
                             "started).")(func)
    func = click.option("--domain-key", "domain_key", type=str, default=None, metavar="KEY",
                        help="Item-level evaluator outputs: the sample field naming the domain (Inspect "
                             "sample metadata, lm-eval doc; dotted for nested). Default: the task.")(func)
    func = click.option("--model-name", "model_name", type=str, default=None, metavar="NAME",
                        help="Evaluator outputs: model name to use instead of the one in the files.")(func)
    func = click.option("--metric", "metric", type=str, default=None, metavar="NAME[,FILTER]",
                        help="lm-eval: metric used as the score (default acc,none, else the only "
                             "higher-is-better one); Inspect: SCORER[,KEY].")(func)
    func = click.option("--task", "task", type=str, default=None, metavar="GROUP",
                        help="lm-eval: the group (or comma-separated tasks) whose leaf tasks are the "
                             "domains; required when a file holds several.")(func)
    return func


def analysis_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Options that say what to compute beyond the jaggedness penalty."""
    func = click.option("--ci", "ci", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95,
                        show_default=True, metavar="LEVEL", help="Bootstrap interval level.")(func)
    func = click.option("--seed", "seed", type=int, default=0, show_default=True, metavar="S",
                        help="Random seed of the bootstrap (same seed, same intervals).")(func)
    func = click.option("--bootstrap", "bootstrap", type=click.IntRange(min=0), default=2000, show_default=True,
                        metavar="B",
                        help="Bootstrap replicates for <stat>_lo/_hi intervals of cv_error, macro_score, "
                             "dep_score, wedge (items resampled per domain, paired across models; "
                             "binomial from n_items otherwise); 0: no intervals.")(func)
    func = click.option("--missing-weight", "missing_weight", type=click.Choice(["error", "zero"]),
                        default="error", show_default=True,
                        help="A score domain absent from a weights profile: an error, or no exposure.")(func)
    func = click.option("--profile", "profiles", multiple=True, metavar="NAME",
                        help="Profile to compute (repeatable): a name in the weights file or the "
                             "built-in 'uniform' (macro average) or 'items' (weights by n_items). "
                             "Default: every profile in --weights.")(func)
    func = click.option("--weights", "weights", type=str, default=None, metavar="FILE",
                        help="Deployment weights (CSV or YAML: profile, domain, weight[, comment]); "
                             "adds dep_score, wedge, wedge_bound, ranks, one row per model x profile.")(func)
    return func


def load_options(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Pick the loader's keyword arguments out of a command's options."""
    keys = ("score_scale", "task", "metric", "model_name", "domain_key", "allow_incomplete")
    return {k: kwargs[k] for k in keys if k in kwargs}


def analysis_settings(kwargs: dict[str, Any]):
    """Build :class:`jagged.analysis.AnalysisOptions` from a command's options."""
    from jagged.analysis import AnalysisOptions

    fields = AnalysisOptions.__dataclass_fields__
    return AnalysisOptions(**{k: v for k, v in kwargs.items() if k in fields})


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="jagged", prog_name="jagged")
def main() -> None:
    """How jagged is a model? Domain error dispersion and audit reports.

    SCORES is a per-domain score table (CSV or Parquet; long: model, domain, score
    [, n_items, category]; wide: model plus one column per domain), item-level
    results (model, domain, item, correct), lm-evaluation-harness results or
    samples, or Inspect logs (a file or a folder); the format is detected from the
    content. Run 'jagged COMMAND --help' for each command's options.
    """


@main.command()
@click.argument("scores", type=str)
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the table to OUT.csv or OUT.json (default: CSV on stdout).")
@input_options
@analysis_options
@guarded
def metrics(scores: str, output: str | None, **kwargs: Any) -> None:
    """Compute the per-model metrics table (macro_score, cv_error, ...) for SCORES."""
    from jagged.analysis import metrics_table
    from jagged.loaders import load

    dataset = load(scores, **load_options(kwargs))
    table = metrics_table(dataset, analysis_settings(kwargs))
    write_table(table, output)
    echo_rank_agreement(table)


def echo_rank_agreement(table: Any) -> None:
    """With profiles, say on stderr how each one reorders the models (Kendall tau)."""
    if "profile" not in table.columns:
        return
    from jagged.deployment import rank_agreement

    for row in rank_agreement(table).itertuples(index=False):
        click.echo(f"profile {row.profile}: Kendall tau(macro rank, deployment rank) = {row.kendall_tau:.3f} "
                   f"over {row.n_models} models; {row.n_rank_changes} change rank (at most "
                   f"{row.max_rank_change} places)", err=True)


def write_table(table: Any, output: str | None) -> None:
    """Write a metrics table as CSV to stdout, or to a .csv / .json file atomically."""
    from jagged.fileio import atomic_write_text

    if output is None:
        click.echo(table.to_csv(index=False), nl=False)
        return
    suffix = Path(output).suffix.lower()
    if suffix == ".json":
        text = table.to_json(orient="records", indent=2, force_ascii=False)
    elif suffix == ".csv":
        text = table.to_csv(index=False)
    else:
        raise JaggedInputError(f"{output}: output must end in .csv or .json")
    atomic_write_text(output, text)
    click.echo(f"wrote {output} ({len(table)} rows)", err=True)


@main.command()
@click.argument("scores", type=str)
@input_options
@guarded
def validate(scores: str, **kwargs: Any) -> None:
    """Check SCORES and print a one-paragraph summary of what was read."""
    from jagged.loaders import load
    from jagged.summary import describe

    dataset = load(scores, **load_options(kwargs))
    click.echo(describe(dataset))


@main.command()
@click.argument("scores", type=str, required=False, default=None)
@click.option("-o", "--output", type=click.Path(dir_okay=False), default="reports/jaggedness_report.html",
              show_default=True, help="The HTML report; the executed notebook is kept beside it as .ipynb.")
@click.option("--title", type=str, default="Jaggedness report", show_default=True, help="Report title.")
@click.option("--show-code", is_flag=True, help="Show the notebook's code cells (hidden by default).")
@click.option("--theme", type=click.Choice(THEMES), default="light", show_default=True,
              help="Page colours: light, dark, or auto (follows the reader's system setting).")
@click.option("--params", "params_file", type=str, default=None, metavar="FILE",
              help="Rerun from a parameter set: papermill-style YAML, or a jagged report (.html/.ipynb) "
                   "whose stored parameters and notebook are reused. Options given here override it.")
@click.option("--notebook", type=str, default=None, metavar="NAME",
              help="Notebook in notebooks/ to run with --params (default: the one stored in FILE, else "
                   "jaggedness_report); e.g. model_report.")
@click.option("--focus-model", "focus_model", type=str, default="", metavar="MODEL",
              help="Model for the exposure and drift-bound plots of the task-mix section "
                   "(default: the top-ranked by macro score).")
@input_options
@analysis_options
@guarded
def report(scores: str | None, output: str, title: str, show_code: bool, params_file: str | None,
           notebook: str | None, **kwargs: Any) -> None:
    """Run the report notebook on SCORES (default: the bundled MMLU-Pro data) and write HTML.

    Every input and analysis option reaches the notebook parameter of the same name. The
    input is checked before the notebook runs. A failing run leaves an earlier report
    untouched and keeps the failed notebook as OUTPUT.failed.ipynb (exit 1).
    """
    from jagged.report import ReportError, jaggedness_report

    try:
        if params_file is not None or notebook is not None:
            path = _report_from_parameters(params_file, notebook, scores, output, title, show_code, kwargs)
        else:
            path = jaggedness_report(scores, output, title=title, show_code=show_code, **kwargs)
    except ReportError as exc:
        if exc.ename == "JaggedInputError":
            raise JaggedInputError(exc.evalue or str(exc)) from None
        click.echo(f"jagged: report failed: {_one_line(str(exc))}", err=True)
        sys.exit(EXIT_INTERNAL)
    click.echo(f"wrote {path} (executed notebook: {path.with_suffix('.ipynb')})", err=True)


def _report_from_parameters(params_file: str | None, notebook: str | None, scores: str | None, output: str,
                            title: str, show_code: bool, kwargs: dict[str, Any]) -> Any:
    """``jagged report --params``: stored parameters, overridden by options typed on the command line."""
    from jagged.rerun import report_from_parameters

    context = click.get_current_context()
    typed = {name for name in ("scores", "title", *kwargs)
             if context.get_parameter_source(name) in (click.core.ParameterSource.COMMANDLINE,
                                                       click.core.ParameterSource.ENVIRONMENT)}
    overrides = {k: ("" if v is None else v) for k, v in {"scores": scores, **kwargs}.items() if k in typed}
    return report_from_parameters(params_file, output, notebook=notebook, overrides=overrides,
                                  title=title if "title" in typed else None, show_code=show_code)


@main.command()
@click.argument("scores", type=str)
@click.option("--out-dir", "out_dir", type=click.Path(file_okay=False), default="reports/batch", show_default=True,
              help="Output folder: index.html, the cross-model report and models/<slug>.html.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, metavar="N",
              help="Worker processes, each with one warm kernel (default: the number of CPUs).")
@click.option("--models", "--model", "models", multiple=True, metavar="M",
              help="Report on this model only (repeatable; default: every model).")
@click.option("--force", is_flag=True, help="Rebuild reports that are up to date.")
@input_options
@analysis_options
@guarded
def batch(scores: str, out_dir: str, jobs: int | None, models: tuple[str, ...], force: bool, **kwargs: Any) -> None:
    """Write one HTML report per model of SCORES, the cross-model report and an index.

    Reports whose inputs, parameters, notebook and code are unchanged are skipped (their
    content hash is stored in each report); a failing model is listed as failed in the
    index and the others are still written (exit 1). Ctrl-C keeps every finished report;
    run the same command again to resume.
    """
    from jagged.analysis import AnalysisOptions
    from jagged.batch import run_batch

    analysis = {k: v for k, v in kwargs.items() if k in AnalysisOptions.__dataclass_fields__}
    try:
        result = run_batch(scores, out_dir, jobs=jobs, models=models, force=force, load=load_options(kwargs),
                           analysis=analysis)
    except KeyboardInterrupt:
        click.echo("jagged: interrupted; finished reports are kept, run the same command again to resume",
                   err=True)
        sys.exit(130)
    click.echo(result.summary(), err=True)
    if result.failed:
        sys.exit(EXIT_INTERNAL)


if __name__ == "__main__":  # pragma: no cover
    main()
