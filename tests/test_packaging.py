"""Packaging: environment.yml and pyproject.toml agree; the bundled data ships with its provenance.

The built sdist and wheel are checked in one place, .ci/run: what they hold (.ci/check_dist.py), and that the
wheel installed into a new environment writes reports from a folder outside the source tree."""

from __future__ import annotations

import re
import tomllib

import yaml
from conftest import ROOT

CONDA_TO_PIP = {"python-duckdb": "duckdb", "python-build": "build"}


def _name(spec: str) -> str:
    return re.split(r"[<>=!~\[ ]", spec.strip(), maxsplit=1)[0].lower()


def test_environment_and_pyproject_declare_same_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pip_names = {_name(s) for s in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        pip_names |= {_name(s) for s in extra}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda_names = set()
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            conda_names |= {_name(s) for s in dep["pip"] if not s.startswith("-e")}
        elif _name(dep) not in ("python", "pip"):
            conda_names.add(CONDA_TO_PIP.get(_name(dep), _name(dep)))
    assert conda_names == pip_names, (
        f"only in environment.yml: {sorted(conda_names - pip_names)}; "
        f"only in pyproject.toml: {sorted(pip_names - conda_names)}")


def test_bundled_data_ships_with_provenance():
    data = ROOT / "jagged" / "data"
    assert (data / "mmlu_pro_per_category.csv").is_file()
    assert "TIGER-AI-Lab/MMLU-Pro" in (data / "PROVENANCE.md").read_text()
