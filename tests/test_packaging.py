"""Packaging: environment.yml and pyproject.toml agree; the sdist and the wheel hold what they must; a wheel
installed into a new environment writes reports from a folder outside the source tree."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
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


# ---------------------------------------------------------------------------------------
# A regular install: build the sdist and the wheel, install the wheel, report from elsewhere


IGNORED = shutil.ignore_patterns(".git", ".venv", "reports", "build", "dist", "*.egg-info", "__pycache__",
                                 ".hypothesis", ".pytest_cache", "artifacts", ".ipynb_checkpoints")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """The sdist and the wheel of a copy of the source tree (python -m build: the wheel is built from the sdist).

    No network: ``--no-isolation`` builds with this environment's setuptools, which the
    test extra requires at the version ``[build-system]`` asks for.
    """
    folder = tmp_path_factory.mktemp("build")
    source = folder / "source"
    shutil.copytree(ROOT, source, ignore=IGNORED)
    dist = folder / "dist"
    result = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(source)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (sdist,) = dist.glob("jagged-*.tar.gz")
    (wheel,) = dist.glob("jagged-*.whl")
    return sdist, wheel


def _files(folder: Path, pattern: str = "*") -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.glob(pattern)
            if p.is_file() and "__pycache__" not in p.parts}


def test_sdist_holds_the_whole_source_release(built):
    sdist, _ = built
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    expected = {"LICENSE", "README.md", "pyproject.toml", "MANIFEST.in", "Makefile", "environment.yml"}
    for folder, pattern in [("notebooks", "*.ipynb"), ("templates", "**/*"), ("jagged/data", "*"),
                            ("tests/data", "**/*"), ("benchmarks", "*.py"), ("jagged", "**/*.py")]:
        found = _files(ROOT / folder, pattern)
        assert found, folder
        expected |= {f"{folder}/{name}" for name in found}
    assert expected <= names, sorted(expected - names)[:10]
    assert not [n for n in names if "__pycache__" in n or n.startswith(("tests/artifacts", ".venv", "reports/"))]


def test_wheel_ships_notebooks_templates_data_and_licence(built):
    _, wheel = built
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    shipped = {n for n in names if not n.endswith(".py") and ".dist-info/" not in n}
    expected = {f"jagged/notebooks/{n}" for n in _files(ROOT / "notebooks", "*.ipynb")}
    expected |= {f"jagged/templates/{n}"
                 for n in _files(ROOT / "templates", "jagged/*") | _files(ROOT / "templates", "batch/*")}
    expected |= {f"jagged/data/{n}" for n in _files(ROOT / "jagged" / "data") if not n.endswith(".py")}
    assert shipped == expected
    assert {"jagged/notebooks/__init__.py", "jagged/templates/__init__.py", "jagged/report/batch.py"} <= names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "License-Expression: Apache-2.0" in metadata and "License-File: LICENSE" in metadata


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory) -> tuple[Path, dict[str, str], Path]:
    """A new virtual environment with the wheel installed, and a work folder outside the source tree.

    The wheel is installed without its dependencies; those come from this test process's
    ``sys.path`` (but no folder holding a ``jagged``) through path entries (``.pth`` lines), which add
    folders to ``sys.path`` but run none of those folders' own ``.pth`` files, so this
    environment's editable jagged stays out; their data files (``share/jupyter``) are linked in. HOME is a new
    folder, so no user-wide Jupyter kernel spec is used. (.ci/run does
    the same round trip with the dependencies installed from the package index.)
    """
    _, wheel = built
    folder = tmp_path_factory.mktemp("installed")
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    deps = [entry for entry in sys.path if entry and Path(entry).is_dir() and entry != site
            and not Path(entry, "jagged").exists() and not Path(entry).resolve().is_relative_to(ROOT / "tests")]
    Path(site, "jagged-test-dependencies.pth").write_text("".join(f"{e}\n" for e in deps), encoding="utf-8")
    data = Path(sys.prefix, "share", "jupyter")  # the dependencies' data files (nbconvert's base templates, ...)
    (venv / "share" / "jupyter").mkdir(parents=True)
    for entry in data.iterdir():
        (venv / "share" / "jupyter" / entry.name).symlink_to(entry)
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", "--python", str(python),
                    "install", "--no-deps", "--no-index", str(wheel)], check=True, timeout=300)
    work = folder / "work"
    (work / "home").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "JUPYTER", "VIRTUAL_ENV"))}
    env.update(HOME=str(work / "home"), PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    return venv, env, work


def _run(installed, *args: str) -> subprocess.CompletedProcess:
    venv, env, work = installed
    return subprocess.run(list(args), capture_output=True, text=True, cwd=work, env=env, timeout=600)


def test_installed_jagged_is_the_wheel_and_its_kernel_is_the_new_environment(installed):
    venv, _, work = installed
    code = ("import sys, jagged, jupyter_client.kernelspec as k; from jagged.resources import notebooks_dir; "
            "print(jagged.__file__); print(notebooks_dir()); print(sys.executable); "
            "print(k.KernelSpecManager().get_kernel_spec('python3').argv[0])")
    result = _run(installed, str(venv / "bin" / "python"), "-c", code)
    assert result.returncode == 0, result.stderr
    module, notebooks, executable, kernel = result.stdout.split("\n")[:4]
    assert Path(module).is_relative_to(venv) and Path(notebooks).is_relative_to(venv)
    assert (Path(notebooks) / "jaggedness_report.ipynb").is_file()
    assert kernel in ("python", "python3", executable)  # jupyter_client runs "python" as this interpreter
    assert not Path(work).is_relative_to(ROOT)


def test_installed_wheel_writes_reports_outside_the_source_tree(installed):
    venv, _, work = installed
    report = _run(installed, "jagged", "report")
    assert report.returncode == 0, report.stderr
    html = work / "reports" / "jaggedness_report.html"
    assert html.is_file() and html.with_suffix(".ipynb").is_file()

    again = _run(installed, "jagged", "report", "--params", str(html), "-o", "again.html")
    assert again.returncode == 0, again.stderr
    assert (work / "again.html").is_file()

    models = ["Meta-Llama-3-8B", "gemma-7b"]
    batch = _run(installed, "jagged", "batch", "--models", models[0], "--models", models[1], "--jobs", "2",
                 "--out-dir", "batch")
    assert batch.returncode == 0, batch.stderr
    assert "3 reports: 3 written, 0 up to date, 0 failed" in batch.stderr
    index = (work / "batch" / "index.html").read_text(encoding="utf-8")
    assert all(f">{m}</a>" in index for m in models)
    assert (work / "batch" / "jaggedness_report.html").is_file()

    notebooks = _run(installed, str(venv / "bin" / "python"), "-c",
                     "from jagged.resources import notebooks_dir; print(notebooks_dir())").stdout.strip()
    papermill = _run(installed, str(venv / "bin" / "python"), "-m", "papermill", "--no-progress-bar",
                     f"{notebooks}/jaggedness_report.ipynb", "out.ipynb", "-p", "bootstrap", "0")
    assert papermill.returncode == 0, papermill.stderr[-2000:]
    executed = json.loads((work / "out.ipynb").read_text(encoding="utf-8"))
    assert not [o for c in executed["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
