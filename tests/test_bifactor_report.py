"""The report's "Distinct abilities or one?" section: opt-in with --level item on item-level results."""

from __future__ import annotations

import html as html_lib
import re

import pandas as pd
from click.testing import CliRunner
from test_bifactor import simulate

from jagged.cli import main


def test_level_item_adds_the_bifactor_section_with_its_figures_and_external_table(tmp_path):
    table, truth = simulate(12, (15, 15, 15), (0.5, 0.5, 1.5), seed=5)
    table.to_csv(tmp_path / "items.csv", index=False)
    pd.DataFrame({"model": [f"m{k:03d}" for k in range(12)], "index": truth["g"]}).to_csv(tmp_path / "ext.csv",
                                                                                         index=False)
    out = tmp_path / "r.html"
    result = CliRunner().invoke(main, ["report", str(tmp_path / "items.csv"), "-o", str(out), "--bootstrap", "0",
                                       "--level", "item", "--external", str(tmp_path / "ext.csv")])
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8").split("<main>", 1)[1]
    start = page.index('id="Distinct-abilities-or-one?"')
    section = page[start:page.index("What the numbers mean", start)]
    alts = [html_lib.unescape(a) for a in re.findall(r'<img\b[^>]*alt="([^"]*)"', section)]
    assert len(alts) == 2
    assert alts[0].startswith("Stacked horizontal bar chart, one bar per domain (3)")
    varying = int(table.groupby("item")["correct"].nunique().gt(1).sum())  # items every model answers alike: aside
    assert varying < 45 and alts[1].startswith(f"Scatter plot, one dot per item ({varying})")
    text = re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", " ", section)))
    assert re.search(r"One general ability carries ω_h = 0\.\d\d \[0\.\d\d, [01]\.\d\d\]", text)
    assert "with 12 models they understate the uncertainty" in text
    # the external table: the general factor and each domain's, raw and own (7 rows), against "index"
    assert "Factor scores against the external columns" in text
    assert len(re.findall(r"\b(?:raw|own) index [+-]\d\.\d\d", text)) == 7
    # the same input without --level item: the section is not there (and no fit ran)
    plain = tmp_path / "plain.html"
    result = CliRunner().invoke(main, ["report", str(tmp_path / "items.csv"), "-o", str(plain), "--bootstrap", "0"])
    assert result.exit_code == 0, result.output
    assert "Distinct abilities or one?" not in plain.read_text(encoding="utf-8")


def test_external_without_level_item_is_refused_before_any_kernel(tmp_path):
    (tmp_path / "ext.csv").write_text("model,x\nm000,1\n")
    result = CliRunner().invoke(main, ["report", "-o", str(tmp_path / "r.html"), "--external",
                                       str(tmp_path / "ext.csv")])
    assert result.exit_code == 2 and "--external needs --level item" in result.output
    assert not list(tmp_path.glob("r.*"))
