"""Hostile inputs: names that are markup, and the matrix of attacks on every flag, reader and stored value.

Names are data, never markup: reports of a table whose every name is hostile. Model, domain,
category and profile names, the focus model and the ``--title`` are script tags,
event-handler attributes, attribute breakers, mathtext, paths (``../``, absolute), a reserved
device name, 300 characters, non-ASCII text, a bidi override and a terminal escape. The
cross-model report (and the per-model reports and the index of ``jagged batch``) must

* write nothing outside the output folder;
* never contain the markup unescaped, nor any script, event handler or foreign element
  (checked on the parsed HTML of every file written, not on the executed notebooks), nor a
  raw control character or bidi override;
* never fire a dialog in the browser, and show every name as text (DOM ``textContent``),
  control characters and bidi overrides as escapes.

Then :data:`ATTACKS`, the matrix: one row per attack (glob characters in paths, FIFOs,
symlinks, footer bombs, outputs that are inputs, huge numbers, duplicate keys, hostile text,
Spark masters), each exit 2 with one line, in-process and without a kernel. A new flag,
reader or stored value adds its rows there; stored parameters are attacked in
``tests/test_params_hostile.py``.
"""

from __future__ import annotations

import os
import re
import shlex
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from browser import chromium, luminance, open_page, require_chromium, screenshot
from click.testing import CliRunner

from jagged.cli import main
from jagged.text import printable

MARKUP = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", '"><svg onload=alert(1)>']
OTHERS = ["../../outside/escape", "CON", "m" * 299 + "z", "模型-Ünïcödé-🚀",
          r"a$\frac{$b *b* _c_ {{7*7}} &amp; `d`", "' onmouseover='alert(1)", "rlo-\u202egnp.exe", "esc-\x1b[31mred"]
CATEGORIES = ["<b onclick=alert(3)>cat</b>", r"$\x$ cat"]
PROFILES = ["<i onmouseover=alert(2)>p</i>", r"$\q$ mix"]
TITLE = '<script>alert("title")</script> & "quotes"'
FOCUS = MARKUP[0]


def _names(root: Path) -> list[str]:
    """Every hostile name, with an absolute path pointing into the watched ``outside`` folder."""
    return MARKUP + OTHERS + [str(root / "outside" / "absolute")]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict:
    """Write the inputs, run ``jagged report`` (and ``jagged batch``) in a separate cwd, list new files."""
    root = tmp_path_factory.mktemp("hostile")
    for folder in ("in", "out", "outside", "cwd"):
        (root / folder).mkdir()
    names = _names(root)
    rng = np.random.default_rng(11)
    rows = [(m, d, round(float(rng.uniform(0.15, 0.95)), 3), int(rng.integers(60, 400)), CATEGORIES[j % 2])
            for m in names for j, d in enumerate(names)]
    pd.DataFrame(rows, columns=["model", "domain", "score", "n_items", "category"]).to_csv(
        root / "in" / "scores.csv", index=False)
    weights = [(p, d, float(w)) for p in PROFILES for d, w in zip(names, rng.uniform(1, 10, len(names)))]
    pd.DataFrame(weights, columns=["profile", "domain", "weight"]).to_csv(root / "in" / "weights.csv", index=False)
    before = {p for p in root.rglob("*")}
    out = root / "out"
    previous = os.getcwd()
    os.chdir(root / "cwd")
    try:
        inputs = [str(root / "in" / "scores.csv"), "--weights", str(root / "in" / "weights.csv"), "--bootstrap", "0"]
        chosen = [word for name in names for word in ("--models", name)]  # every model: the selection names them
        result = CliRunner().invoke(main, ["report", *inputs, "-o", str(out / "report.html"), "--title", TITLE,
                                           "--focus-model", FOCUS, "--theme", "dark", *chosen])
        assert result.exit_code == 0, result.output
        batch = None
        if "batch" in main.commands:
            batch = CliRunner().invoke(main, ["batch", *inputs, "--out-dir", str(out / "batch"), "-j", "2"])
            assert batch.exit_code == 0, batch.output
    finally:
        os.chdir(previous)
    written = sorted(p for p in root.rglob("*") if p not in before and p.is_file())
    return {"root": root, "out": out, "names": names, "written": written, "batched": batch is not None}


