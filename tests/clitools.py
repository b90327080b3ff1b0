"""Running the CLI in-process in tests, and the shape every bad-input failure must have."""

from __future__ import annotations

from click.testing import CliRunner

from jagged.cli import main


def run_cli(*args: object) -> tuple[int, str, str]:
    """Invoke ``jagged ARGS...``; return (exit code, stdout, stderr)."""
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def assert_bad_input(*args: object, fragments: tuple[str, ...] = ()) -> str:
    """Exit status 2, no traceback, exactly one ``jagged: error:`` line holding every fragment."""
    code, out, err = run_cli(*args)
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and "Traceback" not in out
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("jagged: error: ")
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]
