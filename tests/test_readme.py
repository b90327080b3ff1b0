"""The README's Python API example runs as written, and its comments tell the truth."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _python_block() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Python API", 1)[1]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)


def test_python_api_example_runs(tmp_path, monkeypatch):
    """Run as a user of the installed package would: from a folder outside the source tree.

    The block may name no file of the source tree (tests/data is not shipped); bundled data
    comes from ``jagged.load_scores()`` and ``jagged.data_path(...)``.
    """
    code = _python_block()
    assert "tests/" not in code and "notebooks/" not in code, "the README example must work from a pip install"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - our own README
    assert np.allclose(namespace["jagged"].cv_error([[0.9, 0.8, 0.5]]), [0.63737744])
    assert len(namespace["table"]) == 29 and "cv_error" in namespace["table"].columns
    assert set(namespace["dep"]["profile"]) == {"uniform", "items"}
    assert {"relative_jaggedness", "relative_jaggedness_corrected"} <= set(namespace["relative"].columns)
    assert namespace["items"]["flaw_rank"].iloc[0] == 1  # ranked by P(flawed | responses)
    assert {"cv_error_lo", "cv_error_hi"} <= set(namespace["full"].columns)
    assert (tmp_path / "reports" / "example.html").is_file()
    assert (tmp_path / "reports" / "example.json").is_file()  # the key numbers beside it
    analysis = namespace["analysis"]
    assert analysis.sections["profiles"] and analysis.sections["items"]  # like the report