def test_every_file_written_is_inside_the_output_folder(run):
    out = run["out"].resolve()
    assert run["written"], "nothing was written"
    outside = [p for p in run["written"] if not p.resolve().is_relative_to(out)]
    assert not outside, outside
    assert not any((run["root"] / "outside").iterdir())
    assert not any((run["root"] / "cwd").iterdir())
    for path in run["written"]:
        assert len(path.name.encode("utf-8")) <= 100, path  # slugs are bounded (the OS would stop at 255)
        assert path.name.split(".")[0].upper() not in {"CON", "PRN", "AUX", "NUL"}, path
    if run["batched"]:  # one page per model, each in the models folder
        pages = [p for p in run["written"] if p.suffix == ".html" and p.parent.name == "models"]
        assert len(pages) == len(run["names"])


class _Markup(HTMLParser):
    """Collect what a parsed page would execute: script elements, on* attributes, foreign tags."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.handlers: list[str] = []
        self.urls: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(tag)
        self._in_script = tag == "script"
        for name, value in attrs:
            if name.startswith("on"):
                self.handlers.append(f"<{tag} {name}={value}>")
            if name in ("src", "href", "action", "formaction") and value is not None:
                self.urls.append(value)

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False


def _html_files(run: dict) -> list[Path]:
    files = [p for p in run["written"] if p.suffix == ".html"]
    assert files
    return files


def test_no_markup_from_the_data_in_any_html_written(run):
    sort_js = (Path(__file__).resolve().parent.parent / "templates" / "batch" / "sort.js")
    allowed_scripts = {sort_js.read_text(encoding="utf-8").strip()} if sort_js.is_file() else set()
    for path in _html_files(run):
        page = path.read_text(encoding="utf-8")
        for raw in [t for t in MARKUP + CATEGORIES + PROFILES + [TITLE] if "<" in t]:
            assert raw not in page, f"{raw!r} unescaped in {path.name}"
        parsed = _Markup()
        parsed.feed(page)
        assert not parsed.handlers, (path.name, parsed.handlers[:3])
        assert {"svg", "b", "i"}.isdisjoint(parsed.tags), path.name
        assert all(s.strip() in allowed_scripts for s in parsed.scripts), path.name
        for url in parsed.urls:  # fragments, relative links and embedded PNGs only
            scheme = re.match(r"^\s*([a-zA-Z][a-zA-Z0-9+.-]*):", url)
            assert scheme is None or url.startswith("data:image/png;base64,"), (path.name, url[:80])
        assert 'class="stderr"' not in page, f"kernel warnings in {path.name}"
        assert printable(page, keep="\t\n\r") == page, f"a raw control character or bidi override in {path.name}"


def test_names_show_as_text_and_nothing_runs_in_the_browser(run):
    # a cell's text, or for a very long cell folded into <details class="long-cell">, the whole text inside it
    texts_js = """() => Array.from(document.querySelectorAll('th, td, caption, h1, h2, h3, title, li, a'))
        .map(el => { const folded = el.querySelector(':scope > details.long-cell > .wrap');
                     return (folded || el).textContent.replace('\\u00b6', '').trim(); })"""
    cross_model = run["out"] / "report.html"
    seen: set[str] = set()
    shown = {printable(name) for name in run["names"]}  # a bidi override or an escape shows as its escape
    with chromium(require_chromium()) as browser:
        for path in _html_files(run):
            with open_page(browser, path) as (page, log):
                texts = page.evaluate(texts_js)
                title = page.title()
                background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
                if path == cross_model:
                    screenshot(page, "hostile_cross_model_report")
                    h1 = page.evaluate("() => document.querySelector('h1').textContent")
                    alts = page.evaluate("() => Array.from(document.images).map(i => i.alt)")
            assert not log.dialogs, (path.name, log.dialogs)
            assert not log.page_errors and not log.console_errors, (path.name, log.console_errors)
            assert not log.remote_requests, (path.name, log.remote_requests)
            seen.update(texts)
            if path == cross_model:
                assert title == TITLE and h1 == TITLE
                assert luminance(background) < 0.05  # --theme dark reached the page
                assert f"Why: exposure against error for {FOCUS}" in texts
                assert any(FOCUS in alt for alt in alts)
                assert shown <= set(texts)  # each name is a table cell of its own
                assert set(CATEGORIES) <= set(texts) and set(PROFILES) <= set(texts)
    assert shown <= seen
    if run["batched"]:  # each per-model report is titled with its model, as text
        assert {f"Model report: {name}" for name in shown} <= seen


# --- the matrix: every flag, reader and stored value, attacked ------------------------------------------
#
# One row per attack: (id, what to build in the working folder, the command line, a fragment of the one line
# it must exit 2 with). The builders make each input in milliseconds; every row runs in-process, without a
# kernel. A new flag, reader or stored value adds its rows: glob characters, FIFOs and symlinks in its paths,
# huge and tiny numbers, hostile text, an output that is an input.

TINY = "model,domain,score,n_items\na,x,0.5,10\na,y,0.7,10\nb,x,0.6,10\nb,y,0.9,10\n"
HUGE = "1" + "0" * 400  # above 1.8e308, the largest float


def _lake(folder: Path, models: tuple[str, ...] = ("a", "b"), n: int = 6) -> Path:
    """A hive-partitioned item-level folder, ``model=M/part-0.parquet``: n items in two domains per model."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for k, model in enumerate(models):
        (folder / f"model={model}").mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"domain": [f"d{i % 2}" for i in range(n)], "item": [f"q{i}" for i in range(n)],
                                 "correct": [float((i + k) % 3 > 0) for i in range(n)]}),
                       folder / f"model={model}" / "part-0.parquet")
    return folder


