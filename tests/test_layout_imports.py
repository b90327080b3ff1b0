"""The package's layout: no import cycles, and the stages only import downstream of themselves.

Every ``import`` counts, also those inside functions (a lazy import is still a dependency);
only the package facades (``jagged/__init__.py`` and the subpackages' ``__init__``) are left
out, since they import nothing eagerly.
"""

from __future__ import annotations

import ast
from pathlib import Path

import jagged

PACKAGE = Path(jagged.__file__).parent
#: The stages of the data's road, in order; a module may import its own stage and earlier ones.
#: ``analysis`` (jagged/analysis.py) composes the statistics once per report.
#: Views (tables and sentences) come before plots (figures): a plot may import a view, never the reverse.
STAGES = ("base", "readers", "stats", "analysis", "views", "plots", "report", "cli")
#: Top-level modules of no stage (used everywhere).
BASE = {"jagged.errors", "jagged.text", "jagged.resources", "jagged.fileio", "jagged.options", "jagged.option_checks",
        "jagged.safe_yaml", "jagged.paths"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The jagged modules a file imports (``from jagged.x import y`` resolves y when it is a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("jagged"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("jagged") and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in known else node.module)
    return {m for m in found if m in known}


def graph() -> dict[str, set[str]]:
    mods = modules()
    facades = {m for m, p in mods.items() if p.name == "__init__.py"}
    known = set(mods)
    return {m: imports_of(p, known) - facades - {m} for m, p in mods.items() if m not in facades}


def stage(module: str) -> str:
    if module in BASE or module.startswith("jagged.data"):
        return "base"
    if module == "jagged.cli":
        return "cli"
    return module.split(".")[1]


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every back edge of a depth-first walk, as the cycle it closes."""
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    return cycles


def test_no_import_cycles():
    cycles = find_cycles(graph())
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_cycle_finder_on_planted_graphs():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert find_cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []
    assert find_cycles({"x": {"x"}}) == [["x", "x"]]


def test_stages_import_only_upstream():
    order = {name: i for i, name in enumerate(STAGES)}
    wrong = []
    for module, targets in graph().items():
        assert stage(module) in order, f"{module} is in no stage folder"
        for target in targets:
            if order[stage(target)] > order[stage(module)]:
                wrong.append(f"{module} ({stage(module)}) imports {target} ({stage(target)})")
    assert not wrong, "; ".join(sorted(wrong))



#: A statistic may name the Dataset type (a container; it reads nothing), never a reader that reads.
STATS_MAY_IMPORT = {"jagged.readers.dataset"}
#: Stats -> readers imports still to remove, each in another helper's module (issue 22); the list may only shrink.
STATS_READER_DEBT = {
    ("jagged.stats.item_audit", "jagged.readers.items"),  # validate_items for an item table given directly
    ("jagged.stats.item_audit", "jagged.readers.choices"),  # option_index, a pure label helper
    ("jagged.stats.item_expr", "jagged.readers.items"),  # ITEM_ALIASES
}


def test_stats_read_no_files():
    """Statistics are pure functions: no module of jagged.stats imports a reader (files are read before them)."""
    found = {(module, target) for module, targets in graph().items() if stage(module) == "stats"
             for target in targets if stage(target) == "readers" and target not in STATS_MAY_IMPORT}
    new = sorted(f"{module} imports {target}" for module, target in found - STATS_READER_DEBT)
    assert not new, "stats must not read files: " + "; ".join(new)


# --------------------------------------------------------------------------- what a stage's code calls

#: Calls that read a file (``open``, ``pd.read_csv``, ``con.read_parquet``, ``Path.read_text``, ``np.load`` ...).
FILE_READS = {"open", "read_csv", "read_parquet", "read_json", "read_table", "read_excel", "read_text", "read_bytes",
              "loadtxt", "genfromtxt", "load"}
#: Stats modules that still read files, each another helper's (issue 32: the engine as one object); may only shrink.
STATS_FILE_DEBT = {"jagged.stats.engine", "jagged.stats.item_sums", "jagged.stats.poisson_bootstrap"}
#: numpy / pandas estimators: a view that calls one computes a statistic (medians order heatmaps and summarise the
#: models a figure leaves out: the one summary a view may take).
ESTIMATORS = {"quantile", "nanquantile", "percentile", "nanpercentile", "mean", "nanmean", "std", "nanstd", "var",
              "nanvar", "corr", "corrcoef", "cov", "rank"}
#: The one function of jagged.stats a view may call: the check that a printed value lies in its printed interval.
VIEWS_MAY_CALL = {"jagged.stats.intervals.outside"}
#: Views that still call statistics, each another helper's module (issue 31); the list may only shrink.
VIEWS_DEBT = {"jagged.views.item_audit"}


def calls(tree: ast.AST) -> list[str]:
    """The names called in a module: ``f`` for ``f(...)``, the attribute for ``x.f(...)``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            out.append(func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else "")
    return out


def stats_functions_used(tree: ast.AST) -> set[str]:
    """``module.name`` of every function (a lowercase name) a module takes from jagged.stats, imported or called."""
    found, modules = set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("jagged.stats"):
            for alias in node.names:
                if node.module == "jagged.stats":
                    modules[alias.asname or alias.name] = f"jagged.stats.{alias.name}"
                elif alias.name[0].islower():
                    found.add(f"{node.module}.{alias.name}")
        elif isinstance(node, ast.Import):
            modules.update({a.asname: a.name for a in node.names if a.name.startswith("jagged.stats") and a.asname})
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules \
                and node.attr[0].islower():
            found.add(f"{modules[node.value.id]}.{node.attr}")
    return found


def test_the_scanners_find_planted_calls():
    planted = ast.parse("import pandas as pd\nfrom jagged.stats import metrics as m\nfrom jagged.stats.intervals "
                        "import ESTIMATE_OF, outside\nx = pd.read_csv(p).quantile(0.5)\nm.cv_error(x)\nopen(p)\n")
    assert {"read_csv", "quantile", "open", "cv_error"} <= set(calls(planted))
    assert stats_functions_used(planted) == {"jagged.stats.metrics.cv_error", "jagged.stats.intervals.outside"}


def test_stats_call_nothing_that_reads_a_file():
    """Statistics take tables: no module of jagged.stats opens or reads a file itself."""
    found = {m: sorted(set(calls(ast.parse(p.read_text(encoding="utf-8")))) & FILE_READS)
             for m, p in modules().items()
             if p.name != "__init__.py" and stage(m) == "stats" and m not in STATS_FILE_DEBT}
    assert not {m: c for m, c in found.items() if c}


def test_views_compute_no_statistic():
    """A view imports no scipy or statsmodels, calls no estimator and no function of jagged.stats (results reach it
    computed, from the analysis or the notebook); medians and :data:`VIEWS_MAY_CALL` are the exceptions."""
    wrong = []
    for module, path in modules().items():
        if path.name == "__init__.py" or stage(module) != "views" or module in VIEWS_DEBT:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names} | {
            n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        wrong += [f"{module} imports {m}" for m in imported if m.split(".")[0] in ("scipy", "statsmodels", "sklearn")]
        wrong += [f"{module} calls {c}" for c in sorted(set(calls(tree)) & ESTIMATORS)]
        wrong += [f"{module} calls {f}" for f in sorted(stats_functions_used(tree) - VIEWS_MAY_CALL)]
    assert not wrong, "; ".join(wrong)


#: Report and CLI modules that still import a statistic, each another helper's (issues 31, 32); may only shrink.
COMPOSING_DEBT = {("jagged.cli", "jagged.stats.item_audit"), ("jagged.report.batch_index", "jagged.stats.uncertainty"),
                  ("jagged.report.batch_plan", "jagged.stats.weights")}


def test_the_report_and_the_cli_compose_no_statistic():
    """After the analysis stage nothing composes statistics: the report and the command line import no module of
    jagged.stats (they call :mod:`jagged.analysis`, which does)."""
    found = {(m, t) for m, targets in graph().items() if stage(m) in ("report", "cli") for t in targets
             if stage(t) == "stats"} - COMPOSING_DEBT
    assert not found, sorted(found)
