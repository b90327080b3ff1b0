"""The ``jagged`` command line: parse, call the library, print, exit 0 / 1 / 2.

Exit status: 0 success; 1 internal error (or a batch with failed reports); 2 bad input (or
an input too large for the memory this process may use), with a one-line message on stderr
that names the file and the column or value at fault. Whatever is printed from the data (a
name, a value) shows its control characters and bidi overrides escaped (:func:`say`).
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Callable

import click

from jagged import options as opts
from jagged.errors import JaggedInputError
from jagged.report.notebooks import DEFAULT_OUTPUT, DEFAULT_TITLE
from jagged.text import HIDDEN, one_line, printable

EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2


def say(text: object, err: bool = True) -> None:
    """Print what jagged found: names are data, so every control character and bidi override shows escaped."""
    click.echo(printable(text), err=err)


def _print_warning(message: Any, category: type, filename: str, lineno: int, file: Any = None,
                   line: str | None = None) -> None:
    say(f"jagged: warning: {one_line(str(message))}")


def guarded(func: Callable[..., Any]) -> Callable[..., Any]:
    """Run a command body, turning errors into one-line messages and exit statuses."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        previous = warnings.showwarning
        warnings.showwarning = _print_warning
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("default")
                # a library's unclosed loop or socket collected late is not the user's to read (tests check for leaks)
                warnings.simplefilter("ignore", ResourceWarning)
                warnings.showwarning = _print_warning
                return func(*args, **kwargs)
        except JaggedInputError as exc:
            say(f"jagged: error: {one_line(str(exc))}")
            sys.exit(EXIT_BAD_INPUT)
        except KeyboardInterrupt:
            click.echo("jagged: interrupted", err=True)
            sys.exit(130)
        except MemoryError as exc:  # the input needs more memory than this process may have: say so, like bad input
            detail = f" ({one_line(str(exc), 120)})" if str(exc).strip() else ""
            say(f"jagged: error: out of memory{detail}: the input needs more memory than this process may use; "
                "select models or domains (--models, --domains) or run it where there is more")
            sys.exit(EXIT_BAD_INPUT)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except Exception as exc:  # the last guard: never a traceback unless asked for
            if os.environ.get("JAGGED_DEBUG"):
                raise
            say(f"jagged: internal error: {type(exc).__name__}: {one_line(str(exc))} "
                "(set JAGGED_DEBUG=1 to see the traceback)")
            sys.exit(EXIT_INTERNAL)
        finally:
            warnings.showwarning = previous

    return wrapper


def check_inputs(scores: Any, kwargs: dict[str, Any]) -> None:
    """Refuse SCORES or --weights that are neither a regular file nor a folder (a FIFO would hang)."""
    from jagged.report.rerun import check_input_path

    check_input_path(scores, "scores")
    check_input_path(kwargs.get("weights"), "weights")


def check_outputs(tables: dict[str, str | None], inputs: dict[str, Any], report: tuple[str, str | None] = ("", None),
                  folders: dict[str, Any] | None = None) -> None:
    """Check every output before anything is read or written (a failed check writes nothing).

    Parameters
    ----------
    tables : dict
        Flag → a table output (``-o``, ``--items-out``): ``.csv`` or ``.json``.
    inputs : dict
        What each input is → its path (SCORES, --weights, --n-items, --params ...).
    report : (flag, path)
        A report's ``.html`` (:func:`jagged.report.run.check_destination`); its ``.ipynb`` and
        ``.json`` beside it are outputs too.
    folders : dict, optional
        Folders the command fills, that hold no input (see :func:`jagged.paths.check_outputs`).
    """
    from jagged.paths import check_outputs as apart

    outputs: dict[str, Any] = {}
    for flag, path in tables.items():
        if path is not None:
            table_format(path)
            outputs[flag] = path
    flag, html = report
    if html is not None:
        from jagged.report.run import check_destination

        html = check_destination(html)
        outputs.update({flag: html, f"{flag} {html}'s notebook": html.with_suffix(".ipynb"),
                        f"{flag} {html}'s record": html.with_suffix(".json")})
    apart(outputs, {name: path for name, path in inputs.items() if isinstance(path, (str, os.PathLike))}, folders)