def _constant_rows(path: Path, rows: int, model: str = "a") -> Path:
    """An item-level Parquet file of ``rows`` rows of one model, items 0, 1, ...: small on disk, large decoded."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"model": pa.array([model] * rows), "domain": pa.array(["d"] * rows),
                             "item": pa.array(np.arange(rows)), "correct": pa.array(np.ones(rows))}), path)
    return path


def _write(path: str, text: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text, encoding="utf-8")


def _closed_port() -> int:
    """A local TCP port nothing listens on."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


BUILD = {
    "lake": lambda: _lake(Path("lake")),
    "fifo part": lambda: (_lake(Path("lake")), os.mkfifo("lake/model=a/part-1.parquet")),
    "symlinked part": lambda: (_lake(Path("lake")), _constant_rows(Path("secret.parquet"), 3),
                               os.symlink(os.path.abspath("secret.parquet"), "lake/model=a/part-9.parquet")),
    "symlinked folder": lambda: (_lake(Path("lake")), _lake(Path("other"), ("z",)),
                                 os.symlink(os.path.abspath("other/model=z"), "lake/model=z")),
    "stray file": lambda: (_lake(Path("lake")), _write("lake/model=a/notes.csv", "x\n")),
    "footer bomb": lambda: (_lake(Path("lake")), _constant_rows(Path("lake/model=c/part-0.parquet"), 200_000)),
    "file bomb": lambda: _constant_rows(Path("big.parquet"), 200_000),
    "scores": lambda: (_write("s.csv", TINY), _write("t.csv", TINY.replace("0.9", "0.8"))),
    "links": lambda: (_write("s.csv", TINY), os.symlink("s.csv", "link.csv"), os.link("s.csv", "hard.csv")),
    "weights": lambda: (_write("s.csv", TINY), _write("w.csv", "profile,domain,weight\np,x,1\np,y,2\n")),
    "items": lambda: _write("items.csv", "model,domain,item,correct\n" + "".join(
        f"{m},d{i % 2},q{i},{(i + k) % 2}\n" for k, m in enumerate("abcdef") for i in range(8))),
    "report": lambda: (_write("s.csv", TINY), _write("r.html", "<html><head></head></html>")),
    "bifactor": lambda: (BUILD["items"](), _write("e.csv", "model,x\na,1\nb,2\nc,high\n"), os.mkfifo("fifo.csv"),
                         _write("e1x.csv", "model,x\na,1\n"), os.symlink("items.csv", "link.csv")),
    "batch": lambda: _write("out/models/s.csv", TINY),
    "huge weight csv": lambda: (_write("s.csv", TINY), _write("w.csv", f"profile,domain,weight\np,x,{HUGE}\np,y,1\n")),
    "huge weight yaml": lambda: (_write("s.csv", TINY), _write("w.yaml", f"p:\n  x: {HUGE}\n  y: 1\n")),
    "huge n_items": lambda: _write("n.csv", TINY.replace("a,x,0.5,10", "a,x,0.5,1e20")),
    "duplicate weights": lambda: (_write("s.csv", TINY), _write("w.yaml", "p:\n  x: 1\n  x: 9\n  y: 1\n")),
    "duplicate params": lambda: _write("p.yaml", "bootstrap: 0\nscores: s.csv\nbootstrap: 9\n"),
    "duplicate notebook key": lambda: _write("r.ipynb", '{"metadata": {"jagged": {"parameters": {"bootstrap": 0, '
                                                       '"bootstrap": 9}}}, "cells": []}'),
    "release": lambda: _write("w.csv", "model,domain,score,release\na,x,0.5,r1\na,y,0.6,r1\nb,x,0.4,r1\nb,y,0.7,r1\n"),
}

