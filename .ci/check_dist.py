"""What the sdist and the wheel built by .ci/run hold: the whole source release, and exactly the package's files.

Usage: ``python .ci/check_dist.py DIST`` (the folder ``python -m build --outdir DIST`` wrote). Exits non-zero
with the missing or unexpected files.
"""

from __future__ import annotations

import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def files(folder: Path, pattern: str = "*") -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.glob(pattern)
            if p.is_file() and "__pycache__" not in p.parts}


def check_sdist(sdist: Path) -> None:
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    expected = {"LICENSE", "README.md", "pyproject.toml", "MANIFEST.in", "Makefile", "environment.yml"}
    for folder, pattern in [("notebooks", "*.ipynb"), ("templates", "**/*"), ("jagged/data", "*"),
                            ("tests/data", "**/*"), ("benchmarks", "*.py"), ("jagged", "**/*.py")]:
        found = files(ROOT / folder, pattern)
        assert found, folder
        expected |= {f"{folder}/{name}" for name in found}
    assert expected <= names, f"the sdist lacks {sorted(expected - names)[:10]}"
    stray = [n for n in names if "__pycache__" in n or n.startswith(("tests/artifacts", ".venv", "reports/"))]
    assert not stray, f"the sdist holds {stray[:10]}"


def check_wheel(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    shipped = {n for n in names if not n.endswith(".py") and ".dist-info/" not in n}
    expected = {f"jagged/notebooks/{n}" for n in files(ROOT / "notebooks", "*.ipynb")}
    expected |= {f"jagged/templates/{n}"
                 for n in files(ROOT / "templates", "jagged/*") | files(ROOT / "templates", "batch/*")}
    expected |= {f"jagged/data/{n}" for n in files(ROOT / "jagged" / "data") if not n.endswith(".py")}
    assert shipped == expected, f"the wheel lacks {sorted(expected - shipped)}, holds {sorted(shipped - expected)}"
    assert {"jagged/notebooks/__init__.py", "jagged/templates/__init__.py", "jagged/report/batch.py"} <= names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "License-Expression: Apache-2.0" in metadata and "License-File: LICENSE" in metadata


if __name__ == "__main__":
    dist = Path(sys.argv[1])
    (sdist,) = dist.glob("jagged-*.tar.gz")
    (wheel,) = dist.glob("jagged-*.whl")
    check_sdist(sdist)
    check_wheel(wheel)
    print(f"ci: {sdist.name} holds the source release, {wheel.name} the package")