def load_inputs(scores: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The input paths of a command that reads SCORES with the load options (for :func:`check_outputs`)."""
    return {"SCORES": scores, "--weights": kwargs.get("weights"), "--n-items": kwargs.get("n_items")}


#: Options that say how to read SCORES (every command that reads scores).
input_options = opts.cli_options(opts.LOAD)
#: Options that say what to compute beyond the jaggedness penalty.
analysis_options = opts.cli_options(opts.ANALYSIS)


class OneValueCommand(click.Command):
    """A command that refuses a single-value option given twice (click would keep the last silently).

    Options that take one value (every option not declared ``multiple``, flags included)
    may appear once; options sharing a destination (``--abilities`` / ``--by-domain``)
    count together. Repeatable options (``--where``, ``--models`` ...) are not affected.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        _, _, order = self.make_parser(ctx).parse_args(args=list(args))
        seen: dict[str, list[str]] = {}
        for param in order:
            if isinstance(param, click.Option) and not param.multiple and not param.count and param.name:
                seen.setdefault(param.name, []).append(param.opts[-1])
        for flags in seen.values():
            if len(set(flags)) > 1:
                raise click.UsageError(f"{' and '.join(dict.fromkeys(flags))} choose the same thing; give one of "
                                       "them", ctx=ctx)
            if len(flags) > 1:
                raise click.UsageError(f"{flags[0]} given {len(flags)} times; it takes one value, give it once",
                                       ctx=ctx)
        return super().parse_args(ctx, args)


class OneLineErrors(click.Group):
    """A click group whose usage errors (a bad option value, an unknown option) are one line, exit 2.

    Its commands are :class:`OneValueCommand`: a single-value option given twice is refused.
    """

    command_class = OneValueCommand

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            return super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as exc:
            hint = f" (see 'jagged {exc.ctx.info_name} --help')" if exc.ctx is not None and exc.ctx.parent else ""
            say(f"jagged: error: {one_line(exc.format_message())}{hint}")
            sys.exit(EXIT_BAD_INPUT)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="jagged", prog_name="jagged")
def main() -> None:
    """How jagged is a model? Domain error dispersion and audit reports.

    SCORES is a per-domain score table (CSV or Parquet; long: model, domain, score
    [, n_items, category]; wide: model plus one column per domain), item-level
    results (model, domain, item, correct[, choice, key]), lm-evaluation-harness
    results or samples, Inspect logs (.json or .eval), Every Eval Ever aggregate or
    instance-level files, or HELM run folders (a file or a folder); the format is
    detected from the content. Run 'jagged COMMAND --help' for each command's options.
    """


@main.command()
@click.argument("scores", type=str)
@click.option("-o", "--output", type=str, default=None,
              help="Write the table to OUT.csv or OUT.json (default: CSV on stdout).")
@input_options
@analysis_options
@guarded
def metrics(scores: str, output: str | None, **kwargs: Any) -> None:
    """Compute the per-model metrics table (macro_score, cv_error, ...) for SCORES."""
    from jagged.analysis import analyse

    check_inputs(scores, kwargs)
    check_outputs({"-o": output}, load_inputs(scores, kwargs))
    analysis = analyse(scores, example_profiles=False, **kwargs)
    write_table(analysis.table, output)
    if analysis.has_profiles:  # how each profile reorders the models
        for row in analysis.rank_agreement.itertuples(index=False):
            say(f"profile {row.profile}: Kendall tau(macro rank, deployment rank) = {row.kendall_tau:.3f} over "
                f"{row.n_models} models; {row.n_rank_changes} change rank (at most {row.max_rank_change} places)")


def table_format(output: str) -> str:
    """``"csv"`` or ``"json"`` from a table output's name, else a one-line error."""
    suffix = Path(output).suffix.lower()
    if suffix not in (".csv", ".json"):
        raise JaggedInputError(f"{output}: output must end in .csv or .json")
    if os.path.isdir(output):
        raise JaggedInputError(f"{output}: is a directory, expected a file name")
    if os.path.lexists(output) and not os.path.isfile(output):
        raise JaggedInputError(f"{output}: exists and is not a regular file")
    return suffix[1:]


def json_text(text: str) -> str:
    """JSON text with the bidi overrides and C1 controls in its strings escaped as ``\\uXXXX`` (the same JSON).

    JSON escapes the C0 controls in strings itself; a raw newline is the layout's.
    """
    return HIDDEN.sub(lambda m: m.group() if m.group() in "\t\n\r" else f"\\u{ord(m.group()):04x}", text)


