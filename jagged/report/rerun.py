"""Exact reruns: a report's full parameter set, stored in it and read back.

Every report stores, in its metadata,

* ``jagged-notebook``: the notebook it was run from (a name in ``notebooks/``);
* ``jagged-parameters``: every parameter the notebook declares, with the value it ran
  with (defaults filled in), as papermill-style YAML (a flat mapping, one line each);
* ``jagged-input-hash`` (batch reports): the content hash of inputs, parameters, notebook
  and code the report was made from (see :func:`jagged.report.batch.content_hash`).

In the HTML they are ``<meta name=… content=…>`` tags in the head (attribute-escaped); in
the kept ``.ipynb`` they are under ``metadata.jagged``. :func:`read_parameters` reads
them back from either, or from a plain YAML file, for ``jagged report --params FILE``.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Mapping

import yaml

from jagged.errors import JaggedInputError
from jagged.report.notebooks import notebook_name

META_PREFIX = "jagged-"
NOTEBOOK_KEY = "notebook"
PARAMETERS_KEY = "parameters"
HASH_KEY = "input-hash"
TITLE_KEY = "title"


def parameters_yaml(parameters: Mapping[str, Any]) -> str:
    """Papermill-style YAML of a parameter set (``papermill -f FILE`` reads it too)."""
    return yaml.safe_dump(dict(parameters), sort_keys=False, allow_unicode=True, default_flow_style=False,
                          width=10_000)


def report_metadata(notebook: str | Path, parameters: Mapping[str, Any],
                    extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The metadata a report stores (keys without the ``jagged-`` prefix), as strings.

    Parameters
    ----------
    notebook : str or pathlib.Path
        The notebook.
    parameters : mapping
        The full parameter set (see :func:`full_parameters`).
    extra : mapping, optional
        More entries, e.g. ``{"input-hash": ...}``.
    """
    meta = {NOTEBOOK_KEY: notebook_name(notebook), PARAMETERS_KEY: parameters_yaml(parameters)}
    meta.update({str(k): str(v) for k, v in (extra or {}).items()})
    return meta


def rerun_command(report: str | Path) -> str:
    """The shell command that reruns a report from the parameters stored in it.

    Parameters
    ----------
    report : str or pathlib.Path
        The report's HTML path as the reader would type it.

    Returns
    -------
    str
        ``jagged report --params REPORT -o REPORT_STEM.rerun.html``, shell-quoted.
    """
    report = Path(report)
    target = report.with_name(f"{report.stem}.rerun.html")
    return f"jagged report --params {shlex.quote(str(report))} -o {shlex.quote(str(target))}"


class _MetaReader(HTMLParser):
    """Collects ``<meta name="jagged-…" content="…">`` tags (entities decoded)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.meta: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "meta":
            return
        found = dict(attrs)
        name = found.get("name") or ""
        if name.startswith(META_PREFIX) and found.get("content") is not None:
            self.meta[name[len(META_PREFIX):]] = str(found["content"])


def html_metadata(path: str | Path) -> dict[str, str]:
    """The ``jagged-…`` metadata of an HTML report (empty if it has none).

    Only the head is parsed, so this stays fast for large reports.
    """
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    end = text.find("</head>")
    reader = _MetaReader()
    reader.feed(text if end < 0 else text[:end])
    reader.close()
    return reader.meta


def stored_hash(path: str | Path) -> str | None:
    """The input hash stored in an HTML report, or None (no file, no hash, unreadable)."""
    try:
        return html_metadata(path).get(HASH_KEY)
    except OSError:
        return None


def _check_mapping(data: Any, source: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise JaggedInputError(f"{source}: parameters must be a mapping of name: value, not "
                               f"{type(data).__name__}")
    bad = [k for k in data if not isinstance(k, str) or not k.isidentifier()]
    if bad:
        raise JaggedInputError(f"{source}: parameter names must be Python identifiers, not {bad[0]!r}")
    return data


@dataclass(frozen=True)
class StoredRun:
    """A parameter set read back for a rerun.

    Attributes
    ----------
    notebook : str or None
        The notebook the report was made from (None for a plain YAML file).
    parameters : dict
        Name → value.
    title : str or None
        The report's title, when stored.
    """

    notebook: str | None
    parameters: dict
    title: str | None = None


def read_parameters(path: str | Path) -> StoredRun:
    """Read a parameter set for a rerun.

    Parameters
    ----------
    path : str or pathlib.Path
        A papermill-style YAML file (``name: value`` per line), or a jagged report
        (``.html``) or kept notebook (``.ipynb``) whose metadata holds the parameters.

    Returns
    -------
    StoredRun

    Raises
    ------
    JaggedInputError
        Missing or unreadable file, no stored parameters, or not a mapping.
    """
    path = Path(path)
    if not path.is_file():
        raise JaggedInputError(f"{path}: no such parameter file")
    suffix = path.suffix.lower()
    if suffix in (".html", ".htm"):
        meta = html_metadata(path)
        if PARAMETERS_KEY not in meta:
            raise JaggedInputError(f"{path.name}: no stored parameters (not a jagged report, or an older one)")
        params = _check_mapping(_load_yaml(meta[PARAMETERS_KEY], path.name), path.name)
        return StoredRun(meta.get(NOTEBOOK_KEY), params, meta.get(TITLE_KEY))
    if suffix == ".ipynb":
        try:
            stored = json.loads(path.read_text(encoding="utf-8")).get("metadata", {}).get("jagged", {})
        except (ValueError, UnicodeDecodeError, AttributeError):
            raise JaggedInputError(f"{path.name}: not a readable notebook") from None
        if not isinstance(stored, dict) or PARAMETERS_KEY not in stored:
            raise JaggedInputError(f"{path.name}: no stored parameters in metadata.jagged")
        params = stored[PARAMETERS_KEY]
        if isinstance(params, str):
            params = _load_yaml(params, path.name)
        return StoredRun(stored.get(NOTEBOOK_KEY), _check_mapping(params, path.name), stored.get(TITLE_KEY))
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise JaggedInputError(f"{path.name}: not UTF-8 text") from None
    return StoredRun(None, _check_mapping(_load_yaml(text, path.name), path.name))


def _load_yaml(text: str, source: str) -> Any:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise JaggedInputError(f"{source}: not valid YAML{where}") from None
    return {} if data is None else data
