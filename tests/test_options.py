"""jagged.options: one declaration per option, and every road (CLI, Python, notebooks) agrees with it."""

from __future__ import annotations

import pytest

from jagged import options as opts
from jagged.analysis import analyse, analyse_notebook
from jagged.cli import main
from jagged.report.notebooks import find_notebook, notebook_parameters


@pytest.mark.parametrize("notebook", list(opts.NOTEBOOK_PARAMETERS))
def test_the_notebooks_parameters_cells_are_the_generated_ones(notebook):
    """Regenerate with ``tests/nbval_refresh.py notebooks/NAME.ipynb`` after changing an option."""
    cells = __import__("json").loads(find_notebook(notebook).read_text())["cells"]
    cell = next(c for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))
    assert "".join(cell["source"]) == opts.parameters_cell(notebook)
    assert [p.name for p in notebook_parameters(notebook)] == list(opts.NOTEBOOK_PARAMETERS[notebook])


def test_every_loader_and_analysis_option_is_a_notebook_parameter_and_a_flag():
    declared = {p.name for p in notebook_parameters("jaggedness_report")}
    for option in opts.OPTIONS:
        if option.stage in (opts.LOAD, opts.ANALYSIS):
            assert option.name in declared, option.name
    flags = {o for p in main.commands["metrics"].params for o in getattr(p, "opts", [])}
    for option in opts.OPTIONS:
        if option.stage in (opts.LOAD, opts.ANALYSIS):
            assert option.flag in flags, option.flag
    report_flags = {o for p in main.commands["report"].params for o in getattr(p, "opts", [])}
    assert {"--theme", "--focus-model"} <= report_flags and "--max-models" not in report_flags


def test_values_translate_between_notebook_and_python():
    given = {"task": "", "metric": "acc,none", "profiles": ["a", "b"], "weights": "", "bootstrap": 10,
             "allow_incomplete": False, "max_models": 12, "other": 3}
    python = opts.from_notebook(given)
    assert python["task"] is None and python["weights"] is None and python["profiles"] == ("a", "b")
    assert python["other"] == 3 and python["bootstrap"] == 10
    assert opts.notebook_values(python) == given
    assert opts.load_kwargs(given) == {"metric": "acc,none", "allow_incomplete": False}
    assert opts.analysis_options(given) == opts.AnalysisOptions(profiles=("a", "b"), bootstrap=10)
    assert opts.analysis_options(given, bootstrap=0).bootstrap == 0


def test_parameters_cell_writes_literals_papermill_reads_back():
    lines = opts.parameters_cell("model_report").splitlines()
    assert lines[0] == 'model: str = ""  # ' + opts.NOTEBOOK_ONLY["model"].help
    assert 'profiles: list = []  # ' + opts.BY_NAME["profiles"].help in lines
    assert "ci: float = 0.95  # Bootstrap interval level." in lines
    assert "max_input_bytes: int = None  # " + opts.BY_NAME["max_input_bytes"].help in lines
    assert "bootstrap: int = 0  # " + opts.BY_NAME["bootstrap"].help in lines  # the model report's own default
    assert "bootstrap: int = 2000  #" in opts.parameters_cell("jaggedness_report")


def test_analyse_takes_the_notebook_parameters_and_rejects_unknown_options():
    namespace = {"scores": "", "weights": "", "profiles": [], "bootstrap": 0, "max_models": 10, "In": [], "x": 1}
    analysis = analyse_notebook(namespace)
    assert analysis.bundled and analysis.options.weights  # the bundled data's example profiles
    assert analysis.display["max_models"] == 10 and analysis.sections["profiles"]
    assert analyse(bootstrap=0).sections["profiles"]  # the Python API mirrors the report: example profiles
    assert not analyse(bootstrap=0, example_profiles=False).sections["profiles"]
    with pytest.raises(TypeError, match="unexpected keyword argument 'bootstrp'; did you mean 'bootstrap'"):
        analyse(bootstrp=0)


def test_analysis_options_are_the_declared_analysis_options_with_their_library_defaults():
    import dataclasses

    fields = dataclasses.fields(opts.AnalysisOptions)
    assert [f.name for f in fields] == list(opts.names(opts.ANALYSIS))
    # the library defaults, written out: a library call is fast and adds no columns unless asked
    assert opts.AnalysisOptions() == opts.AnalysisOptions(weights=None, profiles=(), missing_weight="error",
                                                          bootstrap=0, seed=0, ci=0.95)
    assert {f.name: f.default for f in fields} == {o.name: o.default for o in opts.OPTIONS
                                                   if o.stage == opts.ANALYSIS}
    # the CLI and the notebooks differ from the library only where declared (cli_default)
    assert {o.name: o.surface_default for o in opts.OPTIONS if o.stage == opts.ANALYSIS
            and o.surface_default != o.default} == {"bootstrap": 2000}



def _one_value(param) -> list[str]:
    """A valid value for a click option, as command-line words (none for a flag)."""
    import click

    if param.is_flag:
        return []
    kind = param.type
    if isinstance(kind, click.Choice):
        return [str(kind.choices[0])]
    if isinstance(kind, (click.IntRange, click.FloatRange)):
        return [str(kind.min if kind.min is not None and not kind.min_open else 1)]
    return ["x"]


def test_every_single_value_option_of_every_command_refuses_a_second_value():
    from click.testing import CliRunner

    checked = 0
    for name, command in main.commands.items():
        for param in command.params:
            if not getattr(param, "opts", None) or param.param_type_name != "option" or param.multiple:
                continue
            if param.name in ("help", "version"):
                continue
            flag = param.opts[-1]
            words = [flag, *_one_value(param)]
            result = CliRunner().invoke(main, [name, *words, *words])
            assert result.exit_code == 2, (name, flag, result.output)
            lines = result.stderr.strip().splitlines()
            assert lines == [f"jagged: error: {flag} given 2 times; it takes one value, give it once "
                             f"(see 'jagged {name} --help')"], (name, flag, lines)
            checked += 1
    assert checked >= 60
    # two flags of one destination are one choice; repeatable options stay repeatable
    both = CliRunner().invoke(main, ["items", "--abilities", "--by-domain"])
    assert both.exit_code == 2 and "--abilities and --by-domain choose the same thing" in both.stderr
    repeated = CliRunner().invoke(main, ["validate", "--where", "a=1", "--where", "b=2", "no-such.csv"])
    assert repeated.exit_code == 2 and "no such file" in repeated.stderr