def write_table(table: Any, output: str | None) -> None:
    """Write a table as CSV to stdout, or to a .csv / .json file atomically (CSV: :func:`jagged.fileio.csv_text`)."""
    from jagged.fileio import atomic_write_text, csv_text

    if output is None:
        click.echo(csv_text(table, keep="\t"), nl=False)
        return
    if table_format(output) == "json":
        text = json_text(table.to_json(orient="records", indent=2, force_ascii=False))
    else:
        text = csv_text(table)
    atomic_write_text(output, text)
    say(f"wrote {output} ({len(table)} rows)")


@main.command()
@click.argument("scores", type=str)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON (n_dimensions, first_share, "
              "eigenvalues, thresholds, draws, seed, variance_shares, ...).")
@click.option("-o", "--output", type=str, default=None,
              help="Also write the per (model, domain) residuals to OUT.csv (or .json).")
@click.option("--draws", type=click.IntRange(min=1), default=None, metavar="N",
              help="Permuted data sets of the parallel analysis and the category check (default 500; fewer "
                   "for very large tables, the output says how many).")
@click.option("--items-out", "items_out", type=str, default=None, metavar="FILE",
              help="With --level item: write item, domain, general_loading, specific_loading and their SEs "
                   "to FILE.csv (or .json).")
@opts.cli_options(opts.STRUCTURE)
@input_options
@opts.cli_options(opts.ANALYSIS, exclude=("weights", "profiles", "missing_weight", "bootstrap", "engine",
                                          "spark_master"))
@guarded
def structure(scores: str, as_json: bool, output: str | None, draws: int | None, items_out: str | None,
              level: str, external: str | None, **kwargs: Any) -> None:
    """Is it the model or the benchmark? Decompose SCORES' error rates and count the dimensions.

    Fits logit(error) = model level + domain difficulty + residual, prints the share of the
    variance each part (and sampling noise) explains, and runs a parallel analysis (Horn 1965)
    of the domains: how many dimensions lie above chance, and the first one's share.
    """
    import json

    from jagged.analysis import analyse
    from jagged.views.structure import structure_summary, structure_text

    check_inputs(scores, kwargs)
    if level == "item":
        structure_items(scores, as_json, output, items_out, external, kwargs)
        return
    if items_out is not None or external is not None:
        raise JaggedInputError(f"{'--items-out' if items_out is not None else '--external'} needs --level item")
    check_outputs({"-o": output}, load_inputs(scores, kwargs))
    result = analyse(scores, example_profiles=False, draws=draws, **kwargs).structure
    if output is not None:
        write_table(result.decomposition.residuals(), output)
    if as_json:
        click.echo(json_text(json.dumps(structure_summary(result), indent=2, ensure_ascii=False)))
    else:
        click.echo(structure_text(result))  # each line escaped by the view


def structure_items(scores: str, as_json: bool, output: str | None, items_out: str | None, external: str | None,
                    kwargs: dict[str, Any]) -> None:
    """``jagged structure --level item``: the bifactor fit of SCORES' item-level results."""
    import json

    from jagged.analysis import analyse
    from jagged.report.rerun import check_input_path
    from jagged.views.bifactor import bifactor_summary, bifactor_text

    check_input_path(external, "external")
    if external is not None and not Path(external).is_file():
        raise JaggedInputError(f"--external {external}: no such file")
    check_outputs({"-o": output, "--items-out": items_out}, {**load_inputs(scores, kwargs), "--external": external})
    fit, correlations = analyse(scores, example_profiles=False, **kwargs).item_structure(external)
    if output is not None:
        write_table(fit.scores, output)
    if items_out is not None:
        write_table(fit.items[["item", "domain", "general_loading", "se_general_loading", "specific_loading",
                               "se_specific_loading"]], items_out)
    if as_json:
        click.echo(json_text(json.dumps(bifactor_summary(fit, correlations), indent=2, ensure_ascii=False)))
    else:
        click.echo(bifactor_text(fit, correlations))  # each line escaped by the view


