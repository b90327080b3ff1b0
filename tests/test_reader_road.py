"""A file's road through the readers, measured with ``sys.setprofile``: no longer than before the registry.

The road is the sequence of ``jagged/readers`` source files whose functions run while
``jagged.load`` reads an input (a module is visited when a function written in it runs;
code generated at run time, a dataclass's ``__init__``, is nobody's module), consecutive
repeats collapsed. Its length is counted as the modules visited and the *returns*: entries
into a module the road had already left. Before the registry (52e6ce6, measured the same
way): CSV 4 modules / 9 returns, lm-eval results 8 / 21, the Every Eval Ever
``global-mmlu-lite`` collection 11 / 442, ``helm_mmlu`` 11 / 100. The bounds below are those.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest

import jagged

DATA = Path(__file__).parent / "data"
READERS_DIR = str(Path(jagged.__file__).parent / "readers") + "/"
LMEVAL = DATA / "lmeval" / ("EleutherAI__lm-evaluation-harness__PR2809__results__Qwen__Qwen2.5-1.5B__results_"
                            "2025-03-03T00-05-12.300060.json")


def road(path: Path, **options: object) -> list[str]:
    """The readers modules ``jagged.load(path)`` runs functions of, in order, consecutive repeats collapsed."""
    seen: list[str] = []

    def module(frame) -> str | None:
        name = frame.f_code.co_filename if frame is not None else ""
        return Path(name).stem if name.startswith(READERS_DIR) else None

    def profile(frame, event, arg) -> None:
        if event not in ("call", "return"):
            return
        now = module(frame if event == "call" else frame.f_back)  # on return: the caller runs again
        if now is not None and (not seen or seen[-1] != now):
            seen.append(now)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jagged.load(path, **options)  # imports and caches warm
        sys.setprofile(profile)
        try:
            jagged.load(path, **options)
        finally:
            sys.setprofile(None)
    return seen


def returns(modules: list[str]) -> int:
    """Entries into a module the road had already left."""
    count, visited = 0, set()
    for name in modules:
        count += name in visited
        visited.add(name)
    return count


def test_returns_count_re_entries_only():
    assert returns(["load", "registry", "files", "registry", "tables", "files", "registry", "load"]) == 4
    assert returns(["load", "registry", "tables"]) == 0


@pytest.mark.parametrize(("path", "options", "most_modules", "most_returns"), [
    (Path(jagged.__file__).parent / "data" / "mmlu_pro_per_category.csv", {}, 6, 9),
    (LMEVAL, {"task": "mmlu"}, 8, 21),
    (DATA / "eee" / "data", {"collection": "global-mmlu-lite"}, 13, 442),
    (DATA / "eee" / "data", {"collection": "helm_mmlu"}, 13, 100),
], ids=["csv", "lm-eval results", "eee global-mmlu-lite", "eee helm_mmlu"])
def test_the_road_is_no_longer_than_before_the_registry(path, options, most_modules, most_returns):
    modules = road(path, **options)
    assert modules[0] == "load" and modules[-1] == "load"
    assert "registry" in modules  # the one dispatcher
    assert len(set(modules)) <= most_modules
    assert returns(modules) <= most_returns


def test_a_csv_is_read_once_and_asked_of_no_json_format():
    """The CSV's road: the head read once, the table reader reads it, validation once, nothing else."""
    modules = road(Path(jagged.__file__).parent / "data" / "mmlu_pro_per_category.csv")
    assert modules == ["load", "registry", "files", "registry", "tables", "files", "limits", "files", "tables",
                       "registry", "table", "registry", "load"]


def test_each_file_of_a_folder_is_recognised_by_the_registry_alone():
    """Only the registry asks a format whether it recognises a file, and the folder walk is not re-entered per
    file: 5 files (helm_mmlu) and 24 (global-mmlu-lite) visit ``folders`` equally often."""
    small = road(DATA / "eee" / "data", collection="helm_mmlu")
    large = road(DATA / "eee" / "data", collection="global-mmlu-lite")
    for modules in (small, large):
        for before, now in zip(modules, modules[1:]):
            if now in ("lmeval_results", "inspect_logs"):  # asked first, and they do not recognise EEE files
                assert before == "registry"
    assert small.count("lmeval_results") == 5 and large.count("lmeval_results") == 24  # asked once per file
    assert small.count("folders") == large.count("folders")
