"""The Python API as the README shows it: bundled data paths, jagged.plots, analyse() like the report, reprs."""

from __future__ import annotations

import inspect
import re
from html.parser import HTMLParser

import pytest

import jagged
import jagged.plots
from jagged.analysis import analyse


def test_data_path_finds_the_bundled_files_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert jagged.data_path() == jagged.BUNDLED_SCORES
    responses = jagged.data_path("mmlu_pro_responses.csv.gz")
    dataset = jagged.load(responses)
    assert dataset.items is not None and dataset.scores["model"].nunique() == 29
    with pytest.raises(jagged.JaggedInputError, match=r"no bundled data file 'x.csv' \(bundled: .*profiles_mmlu_pro"):
        jagged.data_path("x.csv")


def test_every_public_name_resolves_and_the_type_checkers_imports_name_the_same():
    import ast

    for name in jagged.__all__:
        assert getattr(jagged, name) is not None, name
    tree = ast.parse(inspect.getsource(jagged))
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    typed = {a.name: n.module for n in block.body for a in n.names}
    assert typed == jagged._LAZY


def test_jagged_plots_lists_every_figure_function_of_its_modules():
    import importlib
    import pkgutil

    listed = set(jagged.plots.__all__)
    assert listed <= set(dir(jagged.plots))
    found = set()
    for module in pkgutil.iter_modules(jagged.plots.__path__):
        if module.name in ("base", "labels"):  # helpers of the figure functions, not figures
            continue
        mod = importlib.import_module(f"jagged.plots.{module.name}")
        for name, func in inspect.getmembers(mod, inspect.isfunction):
            public = func.__module__ == mod.__name__ and not name.startswith("_")
            if public and "ax" in inspect.signature(func).parameters:
                found.add(name)
    assert found == listed, (found - listed, listed - found)
    assert jagged.plots.cv_vs_macro is importlib.import_module("jagged.plots.dispersion").cv_vs_macro
    with pytest.raises(AttributeError):
        jagged.plots.no_such_plot  # noqa: B018
    assert "plots" in dir(jagged) and jagged.plots is importlib.import_module("jagged.plots")


def test_analyse_on_the_bundled_data_has_the_reports_example_profiles():
    analysis = analyse(bootstrap=0)
    assert analysis.sections["profiles"]
    import pandas as pd

    bundled_profiles = set(pd.read_csv(jagged.data_path("profiles_mmlu_pro.csv"))["profile"])
    assert set(analysis.table["profile"]) == bundled_profiles and len(bundled_profiles) >= 2
    other = analyse(jagged.BUNDLED_SCORES, bootstrap=0)  # a path: no example profiles
    assert not other.sections["profiles"]
    assert not analyse(bootstrap=0, example_profiles=False).sections["profiles"]


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.cells: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.cells.append(data)


def test_result_objects_have_short_reprs_and_escaped_html_views():
    analysis = analyse(bootstrap=0)
    text = repr(analysis)
    assert text == ("<Analysis: 29 models x 14 domains from 'mmlu_pro_per_category.csv' (bundled); bootstrap=0, "
                    "weights='profiles_mmlu_pro.csv'>")
    assert "table" not in analysis.__dict__  # the repr computed nothing
    found = analysis.structure
    lines = repr(found).splitlines()
    assert len(lines) == 3 and lines[0] == "<Structure: 29 models x 14 domains"
    shares = dict(zip(found.shares["component"], found.shares["share"]))
    assert f"model {shares['model']:.1%}" in lines[1] and f"domain {shares['domain']:.1%}" in lines[1]
    assert "array" not in repr(found) and len(repr(found)) < 400
    audit = analysis.item_audit
    lines = repr(audit).splitlines()
    n_flagged = int(audit.items["flagged"].sum())
    assert lines[0] == f"<ItemAudit: {len(audit.items):,} items in 14 domains from 29 models"
    assert lines[1].startswith(f"  flagged: {n_flagged:,} (") and len(repr(audit)) < 400
    for obj, caption in ((analysis, "Analysis"), (found, "Structure"), (audit, "Item audit")):
        page = obj._repr_html_()
        parser = _Cells()
        parser.feed(page)
        assert parser.tags[:2] == ["table", "caption"] and parser.cells[0] == caption
        assert "script" not in parser.tags
    applies = [name for name, on in analysis.sections.items() if on]
    assert {"noise", "profiles", "items", "decomposition"} <= set(applies)
    assert f"<td>{', '.join(applies)}</td>" in analysis._repr_html_()
    assert f"<td>{n_flagged:,}</td>" in audit._repr_html_()