@main.command()
@click.argument("scores", type=str)
@input_options
@guarded
def validate(scores: str, **kwargs: Any) -> None:
    """Check SCORES and print a one-paragraph summary of what was read."""
    from jagged.readers.load import load
    from jagged.views.summary import describe

    check_inputs(scores, kwargs)
    if not kwargs.get("collection"):
        from jagged.readers.eee import datastore_collections
        from jagged.views.summary import collections_text

        found = datastore_collections(Path(scores))
        if len(found) > 1:  # a datastore root: list what it holds instead of refusing
            click.echo(collections_text(scores, found))  # each line escaped by the view
            return
    dataset = load(scores, **opts.load_kwargs(kwargs))
    say(describe(dataset), err=False)


@main.command("items")
@click.argument("scores", type=str, required=False, default=None)
@click.option("-o", "--output", type=str, default=None,
              help="Write the table to OUT.csv or OUT.json (default: CSV on stdout).")
@click.option("--top", type=click.IntRange(min=1), default=None, metavar="N",
              help="Only the N items ranked first by P(flawed).")
@click.option("--rest", type=click.Choice(["domain", "test"]), default="domain", show_default=True,
              help="Rest score of the item-rest correlation, and the trait of the item response model: the item's "
                   "domain (a trait per domain), or the whole test (one trait).")
@click.option("--abilities", "table", flag_value="abilities",
              help="Write the abilities instead: per model and trait (model, group, n_items, theta, theta_sd; "
                   "EAP ability and its posterior SD).")
@click.option("--by-domain", "table", flag_value="domains",
              help="Write the per-domain table instead: flagged shares, and the expected number of flawed items "
                   "with its 90% interval (visible: the miskeyed items responses show; expected_flawed: every flaw).")
@click.option("--models-out", "models_out", type=str, default=None, metavar="FILE",
              help="Also write, per model, its agreement with the file's key on items likely miskeyed against its "
                   "peers (agree, agree_peers, agree_expected, z, q_value, flagged: possible contamination or "
                   "benchmark-specific training) to FILE.csv or .json.")
@input_options
@opts.cli_options(opts.ANALYSIS, exclude=("weights", "profiles", "missing_weight", "bootstrap", "seed", "ci"))
@guarded
def items_command(scores: str | None, output: str | None, top: int | None, rest: str, table: str | None,
                  models_out: str | None, **kwargs: Any) -> None:
    """Audit the items of SCORES (item-level results), most likely flawed first.

    One row per item ranked by P(flawed) from one model (see the README): first what a
    reviewer reads (what the strongest models chose, the key, the flags, the likely
    answer), then P(flawed) with its interval, the classical evidence (difficulty
    p_correct, discrimination r_rest and ul_index, the distractors when the table has
    choice and key columns) and the 2PL item parameters; then the question (text) and its
    options (a JSON list, option k being letter A + k) where the input has them, and what
    the five models with the highest macro score answered (top_models_chose). Without
    SCORES: the bundled MMLU-Pro responses and questions. A summary goes to stderr.

    P(flawed) needs the response matrix in memory: an input aggregated out of core (a
    large Parquet file, a partitioned folder) or --engine spark gets the classical
    evidence and flags, by domain and item, and a note on stderr (--abilities and
    --models-out then stop with that note).
    """
    from jagged.analysis import Analysis
    from jagged.readers.items import load_bundled_items
    from jagged.readers.load import load
    from jagged.stats.item_audit import domain_flags
    from jagged.views import item_audit as item_views

    check_inputs(scores, kwargs)
    check_outputs({"-o": output, "--models-out": models_out}, load_inputs(scores, kwargs))
    dataset = load(scores, **opts.load_kwargs(kwargs)) if scores else load_bundled_items()
    analysis = Analysis(dataset, options=opts.analysis_options(kwargs), bundled=not scores, item_rest=rest)
    audit = analysis.item_audit
    if audit is None:
        raise JaggedInputError(f"{dataset.source}: {dataset.format} scores have no item-level results; the item "
                               "audit needs a table with model, domain, item, correct (and optionally choice, key)")
    if (table == "abilities" or models_out is not None) and analysis.flaws is None:
        flag = "--abilities" if table == "abilities" else "--models-out"
        raise JaggedInputError(f"{flag}: {analysis.item_model_input[1]}")
    if table == "abilities":
        write_table(audit.abilities, output)
    elif table == "domains":
        write_table(domain_flags(audit), output)
    else:
        listed = audit.items["item"].head(top) if top else None
        write_table(item_views.item_listing(audit, text=analysis.item_text(listed), choices=item_views.item_choices(
            analysis, listed), top=top), output)
    if models_out is not None:
        write_table(analysis.flaws.models, models_out)
    for line in item_views.summary_lines(audit):
        say(f"jagged: {line}")