#: (id, builder, command line as a shell would split it, fragment of the one-line error); ``{port}``: a closed port.
ATTACKS = [
    # a partitioned Parquet folder: the parts checked are the parts read, regular files inside the folder
    ("lake: FIFO part", "fifo part", "validate lake", "lake: model=a/part-1.parquet is a FIFO, not a regular file"),
    ("lake: symlinked part", "symlinked part", "validate lake",
     "lake: model=a/part-9.parquet is a symlink leading outside the folder"),
    ("lake: symlinked folder", "symlinked folder", "metrics lake", "lake: model=z is a symlink leading outside"),
    ("lake: stray file", "stray file", "validate lake", "lake: model=a/notes.csv is not a Parquet file"),
    ("lake: footers over the cap", "footer bomb", "validate lake --max-input-bytes 1000000",
     "lake (200,012 rows in 3 Parquet file(s), by their footers) decodes to more than 976.6 KiB, the input cap"),
    ("file: footer over the cap", "file bomb", "validate big.parquet --max-input-bytes 1000000",
     "big.parquet (200,000 rows in 1 Parquet file(s), by their footers) decodes to more than"),
    # outputs: never an input, never another output, a table name; checked before anything is written
    ("metrics -o the input", "scores", "metrics s.csv -o s.csv", "-o s.csv is the input SCORES s.csv (the same file)"),
    ("-o the input, spelt otherwise", "scores", "metrics s.csv -o ./s.csv", "is the input SCORES s.csv"),
    ("-o a symlink to the input", "links", "metrics s.csv -o link.csv", "-o link.csv is the input SCORES s.csv"),
    ("-o a hard link to the input", "links", "structure s.csv -o hard.csv", "-o hard.csv is the input SCORES"),
    ("-o the weights", "weights", "metrics s.csv --weights w.csv -o w.csv", "is the input --weights w.csv"),
    ("items -o the input", "items", "items items.csv -o items.csv", "-o items.csv is the input SCORES"),
    ("compare -o B", "scores", "compare s.csv t.csv -o t.csv", "-o t.csv is the input B t.csv"),
    ("compare --items-out -o", "scores", "compare s.csv t.csv -o x.csv --items-out x.csv",
     "--items-out x.csv and -o x.csv are the same file"),
    ("compare --domains-out A", "scores", "compare s.csv t.csv --domains-out s.csv",
     "--domains-out s.csv is the input A"),
    ("compare --report's record", "scores", "compare s.csv t.csv -o r.json --report r.html",
     "--report r.html's record r.json and -o r.json are the same file"),
    ("report over its --params", "report", "report --params r.html -o r.html",
     "-o r.html is the input --params r.html"),
    ("-o inside the input folder", "lake", "metrics lake -o lake/m.csv", "-o lake/m.csv lies inside the input folder"),
    ("batch input in its output", "batch", "batch out/models/s.csv --out-dir out",
     "the input SCORES out/models/s.csv lies inside out/models, which --out-dir fills"),
    ("-o no table name", "scores", "metrics s.csv -o m.txt", "m.txt: output must end in .csv or .json"),
    # structure --level item: --external is an input, --items-out an output
    ("--external a FIFO", "bifactor", "structure items.csv --level item --external fifo.csv",
     "external fifo.csv is a FIFO"),
    ("--external glob characters", "bifactor", "structure items.csv --level item --external 'e[1]*.csv'",
     "--external e[1]*.csv: no such file"),
    ("--external not numeric", "bifactor", "structure items.csv --level item --external e.csv",
     "e.csv: column 'x' is not numeric"),
    ("--items-out the input", "bifactor", "structure items.csv --level item --items-out items.csv",
     "--items-out items.csv is the input SCORES"),
    ("--items-out a symlink to the input", "bifactor", "structure items.csv --level item --items-out link.csv",
     "--items-out link.csv is the input SCORES"),
    ("--items-out the --external", "bifactor", "structure items.csv --level item --external e.csv --items-out e.csv",
     "--items-out e.csv is the input --external e.csv"),
    ("--items-out without --level item", "bifactor", "structure items.csv --items-out x.csv",
     "--items-out needs --level item"),
    ("report --external a FIFO", "bifactor", "report items.csv -o r.html --level item --external fifo.csv",
     "external fifo.csv is a FIFO"),
    ("report --external glob characters", "bifactor", "report items.csv -o r.html --level item --external 'e[1]*.csv'",
     "--external e[1]*.csv: no such file"),
    ("report --level item on scores", "scores", "report s.csv -o r.html --level item",
     "--level item: s.csv has no item-level results in memory"),
    # Spark masters: a URL or nothing, reached at once or refused
    ("spark master: no URL", "lake", "items lake --engine spark --spark-master 'local[2]; touch x'",
     "not a Spark master URL (local, local[N], local[*], spark://HOST:PORT, yarn, k8s://URL)"),
    ("spark master: nobody there", "lake", "items lake --engine spark --spark-master spark://127.0.0.1:{port}",
     "cannot reach the master (127.0.0.1:{port}: Connection refused)"),
    # numbers beyond what a float or a count holds
    ("weight above 1.8e308, CSV", "huge weight csv", "metrics s.csv --weights w.csv",
     "w.csv: column 'weight' has infinite value(s) for domain(s) x=inf"),
    ("weight above 1.8e308, YAML", "huge weight yaml", "metrics s.csv --weights w.yaml",
     "w.yaml: column 'weight' has infinite value(s) for domain(s) x=inf"),
    ("n_items 1e20 in the data", "huge n_items", "metrics n.csv",
     "n.csv: column 'n_items' has value 1e+20, not a positive whole number of at most 2**53 (line 2)"),
    ("--n-items 1e308", "scores", "metrics s.csv --n-items 1e308", "not a positive whole number of at most 2**53"),
    ("--n-items of 20 digits", "scores", "metrics s.csv --n-items 12345678901234567890",
     "not a positive whole number of at most 2**53"),
    ("--n-items of 400 digits", "scores", "metrics s.csv --n-items " + "9" * 400, "not a positive whole number"),
    ("--n-items of 400 characters", "scores", "metrics s.csv --n-items " + "x" * 400,
     "neither a positive whole number nor a file"),
    # keys given twice, text that would forge a line
    ("duplicate key, weights YAML", "duplicate weights", "metrics s.csv --weights w.yaml",
     "w.yaml: YAML key 'x' given twice (line 3)"),
    ("duplicate key, --params YAML", "duplicate params", "report --params p.yaml -o o.html",
     "--params p.yaml: YAML key 'bootstrap' given twice (line 3)"),
    ("duplicate key, kept notebook", "duplicate notebook key", "report --params r.ipynb -o o.html",
     "--params r.ipynb: JSON key 'bootstrap' given twice"),
    ("--where with a newline", "release", "validate w.csv --where 'release=r1\njagged: error: forged'",
     "no row has release = 'r1\\njagged: error: forged'"),
]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.is_symlink() and not p.name.endswith(".parquet")}