def test_the_analysis_html_view_escapes_its_source(tmp_path):
    path = tmp_path / "<b>x&y.csv"
    path.write_text("model,domain,score\na,d1,0.5\na,d2,0.7\nb,d1,0.6\nb,d2,0.9\n")
    page = analyse(path)._repr_html_()
    assert "&lt;b&gt;x&amp;y.csv" in page and "<b>" not in page
    assert re.search(r"<th scope=\"row\">models</th><td>2</td>", page)


@pytest.fixture(scope="module")
def small_items(tmp_path_factory):
    """A simulated item table (12 models, 3 domains, 240 items) written to a CSV with markup in its name."""
    from item_simulation import simulate

    table, _ = simulate(n_models=12, n_items=240, n_domains=3, seed=4)
    path = tmp_path_factory.mktemp("api") / "<i>items.csv"
    table.drop(columns="n_options").to_csv(path, index=False)
    return path


def test_every_public_result_type_has_a_short_repr_and_an_escaped_html_view(small_items):
    dataset = jagged.load(small_items, domains=["domain-0", "domain-1"])
    analysis = analyse(dataset, bootstrap=0)
    structure = jagged.structure(dataset.scores, draws=20)
    comparison = jagged.compare(dataset, dataset, n_boot=0)
    objects = {"Dataset": dataset, "Decomposition": analysis.decomposition, "Dimensions": structure.dimensions,
               "IRTFit": analysis.item_model, "FlawPosterior": analysis.flaws,
               "DomainInformation": analysis.information, "Comparison": comparison}
    for name, obj in objects.items():
        text = repr(obj)
        assert text.startswith(f"<{name}: ") and text.endswith(">") and "\n" not in text, text
        assert len(text) < 200 and "array" not in text and "DataFrame" not in text, text
        parser = _Cells()
        parser.feed(obj._repr_html_())
        assert parser.tags[:2] == ["table", "caption"] and parser.cells[0] == name
    assert repr(dataset) == ("<Dataset: input <i>items.csv; format items; models 12; domains 2; scores 24; "
                             "item rows 1,920; domains ['domain-0', 'domain-1']>")
    page = dataset._repr_html_()
    assert "&lt;i&gt;items.csv" in page and "<i>" not in page
    checks = jagged.structure(jagged.load("tests/data/mmlu_per_subject_lmeval_5shot.csv").scores, draws=20)
    assert repr(checks.categories).startswith("<CategoryCheck: categories 4; verdict ")


def test_analyse_takes_a_dataset_as_it_takes_a_path(small_items):
    import pandas as pd

    from_path = analyse(small_items, bootstrap=0)
    from_dataset = analyse(jagged.load(small_items), bootstrap=0)
    pd.testing.assert_frame_equal(from_path.table, from_dataset.table)
    assert from_dataset.sections == from_path.sections and not from_dataset.bundled
    assert analyse(jagged.load(), bootstrap=0).bundled  # the bundled scores, loaded first: the report's analysis
    with pytest.raises(TypeError, match=r"analyse\(\): models choose how a file is read; the Dataset is already"):
        analyse(jagged.load(small_items), models=["model-00"])


@pytest.mark.parametrize("call, name, suggestion", [
    (lambda: jagged.load(jagged.BUNDLED_SCORES, modles=["Yi-6B"]), "load", "models"),
    (lambda: jagged.load_scores(jagged.BUNDLED_SCORES, domian=["law"]), "load", "domains"),
    (lambda: analyse(bootstrp=5), "analyse", "bootstrap"),
    (lambda: __import__("jagged.report", fromlist=["x"]).jaggedness_report(None, "r.html", bootstap=5),
     "jaggedness_report", "bootstrap"),
    (lambda: __import__("jagged.analysis", fromlist=["x"]).compare_inputs(None, None, wieghts="w.csv"),
     "compare_inputs", "weights"),
])
def test_a_misspelt_keyword_is_refused_alike_everywhere_with_the_close_option_named(call, name, suggestion):
    with pytest.raises(TypeError) as caught:
        call()
    message = str(caught.value)
    assert message.startswith(f"{name}() got an unexpected keyword argument '")
    assert message.endswith(f"; did you mean '{suggestion}'?"), message