@main.command()
@click.argument("scores", type=str, required=False, default=None)
@click.option("-o", "--output", type=str, default=DEFAULT_OUTPUT.as_posix(),
              show_default=True, help="The HTML report; the executed notebook is kept beside it as .ipynb.")
@click.option("--title", type=str, default=DEFAULT_TITLE, show_default=True, help="Report title.")
@click.option("--show-code", is_flag=True, help="Show the notebook's code cells (hidden by default).")
@click.option("--params", "params_file", type=str, default=None, metavar="FILE",
              help="Rerun from a parameter set: papermill-style YAML, or a jagged report (.html/.ipynb) "
                   "whose stored parameters and notebook are reused. Options given here override it. Stored "
                   "parameters are data: plain values checked against each option's type and bounds before "
                   "anything runs; the engine, Spark master and input cap come from this command line only.")
@click.option("--notebook", type=str, default=None, metavar="NAME",
              help="Packaged notebook to run with --params (default: the one stored in FILE, else "
                   "jaggedness_report); e.g. model_report. Never a path.")
@opts.cli_options(opts.DISPLAY)
@opts.cli_options(opts.STRUCTURE)
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
    from jagged.report.jaggedness import jaggedness_report

    check_outputs({}, {**load_inputs(scores, kwargs), "--params": params_file}, report=("-o", output))
    if params_file is not None or notebook is not None:
        write_report(lambda: _report_from_parameters(params_file, notebook, scores, output, title, show_code, kwargs))
    else:
        write_report(lambda: jaggedness_report(scores, output, title=title, show_code=show_code, **kwargs))


def write_report(run: Callable[[], Path]) -> None:
    """Run a report and say where it went; a notebook that failed on bad input exits 2, any other failure 1."""
    from jagged.report.execution import ReportError

    try:
        path = run()
    except ReportError as exc:
        if exc.ename == "JaggedInputError":
            raise JaggedInputError(exc.evalue or str(exc)) from None
        say(f"jagged: report failed: {one_line(str(exc))}")
        sys.exit(EXIT_INTERNAL)
    say(f"wrote {path} (executed notebook: {path.with_suffix('.ipynb')})")


def _report_from_parameters(params_file: str | None, notebook: str | None, scores: str | None, output: str,
                            title: str, show_code: bool, kwargs: dict[str, Any]) -> Any:
    """``jagged report --params``: stored parameters, overridden by options typed on the command line."""
    from jagged.report.jaggedness import report_from_parameters

    context = click.get_current_context()
    typed = {name for name in ("scores", "title", *kwargs)
             if context.get_parameter_source(name) in (click.core.ParameterSource.COMMANDLINE,
                                                       click.core.ParameterSource.ENVIRONMENT)}
    overrides = {k: ("" if v is None else v) for k, v in {"scores": scores, **kwargs}.items() if k in typed}
    return report_from_parameters(params_file, output, notebook=notebook, overrides=overrides,
                                  title=title if "title" in typed else None, show_code=show_code)


@main.command()
@click.argument("scores", type=str, required=False, default=None)
@click.option("--out-dir", "out_dir", type=str, default="reports/batch", show_default=True,
              help="Output folder: index.html, the cross-model report and models/<slug>.html.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, metavar="N",
              help="Reports made at once, each in a warm kernel (default: the number of CPUs).")
@click.option("--models", "--model", "models", multiple=True, metavar="M",
              help="Report on this model only (repeatable; default: every model; every model is still read).")