@pytest.mark.parametrize("attack, build, command, fragment", ATTACKS, ids=[a[0] for a in ATTACKS])
def test_every_attack_exits_2_with_one_line_and_writes_nothing(workdir, attack, build, command, fragment):
    import signal

    from clitools import assert_bad_input

    BUILD[build]()
    port = _closed_port()
    before = _tree(workdir)

    def hung(signum, frame):  # a FIFO opened, a socket waited on: fail, never hang the suite
        raise TimeoutError(f"{attack}: no answer within 60 s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        assert_bad_input(*shlex.split(command.format(port=port)), fragments=(fragment.format(port=port),))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert _tree(workdir) == before  # nothing written, nothing replaced


def _models(dataset) -> set[str]:
    return {str(m) for m in dataset.scores["model"].unique()}


def test_paths_are_never_patterns_and_the_parts_checked_are_the_parts_read(workdir, monkeypatch):
    """``run[1]`` beside ``run1``, ``res*`` beside ``res_secret``, a file ``s*.parquet`` beside ``secret.parquet``:
    each reads itself only, in the reader's checks and in the engine's sums alike; hidden and underscore folders
    are skipped by both, a ``.PARQUET`` part read by both."""
    import jagged
    import jagged.readers.items as items_module
    from jagged.stats.item_sums import lake_item_sums

    _lake(Path("run1"), ("SECRET1",))
    _lake(Path("run[1]"), ("x", "y"))
    _lake(Path("res_secret"), ("SECRET2",))
    _lake(Path("res*"), ("p", "q"))
    _lake(Path("res*/_tmp"), ("SECRET3",))
    _lake(Path("res*/.staging"), ("SECRET4",))
    _lake(Path("res*/_temporary/0"), ("SECRET5",))
    _lake(Path("upper"), ("u",))
    os.replace("upper/model=u/part-0.parquet", "upper/model=u/part-0.PARQUET")
    _constant_rows(Path("s*.parquet"), 60)
    _constant_rows(Path("secret.parquet"), 60, model="SECRET6")
    monkeypatch.setattr(items_module, "IN_MEMORY_MAX_ROWS", 50)  # a single file goes out of core, to DuckDB
    for path, models in (("run[1]", {"x", "y"}), ("res*", {"p", "q"}), ("upper", {"u"}), ("s*.parquet", {"a"})):
        dataset = jagged.load(path)
        assert dataset.items is None and _models(dataset) == models, path  # read by DuckDB, out of core
        sums = lake_item_sums(path)  # read again by the engine
        assert set(sums.model_group["model"]) == models, path
        assert int(sums.items["n"].sum()) == int(dataset.scores["n_items"].sum()), path


@pytest.mark.parametrize("name", ["s*.parquet", "q?.parquet", "x[a-c].parquet", "[!a].parquet", "a]b.parquet",
                                  "a\\b.parquet", "a{b,c}.parquet", "**.parquet", "o'q.parquet", "t\tu.parquet"])
def test_duckdb_reads_exactly_the_file_named_and_nothing_else(workdir, name):
    """Every glob character DuckDB knows, escaped; a connection confined to its files opens no other."""
    from jagged.stats.engine import Engine, read_parquet

    for other in ("sx.parquet", "qx.parquet", "xa.parquet", "b.parquet", "ab.parquet", "abc.parquet", "x.parquet"):
        _constant_rows(Path(other), 3)
    _constant_rows(Path(name), 7)
    con, close = Engine().connect()
    try:
        assert read_parquet(con, name).count().execute() == 7
        settings = dict(con.con.execute("SELECT name, value FROM duckdb_settings() WHERE name IN ("
                                        "'autoinstall_known_extensions', 'autoload_known_extensions', "
                                        "'enable_external_access', 'lock_configuration')").fetchall())
        assert settings == {"autoinstall_known_extensions": "false", "autoload_known_extensions": "false",
                            "enable_external_access": "false", "lock_configuration": "true"}
        for query in ("SELECT count(*) FROM read_parquet('xa.parquet')", "SELECT * FROM read_csv('/etc/passwd')",
                      "INSTALL httpfs", "SET enable_external_access = true", f"COPY (SELECT 1) TO '{workdir}/x.csv'"):
            with pytest.raises(Exception, match="disabled|locked|Permission"):
                con.con.execute(query)
    finally:
        close()
    assert not (workdir / "x.csv").exists()


FORGED = "gpt\njagged: error: FORGED"
HIDDEN_NAMES = [FORGED, "rlo-\u202egnp.exe", "esc-\x1b[31mred", "=HYPERLINK(\"http://x\",\"y\")", "@SUM(1)",
                "+cmd|' /C calc'!A0", "-2+3", "plain"]


def test_names_never_forge_a_line_nor_drive_the_terminal(workdir):
    """Every command that prints from the data: a newline in a name stays in its line, ESC and U+202E show escaped."""
    from clitools import run_cli

    rows = [(m, d, 0.2 + 0.05 * i + 0.1 * j, 100) for i, m in enumerate(HIDDEN_NAMES)
            for j, d in enumerate(["x\ny", "z\u202e", "w"])]
    pd.DataFrame(rows, columns=["model", "domain", "score", "n_items"]).to_csv("a.csv", index=False)
    pd.DataFrame([(m, d, s + 0.03, n) for m, d, s, n in rows], columns=["model", "domain", "score", "n_items"]).to_csv(
        "b.csv", index=False)
    for command in (["validate", "a.csv"], ["metrics", "a.csv", "--bootstrap", "0"],
                    ["structure", "a.csv", "--draws", "20"], ["structure", "a.csv", "--draws", "20", "--json"],
                    ["compare", "a.csv", "b.csv", "--bootstrap", "0"], ["validate", "a.csv", "--where", "model=x\ny"]):
        code, out, err = run_cli(*command)
        assert code in (0, 2), (command, err)
        for line in (out + err).splitlines():
            assert not line.startswith("jagged: error: FORGED"), (command, line)
            assert "\x1b" not in line and "\u202e" not in line, (command, line)
    assert "gpt\\njagged: error: FORGED" in run_cli("metrics", "a.csv", "--bootstrap", "0")[1]


def test_every_csv_written_shows_formulas_as_text(workdir):
    """OWASP's rule on every text cell of every CSV (a file, stdout), numbers untouched; JSON keeps the names."""
    import csv
    import io
    import json

    from clitools import run_cli

    from jagged.fileio import csv_text

    rows = [(m, d, 0.2 + 0.05 * i + 0.1 * j, 100) for i, m in enumerate(HIDDEN_NAMES) for j, d in enumerate("xyz")]
    pd.DataFrame(rows, columns=["model", "domain", "score", "n_items"]).to_csv("a.csv", index=False)
    assert run_cli("metrics", "a.csv", "--bootstrap", "0", "-o", "m.csv")[0] == 0
    assert run_cli("metrics", "a.csv", "--bootstrap", "0", "-o", "m.json")[0] == 0
    stdout = run_cli("metrics", "a.csv", "--bootstrap", "0")[1]
    for text, keep in ((Path("m.csv").read_text(encoding="utf-8"), "\t\n\r"), (stdout, "\t")):
        models = sorted(r["model"] for r in csv.DictReader(io.StringIO(text)))
        shown = [printable(m, keep) for m in HIDDEN_NAMES]  # a file keeps a newline (quoted), a terminal escapes it
        assert models == sorted("'" + m if m.startswith(("=", "+", "-", "@", "\t")) else m for m in shown)
        assert {"'=HYPERLINK(\"http://x\",\"y\")", "'@SUM(1)", "'+cmd|' /C calc'!A0", "'-2+3", "plain"} <= set(models)
        assert "\x1b" not in text and "\u202e" not in text
    assert {r["model"] for r in json.loads(Path("m.json").read_text(encoding="utf-8"))} == set(HIDDEN_NAMES)
    frame = pd.DataFrame({"name": ["=1+1", "-x", "\tok", None], "delta": [-0.5, -1.0, 2.0, 0.0],
                          "group": pd.Categorical(["@a", "b", "b", "b"]), "flag": [True, False, True, False]})
    assert csv_text(frame).splitlines() == ["name,delta,group,flag", "'=1+1,-0.5,'@a,True", "'-x,-1.0,b,False",
                                            "'\tok,2.0,b,True", ",0.0,b,False"]


def test_files_are_0644_and_jaggeds_own_folders_0700(workdir):
    from jagged.fileio import atomic_write_text
    from jagged.paths import remove_spill_folders, spill_folder

    previous = os.umask(0o022)
    try:
        assert os.stat(atomic_write_text("o/t.csv", "x")).st_mode & 0o777 == 0o644
        os.umask(0o077)
        assert os.stat(atomic_write_text("o/u.csv", "x")).st_mode & 0o777 == 0o600
    finally:
        os.umask(previous)
    dead = Path(spill_folder()).parent / "jagged-duckdb-999999999-stale"  # no process has this id
    killed = dead.with_name(f"jagged-duckdb-{os.getppid()}-kernel")  # a live process: a sweep keeps it
    dead.mkdir()
    killed.mkdir()
    spill = Path(spill_folder())
    try:
        assert spill.stat().st_mode & 0o777 == 0o700 and spill.name.startswith(f"jagged-duckdb-{os.getpid()}-")
        assert not dead.exists() and killed.exists()  # a dead run's spill folder is removed by the next
        remove_spill_folders(os.getppid())  # what stop_kernel does for the kernel it killed
        assert not killed.exists() and spill.exists()
    finally:
        spill.rmdir()


def test_the_runtime_folder_jagged_makes_is_0700(workdir, monkeypatch):
    from jagged.report.kernel import launch_kernel, stop_kernel

    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(workdir / "new" / "runtime"))
    km = launch_kernel("python3")
    try:
        assert (workdir / "new" / "runtime").stat().st_mode & 0o777 == 0o700
    finally:
        stop_kernel(km)


