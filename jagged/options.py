"""Every user option, declared once: its CLI flag, its loader or analysis argument, its notebook parameter.

:data:`OPTIONS` names each option once, with its stage, type, bounds, defaults and help;
the functions below translate between the three roads: click options for a command
(:func:`cli_options`), the loader's and the analysis's arguments out of any mapping
(:func:`load_kwargs`, :func:`analysis_options`), notebook parameters and back
(:func:`notebook_values`, :func:`from_notebook`: ``""`` means "not given" there, since
papermill parameters are plain literals), and a notebook's ``parameters`` cell
(:func:`parameters_cell`).

Parameters are data: stored parameters (``jagged report --params``) come from files other
people wrote, so every value is held to its option's declared type and bounds
(:func:`check_value`, :func:`check_parameters`, with :mod:`jagged.option_checks`) before a
kernel starts, and capabilities never come from them (:func:`set_aside_capabilities`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping, Sequence

from jagged.errors import JaggedInputError
from jagged.option_checks import MAX_LIST, MAX_TEXT, conform, shown, text_ok

#: Stages an option belongs to (``compare``: the compare command's and notebook's own, in :data:`NOTEBOOK_ONLY`).
LOAD, ANALYSIS, DISPLAY, COMPARE = "load", "analysis", "display", "compare"
#: The structure command's own options (item-level structure), in :data:`NOTEBOOK_ONLY`.
STRUCTURE = "structure"
#: Page themes of the report template.
THEMES = ("light", "dark", "auto")
#: Every report section ``--sections`` can name, in report order, and whether it is optional: shown only where
#: ``Analysis.sections`` says it applies, its notebook cells tagged ``section-NAME`` (``tests/test_sections.py``).
REPORT_SECTIONS: dict[str, bool] = {
    "glance": False, "provenance": False, "data": False, "metrics": False, "overview": False, "hierarchy": True,
    "noise": True, "profiles": True, "items": True, "irt": True, "decomposition": True, "bifactor": True,
    "meaning": False}
#: Largest seed (numpy's ``default_rng`` takes any non-negative integer; 2**32 - 1 is plenty).
MAX_SEED = 2**32 - 1
#: Largest ``max_input_bytes``: 1 TiB.
MAX_INPUT_BYTES = 2**40


@dataclass(frozen=True)
class Option:
    """One user option.

    Attributes
    ----------
    name : str
        Keyword argument and notebook parameter; the CLI flag is :attr:`flag`.
    stage : {"load", "analysis", "display", "compare"}
        Who takes it: :func:`jagged.load`, :class:`AnalysisOptions`, the notebook, compare.
    kind : {"str", "bool", "int", "float", "list"}
        Its type, as the notebook's parameters cell declares it.
    default, cli_default : object
        The library default (None: not given); the CLI's and notebooks' when it differs.
    help : str
        One line for ``--help``, the notebook's parameters cell and the report's parameters
        (no ``=``: papermill could not read the notebook's line).
    choices, metavar, cli, cli_flag
        Allowed values; placeholder in ``--help``; whether the CLI has a flag; the flag when
        it is not ``--name`` with dashes (``--profile``, repeatable).
    minimum, maximum, open_bounds
        Bounds of a numeric option (every one has a maximum), shared by the CLI's click
        type and :meth:`check`; inclusive unless ``open_bounds``.
    capability : bool
        It widens what a run may touch (an engine, a cluster, the input cap): it comes from
        the command line only, never from stored parameters (:func:`set_aside_capabilities`).
    """

    name: str
    stage: str
    kind: str
    default: Any
    help: str
    cli_default: Any = ...
    choices: tuple | None = None
    metavar: str | None = None
    cli: bool = True
    cli_flag: str | None = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    open_bounds: bool = False
    capability: bool = False

    @property
    def flag(self) -> str:
        """The command-line flag."""
        return self.cli_flag or "--" + self.name.replace("_", "-")

    @property
    def surface_default(self) -> Any:
        """The default of the CLI and the notebooks."""
        return self.default if self.cli_default is ... else self.cli_default

    def notebook_default(self) -> Any:
        """The default as a notebook parameter ("" for an unset text option, [] for a list)."""
        return to_notebook(self, self.surface_default)

    def rule(self) -> str:
        """What a value must be, as the error messages and ``--help`` say it."""
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.kind in ("int", "float"):
            noun = "an integer" if self.kind == "int" else "a number"
            between = "strictly between" if self.open_bounds else "between"
            rule = f"{noun} {between} {self.minimum} and {self.maximum}"
            return rule + (" (or null)" if self.default is None else "")
        if self.kind == "bool":
            return "true or false"
        if self.kind == "list":
            return f"a list of at most {MAX_LIST} texts"
        return f"text of at most {MAX_TEXT} characters without NUL"

    def check(self, value: Any, source: str = "") -> Any:
        """``value`` as plain types (str, int, float, bool, None, list of str) if valid, else an error.

        ``source`` starts the message: ``SOURCE: parameter 'NAME' must be RULE, not VALUE``
        (a :class:`~jagged.errors.JaggedInputError`). ``None`` is valid only for options
        without a default of their own and without choices.
        """
        ok, plain = conform(self, value)
        if not ok:
            where = f"{source}: " if source else ""
            raise JaggedInputError(f"{where}parameter {self.name!r} must be {self.rule()}, not {shown(value)}")
        return plain


def _options() -> tuple[Option, ...]:
    return (
        # -- how to read SCORES
        Option("score_scale", LOAD, "str", "fraction", "Scale of scores in CSV/Parquet tables; 'percent' divides "
               "by 100.", choices=("fraction", "percent")),
        Option("task", LOAD, "str", None, "lm-eval: the group (or comma-separated tasks) whose leaf tasks are "
               "the domains; required when a file holds several.", metavar="GROUP"),
        Option("metric", LOAD, "str", None, "Evaluator outputs: the metric used as the score (lm-eval: default "
               "acc,none, else the only higher-is-better one; Inspect: SCORER[,KEY]).", metavar="NAME[,FILTER]"),
        Option("model_name", LOAD, "str", None, "Evaluator outputs: model name to use instead of the one in "
               "the files.", metavar="NAME"),
        Option("domain_key", LOAD, "str", None, "Item-level evaluator outputs: the sample field naming the "
               "domain (Inspect sample metadata, lm-eval doc; dotted for nested). Default: the task.",
               metavar="KEY"),
        Option("allow_incomplete", LOAD, "bool", False, "Inspect: accept logs whose status is not 'success' "
               "(cancelled, error, started)."),
        Option("collection", LOAD, "str", None, "Every Eval Ever datastore: the collection (data/<collection>/) "
               "to read; required when the folder holds several.", metavar="NAME"),
        Option("where", LOAD, "list", (), "Tables: keep only the rows whose COLUMN equals VALUE (repeatable; all "
               "must hold), before the duplicate check.", metavar="COLUMN=VALUE"),
        Option("models", LOAD, "list", (), "Read only these models (repeatable; default: every model).",
               metavar="M"),
        Option("domains", LOAD, "list", (), "Read only these domains (repeatable; default: every domain).",
               metavar="D"),
        Option("n_items", LOAD, "str", None, "Tables without item counts: the items behind each score, one "
               "number for every domain or a CSV of domain,n_items (benchmark sizes); refused when the table "
               "has n_items.", metavar="N|FILE"),
        Option("strict", LOAD, "bool", False, "Every Eval Ever: refuse a bad value or a damaged file instead of "
               "leaving it out (left-out entries are listed by validate and the report)."),
        Option("max_input_bytes", LOAD, "int", None, "Most bytes any input file, archive member or compressed "
               "stream may expand to while it is read (default: the readers' cap).", metavar="BYTES",
               minimum=1, maximum=MAX_INPUT_BYTES, capability=True),
        # -- what to compute
        Option("weights", ANALYSIS, "str", None, "Deployment weights (CSV or YAML: profile, domain, "
               "weight[, comment]); adds dep_score, wedge, wedge_bound, ranks, one row per model x profile. "
               "Reports of the bundled scores use its illustrative profiles without it.", metavar="FILE"),
        Option("profiles", ANALYSIS, "list", (), "Profile to compute (repeatable): a name in the weights file "
               "or the built-in 'uniform' (macro average) or 'items' (weights by n_items). Default: every "
               "profile in the weights.", metavar="NAME", cli_flag="--profile"),
        Option("missing_weight", ANALYSIS, "str", "error", "A score domain absent from a weights profile: an "
               "error, or no exposure.", choices=("error", "zero")),
        Option("bootstrap", ANALYSIS, "int", 0, "Bootstrap replicates for <stat>_lo/_hi intervals of "
               "cv_error, macro_score, dep_score, wedge (items resampled per domain, paired across models; "
               "binomial from n_items otherwise); 0: no intervals.", cli_default=2000, metavar="B",
               minimum=0, maximum=100_000),
        Option("seed", ANALYSIS, "int", 0, "Random seed of the bootstrap (same seed, same intervals).",
               metavar="S", minimum=0, maximum=MAX_SEED),
        Option("ci", ANALYSIS, "float", 0.95, "Bootstrap interval level.", metavar="LEVEL", minimum=0, maximum=1,
               open_bounds=True),
        Option("engine", ANALYSIS, "str", "duckdb", "Where the item-level sums run: embedded DuckDB, or Spark "
               "(pip install 'jagged[spark]', Java 17).", choices=("duckdb", "spark"), capability=True),
        Option("spark_master", ANALYSIS, "str", None, "With --engine spark: the Spark master URL (default: "
               "Spark's own configuration, else local[*]).", metavar="URL", capability=True),
        # -- what the report shows
        Option("focus_model", DISPLAY, "str", None, "Model for the exposure and drift-bound plots of the "
               "task-mix section (default: the top-ranked by macro score).", metavar="MODEL"),
        Option("max_models", DISPLAY, "int", 40, "With more models, the plots show the most and least jagged "
               "max_models/2 each.", cli=False, minimum=2, maximum=1000),
        Option("sections", DISPLAY, "str", None, "Comma-separated report sections to show (default: all that "
               f"apply): {', '.join(REPORT_SECTIONS)}.", metavar="NAME[,NAME...]"),
        Option("theme", DISPLAY, "str", "light", "Page colours: light, dark, or auto (follows the reader's "
               "system setting).", choices=THEMES),
    )


#: Every option, in the order the notebooks declare them.
OPTIONS: tuple[Option, ...] = _options()
BY_NAME: dict[str, Option] = {o.name: o for o in OPTIONS}
_SIDE_HELP = 'any input jagged reads; "" means the bundled item-level MMLU-Pro responses'
#: Notebook parameters that are no option: checked like options (:func:`check_parameters`).
NOTEBOOK_ONLY: dict[str, Option] = {o.name: o for o in (
    Option("scores", "notebook", "str", None, 'Score file or folder to analyse; "" means the bundled MMLU-Pro '
           "per-category scores.", cli=False),
    Option("model", "notebook", "str", None, 'Model to report on; "" means the first model in sorted order.',
           cli=False),
    Option("n_extremes", "notebook", "int", 3, "How many best and worst domains to name.", cli=False,
           minimum=0, maximum=1000),
    # the compare command's and notebook's two sides and own settings (flags of `jagged compare` but a and b)
    Option("a", COMPARE, "str", None, "Earlier run or release (A): " + _SIDE_HELP + ".", cli=False),
    Option("b", COMPARE, "str", None, "Later run or release (B): " + _SIDE_HELP + ".", cli=False),
    Option("alpha", COMPARE, "float", 0.05, "False discovery rate of the items whose difficulty moved "
           "(Benjamini-Hochberg over items).", minimum=0, maximum=1, open_bounds=True),
    Option("repeats", COMPARE, "bool", False, "A and B are repeated runs of the same models on the same items: "
           "add the run-to-run noise floor and beyond_run_noise."),
    *(Option(f"where_{side}", COMPARE, "list", (), f"Side {side.upper()} only: keep the rows whose COLUMN equals "
             "VALUE (repeatable; --where applies to both sides), so that one file holding several releases is "
             "enough.", metavar="COLUMN=VALUE")
      for side in "ab"),
    Option("level", STRUCTURE, "str", "domain", "Structure from domain scores, or from item-level results: a "
           "general factor and one per domain (bifactor item response model).", choices=("domain", "item")),
    Option("external", STRUCTURE, "str", None, "With --level item: a table of models (model plus numeric "
           "columns) to correlate the factor scores with.", metavar="FILE"),
)}
#: Loader options that choose what is read: shown with the report's subtitle, in "What was read" and its JSON.
SELECTION = ("where", "models", "domains", "n_items")
#: Parameters that name a file or folder jagged reads (see :func:`check_input_path`).
PATH_PARAMETERS = ("scores", "weights", "a", "b", "external")


@dataclass(frozen=True)
class AnalysisOptions:
    """What to compute beyond the jaggedness penalty: the ``analysis`` options as one value.

    The fields are the :data:`ANALYSIS` options, in declaration order, with their declared
    library defaults (:attr:`Option.default`; ``bootstrap`` is 0 here, so a library call is
    fast and adds no columns unless asked, 2000 on the CLI and in the notebooks). ``ci`` is
    also 1 − the level of the equal-error test behind ``noise_flag``; ``engine`` and
    ``spark_master`` make the :class:`jagged.stats.engine.Engine` (``Engine.from_options``).
    """

    weights: str | None = BY_NAME["weights"].default
    profiles: tuple[str, ...] = BY_NAME["profiles"].default
    missing_weight: str = BY_NAME["missing_weight"].default
    bootstrap: int = BY_NAME["bootstrap"].default
    seed: int = BY_NAME["seed"].default
    ci: float = BY_NAME["ci"].default
    engine: str = BY_NAME["engine"].default
    spark_master: str | None = BY_NAME["spark_master"].default


# ---------------------------------------------------------------------------------------
# Checking values: parameters are data


def check_value(name: str, value: Any, source: str = "") -> Any:
    """Check one parameter, an option or a :data:`NOTEBOOK_ONLY` one (see :meth:`Option.check`)."""
    option = BY_NAME.get(name) or NOTEBOOK_ONLY.get(name)
    if option is None:
        raise JaggedInputError(f"{source + ': ' if source else ''}unknown parameter {name!r}")
    return option.check(value, source)


def check_parameters(values: Mapping[str, Any], source: str, declared: Iterable[str] | None = None) -> dict[str, Any]:
    """Check a whole parameter set (e.g. a report's stored parameters) before a kernel starts.

    Every name must be ``declared`` (default: every option and notebook-only parameter) and
    declared by an option or a :data:`NOTEBOOK_ONLY` entry; every value passes
    :func:`check_value`. Returns the values as plain types, in order; else one
    :class:`JaggedInputError` line starting with ``source`` (``"--params r.html"``) naming
    the unknown names or the first bad value.
    """
    known = [k for k in (declared if declared is not None else [*BY_NAME, *NOTEBOOK_ONLY])
             if k in BY_NAME or k in NOTEBOOK_ONLY]
    unknown = [shown(k) if not isinstance(k, str) or len(k) > 60 else repr(k) for k in values if k not in known]
    if unknown:
        from jagged.text import listing

        raise JaggedInputError(f"{source}: unknown parameter{'s' if len(unknown) > 1 else ''} {listing(unknown, 5)} "
                               f"(known: {', '.join(known)})")
    return {name: check_value(name, value, source) for name, value in values.items()}


def check_keywords(given: Iterable[str], function: str, known: Iterable[str] | None = None) -> None:
    """Refuse keyword arguments that name no option (default ``known``: :data:`OPTIONS`), as Python does.

    Raises
    ------
    TypeError
        ``load() got an unexpected keyword argument 'modles'; did you mean 'models'?``
        (:func:`difflib.get_close_matches`), or the names ``function`` takes when none is close.
    """
    import difflib

    known = list(BY_NAME) if known is None else list(known)
    for name in given:
        if name not in known:
            close = difflib.get_close_matches(str(name), known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f" (it takes {', '.join(known)})"
            raise TypeError(f"{function}() got an unexpected keyword argument {str(name)[:60]!r}{hint}")


def set_aside_capabilities(values: Mapping[str, Any], defaults: Mapping[str, Any], typed: Iterable[str],
                           source: str) -> dict[str, Any]:
    """Stored parameters with every capability back at its default, unless typed on the command line.

    A report's parameters (or a ``--params`` YAML) come from whoever sent them: they
    describe a run, never widen what a rerun may touch. An option declared with
    ``capability=True`` (the engine, the Spark master, the input cap) keeps its stored value
    in the report it came from, for provenance; the rerun uses the notebook's ``defaults``
    unless its flag is among ``typed``, and one warning starting with ``source`` names what
    it set aside.
    """
    import warnings

    from jagged.errors import JaggedWarning

    typed = set(typed)
    out = dict(values)
    aside = [o for o in OPTIONS if o.capability and o.name in values and o.name not in typed
             and values[o.name] != defaults.get(o.name, o.notebook_default())]
    for option in aside:
        out[option.name] = defaults.get(option.name, option.notebook_default())
    if aside:
        stored = ", ".join(f"{o.name}={shown(values[o.name])}" for o in aside)
        warnings.warn(f"{source}: stored {stored} not used: what a rerun may touch comes from the command line; give "
                      f"{', '.join(o.flag for o in aside)} to use {'it' if len(aside) == 1 else 'them'}", JaggedWarning,
                      stacklevel=2)
    return out


def names(stage: str) -> tuple[str, ...]:
    """The option names of a stage."""
    return tuple(o.name for o in OPTIONS if o.stage == stage)


def _given(value: Any) -> bool:
    return value is not None and value != ""


def load_kwargs(values: Mapping[str, Any]) -> dict[str, Any]:
    """The loader options given among ``values`` (CLI keywords, notebook parameters ...; "" and None: not given)."""
    out = {}
    for name in names(LOAD):
        if name in values and _given(values[name]):
            out[name] = values[name]
    return out


def selection(values: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`SELECTION` options given among ``values``, in that order ("", None and empty lists: not given).

    ``where``, ``models``, ``domains`` as lists of text (a text becomes a list of one),
    ``n_items`` as text.
    """
    out: dict[str, Any] = {}
    for name in SELECTION:
        value = values.get(name)
        if not _given(value) or (isinstance(value, (list, tuple)) and not value):
            continue
        if name == "n_items":
            out[name] = str(value)
        else:
            out[name] = [value] if isinstance(value, str) else [str(v) for v in value]
    return out


def analysis_options(values: Mapping[str, Any], **override: Any) -> AnalysisOptions:
    """An :class:`AnalysisOptions` from ``values`` ("" and None: the default; lists become tuples) and ``override``."""
    kwargs: dict[str, Any] = {}
    for name in names(ANALYSIS):
        if name in values and _given(values[name]):
            value = values[name]
            kwargs[name] = tuple(value) if isinstance(value, (list, tuple)) else value
    kwargs.update(override)
    return AnalysisOptions(**kwargs)


def to_notebook(option: Option | str, value: Any) -> Any:
    """One value as a notebook parameter: None → "" (text) / False / [], tuples → lists."""
    option = BY_NAME[option] if isinstance(option, str) else option
    if value is None:
        return {"str": "", "list": []}.get(option.kind)
    if isinstance(value, tuple):
        return list(value)
    return value


def notebook_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """Option values as notebook parameters; names that are not options pass unchanged."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key in BY_NAME or key in NOTEBOOK_ONLY:
            out[key] = to_notebook(BY_NAME.get(key) or NOTEBOOK_ONLY[key], value)
        elif isinstance(value, tuple):
            out[key] = list(value)
        else:
            out[key] = value
    return out


def from_notebook(values: Mapping[str, Any]) -> dict[str, Any]:
    """Notebook parameters back as option values: "" → None for text options, lists → tuples."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        option = BY_NAME.get(key)
        if option is not None and option.kind == "str" and value == "":
            value = None
        elif option is not None and option.kind == "list" and isinstance(value, list):
            value = tuple(value)
        out[key] = value
    return out


# ---------------------------------------------------------------------------------------
# Notebooks


#: Each report notebook's parameters, in order (options and :data:`NOTEBOOK_ONLY` names).
NOTEBOOK_PARAMETERS: dict[str, tuple[str, ...]] = {
    "jaggedness_report": ("scores", *names(LOAD), *names(ANALYSIS), "focus_model", "max_models", "theme", "level",
                          "external"),
    "model_report": ("model", "scores", *names(LOAD), *names(ANALYSIS), "n_extremes"),
    "compare_report": ("a", "b", *names(LOAD), *names(ANALYSIS), "max_models", "theme", "alpha", "repeats",
                       "where_a", "where_b"),
}
#: Notebook defaults that differ from :attr:`Option.surface_default` (a model report runs no bootstrap).
NOTEBOOK_DEFAULTS: dict[str, dict[str, Any]] = {"model_report": {"bootstrap": 0}}


def parameters_cell(notebook: str) -> str:
    """The source of a report notebook's ``parameters`` cell, generated from the declarations.

    One line per :data:`NOTEBOOK_PARAMETERS` entry: ``name: kind = default  # help``, the
    default a literal papermill reads back. ``tests/nbval_refresh.py`` writes it into the
    notebook; ``tests/test_options.py`` checks that the notebooks hold it.
    """
    out = []
    for name in NOTEBOOK_PARAMETERS[notebook]:
        option = BY_NAME.get(name) or NOTEBOOK_ONLY[name]
        default = to_notebook(option, NOTEBOOK_DEFAULTS.get(notebook, {}).get(name, option.surface_default))
        out.append(f"{name}: {option.kind} = {_literal(default)}  # {option.help}")
    return "\n".join(out)


def _literal(value: Any) -> str:
    """A Python literal for a parameters cell, strings in double quotes as the notebooks write them."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    return repr(value)


# ---------------------------------------------------------------------------------------
# The command line


def cli_options(*stages: str, exclude: Sequence[str] = ()) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator adding the click options of ``stages`` (load, analysis, display, compare) but ``exclude``."""
    import click

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        every = (*OPTIONS, *NOTEBOOK_ONLY.values())
        for option in reversed([o for o in every if o.stage in stages and o.cli and o.name not in exclude]):
            func = click.option(option.flag, option.name, **_click_kwargs(option))(func)
        return func

    return decorate


@lru_cache(maxsize=1)
def _text_type() -> Any:
    """The click type of text options: at most :data:`MAX_TEXT` characters, no NUL."""
    import click

    class Text(click.ParamType):
        name = "text"

        def convert(self, value: Any, param: Any, ctx: Any) -> Any:
            if not text_ok(value):
                self.fail(f"must be text of at most {MAX_TEXT} characters without NUL, not {shown(value)}", param, ctx)
            return value

    return Text()


def _click_kwargs(option: Option) -> dict[str, Any]:
    import click

    kwargs: dict[str, Any] = {"help": option.help, "default": option.surface_default}
    if option.metavar:
        kwargs["metavar"] = option.metavar
    if option.kind == "bool":
        return {**kwargs, "is_flag": True}
    if option.kind == "list":
        return {**kwargs, "multiple": True, "default": (), "type": _text_type()}
    if option.choices:
        kwargs["type"] = click.Choice(option.choices)
    elif option.kind == "int":  # the bounds of the declaration, shown in --help as [LOW<=x<=HIGH]
        kwargs["type"] = click.IntRange(option.minimum, option.maximum, min_open=option.open_bounds,
                                        max_open=option.open_bounds)
    elif option.kind == "float":
        kwargs["type"] = click.FloatRange(option.minimum, option.maximum, min_open=option.open_bounds,
                                          max_open=option.open_bounds)
    else:
        kwargs["type"] = _text_type()
    if option.surface_default is not None:
        kwargs["show_default"] = True
    return kwargs


def parse_sections(value: str | None, source: str = "--sections") -> tuple[str, ...] | None:
    """The sections a ``--sections`` value chooses, in report order, each once (None or "": every section).

    ``value`` is comma-separated names of :data:`REPORT_SECTIONS`; unknown names, or a
    choice of none, are a one-line :class:`JaggedInputError` starting with ``source``.
    """
    if value is None or not str(value).strip():
        return None
    names = [name.strip().lower() for name in str(value).split(",") if name.strip()]
    if not names:
        raise JaggedInputError(f"{source}: names no section (known: {', '.join(REPORT_SECTIONS)})")
    unknown = [name for name in names if name not in REPORT_SECTIONS]
    if unknown:
        listed = ", ".join(shown(name) for name in dict.fromkeys(unknown))
        raise JaggedInputError(f"{source}: unknown section{'s' if len(unknown) > 1 else ''} {listed} "
                               f"(known: {', '.join(REPORT_SECTIONS)})")
    return tuple(name for name in REPORT_SECTIONS if name in names)