@click.option("--force", is_flag=True, help="Rebuild reports that are up to date.")
@opts.cli_options(opts.LOAD, exclude=("models",))  # --models chooses the reports here (the load option's flag)
@analysis_options
@guarded
def batch(scores: str | None, out_dir: str, jobs: int | None, models: tuple[str, ...], force: bool,
          **kwargs: Any) -> None:
    """Write one HTML report per model of SCORES (default: the bundled MMLU-Pro data), the cross-model report
    and an index.

    Reports whose inputs, parameters, notebook and code are unchanged are skipped (their
    content hash is stored in each report); a failing model is listed as failed in the
    index and the others are still written (exit 1). Ctrl-C or SIGTERM stops the kernels,
    keeps every finished report and writes the index of them (exit 130 or 143); run the
    same command again to resume.
    """
    from jagged.report.batch import run_batch
    from jagged.report.batch_plan import MODELS_DIR

    check_inputs(scores, kwargs)
    check_outputs({}, load_inputs(scores, kwargs), report=("--out-dir", os.path.join(out_dir, "report.html")),
                  folders={"--out-dir": os.path.join(out_dir, MODELS_DIR)})
    analysis = {k: kwargs[k] for k in opts.names(opts.ANALYSIS) if k in kwargs}
    try:
        result = run_batch(scores, out_dir, jobs=jobs, models=models, force=force, load=opts.load_kwargs(kwargs),
                           analysis=analysis)
    except KeyboardInterrupt as exc:
        click.echo("jagged: interrupted; finished reports are kept, run the same command again to resume",
                   err=True)
        sys.exit(128 + getattr(exc, "signum", 2))  # 130 for Ctrl-C, 143 for SIGTERM
    say(result.summary())
    if result.failed:
        sys.exit(EXIT_INTERNAL)



@main.command("compare")
@click.argument("a", type=str)
@click.argument("b", type=str)
@click.option("-o", "--output", type=str, default=None,
              help="Write the per-model table (macro_score_a, macro_score_b, macro_score_delta, "
                   "macro_delta_vs_field, ...) to OUT.csv or OUT.json (default: CSV on stdout when no other output "
                   "is asked for).")
@click.option("--items-out", "items_out", type=str, default=None, metavar="FILE",
              help="Write the item ledger (one row per item whose status changed; column change) to FILE.csv or "
                   ".json; needs item-level results on both sides.")
@click.option("--domains-out", "domains_out", type=str, default=None, metavar="FILE",
              help="Write the field's shift per shared domain (shift: the mean change over the models, with "
                   "shift_lo, shift_hi, beyond_noise) to FILE.csv or .json.")
@click.option("--report", "report_path", type=str, default=None, metavar="OUT.html",
              help="Also write the compare report (findings first) to OUT.html.")
@opts.cli_options(opts.COMPARE)
@input_options
@analysis_options
@guarded
def compare_command(a: str, b: str, output: str | None, items_out: str | None, domains_out: str | None,
                    report_path: str | None, alpha: float, repeats: bool, **kwargs: Any) -> None:
    """What changed from run or release A to B? Like-for-like deltas per model, with paired intervals.

    A and B are any two inputs jagged reads (the same file twice with --where-a and --where-b
    for two releases in one file). Every delta is B - A on what both share (the items each
    model answered on both sides, else the domains both score), split into what every model
    shares (the field's shift per domain) and each model's change relative to the field; the
    item ledger, rank changes (Kendall tau) and added/removed models and domains come with it.
    Findings go to stderr.
    """
    from jagged.analysis import compare_inputs
    from jagged.report.compare import compare_report
    from jagged.views.compare import CompareView, findings

    check_inputs(a, kwargs)
    check_inputs(b, {})
    check_outputs({"-o": output, "--items-out": items_out, "--domains-out": domains_out},
                  {**load_inputs(None, kwargs), "A": a, "B": b},
                  report=("--report", report_path))
    side_a, side_b, comparison = compare_inputs(a, b, alpha=alpha, repeats=repeats, **kwargs)
    if items_out is not None and comparison.ledger is None:
        raise JaggedInputError(f"--items-out needs item-level results on both sides ({side_a.source}: "
                               f"{'yes' if side_a.items is not None else 'no'}, {side_b.source}: "
                               f"{'yes' if side_b.items is not None else 'no'})")
    outputs = ((output, comparison.models), (items_out, comparison.ledger), (domains_out, comparison.domains))
    if output is None and items_out is None and domains_out is None and report_path is None:
        write_table(comparison.models, None)
    for path, table in outputs:
        if path is not None:
            write_table(table, path)
    view = CompareView(comparison, name_a=side_a.source, name_b=side_b.source, ci=kwargs.get("ci", 0.95),
                       alpha=alpha)
    for sentence in findings(view):
        say(f"jagged: {sentence}")
    if report_path is not None:
        write_report(lambda: compare_report(a, b, report_path, alpha=alpha, repeats=repeats, **kwargs))


if __name__ == "__main__":  # pragma: no cover
    main()