def test_running_out_of_memory_is_one_line(workdir, monkeypatch):
    from clitools import assert_bad_input

    import jagged.analysis

    def exhausted(*args, **kwargs):
        raise MemoryError("Unable to allocate 2.98 GiB for an array with shape (2000, 10, 20000)")

    monkeypatch.setattr(jagged.analysis, "metrics_table", exhausted)
    _write("s.csv", TINY)
    assert_bad_input("metrics", "s.csv", fragments=("out of memory (Unable to allocate 2.98 GiB", "--models"))


SPARK_PROBE = """
import json, sys
from jagged.stats.engine import Engine, read_parquet, spark_session
context = spark_session().sparkContext
con, close = Engine("spark").connect()
models = sorted(read_parquet(con, sys.argv[1]).to_pandas()["model"].unique())
conf = context.getConf()
refused = []  # a running session is no reason to skip the checks of another master
for master in ("local[2]; touch x", "spark://127.0.0.1:9", "local[3]"):
    try:
        spark_session(master)
    except Exception as exc:
        refused.append(str(exc).split(": ", 1)[1][:25])
print(json.dumps({"ui": conf.get("spark.ui.enabled"), "web": context.uiWebUrl, "models": models,
                  "driver": [conf.get("spark.driver.host"), conf.get("spark.driver.bindAddress")],
                  "refused": refused}))
"""


def test_a_spark_session_jagged_builds_listens_on_loopback_only_prints_nothing_and_reads_literal_paths(tmp_path):
    """The one Spark session built here (10-60 s): no UI, the driver on 127.0.0.1, no JVM output, ``run[1]`` itself."""
    import json
    import shutil
    import subprocess
    import sys

    pytest.importorskip("pyspark", reason="the Spark tests need pip install 'jagged[spark]'")
    if shutil.which("java") is None:
        pytest.skip("the Spark tests need Java 17")
    _lake(tmp_path / "run1", ("SECRET",))
    _lake(tmp_path / "run[1]", ("x", "y"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "SPARK_HOME")}
    result = subprocess.run([sys.executable, "-c", SPARK_PROBE, str(tmp_path / "run[1]")], capture_output=True,
                            text=True, timeout=600, env=env, cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == "", result.stderr[-2000:]  # the JVM's output goes nowhere
    assert json.loads(result.stdout) == {"ui": "false", "web": None, "models": ["x", "y"],
                                         "driver": ["127.0.0.1", "127.0.0.1"],
                                         "refused": ["not a Spark master URL (l", "cannot reach the master (",
                                                     "this process already runs"]}
