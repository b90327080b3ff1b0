"""Exact reruns: a report's full parameter set, stored in it and read back.

Every report stores, in its metadata,

* ``jagged-notebook``: the notebook it was run from (a name in ``notebooks/``);
* ``jagged-parameters``: every parameter the notebook declares, with the value it ran
  with (defaults filled in), as papermill-style YAML (a flat mapping, one line each);
* ``jagged-input-hash`` (batch reports): the content hash of inputs, parameters, notebook
  and code the report was made from (see :func:`jagged.batch.content_hash`).

In the HTML they are ``<meta name=… content=…>`` tags in the head (attribute-escaped); in
the kept ``.ipynb`` they are under ``metadata.jagged``. :func:`read_parameters` reads
them back from either, or from a plain YAML file, for ``jagged report --params FILE``.
"""

from __future__ import annotations

import ast
import json
import shlex
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Mapping

import yaml

from jagged.errors import JaggedInputError

META_PREFIX = "jagged-"
NOTEBOOK_KEY = "notebook"
PARAMETERS_KEY = "parameters"
HASH_KEY = "input-hash"
TITLE_KEY = "title"


def default_values(notebook: str | Path) -> dict[str, Any]:
    """Every parameter a notebook declares with its default value, in declaration order.

    Parameters
    ----------
    notebook : str or pathlib.Path
        Notebook name in ``notebooks/`` or path.

    Returns
    -------
    dict
        Name → default, parsed from the source text with :func:`ast.literal_eval`
        (a default that is not a literal is kept as its source text).
    """
    from jagged.report import notebook_parameters

    out: dict[str, Any] = {}
    for p in notebook_parameters(notebook):
        try:
            out[p.name] = ast.literal_eval(p.default)
        except (ValueError, SyntaxError):
            out[p.name] = p.default
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def full_parameters(notebook: str | Path, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The complete parameter set a run uses: declared defaults, then the given values.

    Parameters
    ----------
    notebook : str or pathlib.Path
        The notebook.
    parameters : mapping
        Given values (tuples become lists, paths strings).

    Returns
    -------
    dict
        Every declared parameter in declaration order, then any undeclared given ones.
    """
    full = default_values(notebook)
    full.update({k: _plain(v) for k, v in parameters.items()})
    return full


def parameters_yaml(parameters: Mapping[str, Any]) -> str:
    """Papermill-style YAML of a parameter set (``papermill -f FILE`` reads it too)."""
    return yaml.safe_dump(dict(parameters), sort_keys=False, allow_unicode=True, default_flow_style=False,
                          width=10_000)


def notebook_name(notebook: str | Path) -> str:
    """The name under which a notebook is stored in the metadata: its file stem."""
    return Path(notebook).stem


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


def default_title(notebook: str, parameters: Mapping[str, Any]) -> str:
    """The title a report of this notebook gets when none is given or stored."""
    if notebook_name(notebook) == "model_report":
        return f"Model report: {parameters.get('model') or '(first model)'}"
    from jagged.report import DEFAULT_TITLE

    return DEFAULT_TITLE


def report_from_parameters(source: str | Path | None, output: str | Path, *, notebook: str | None = None,
                           overrides: Mapping[str, Any] | None = None, title: str | None = None,
                           show_code: bool = False) -> Path:
    """Rerun a report from a stored or hand-written parameter set (``jagged report --params``).

    Parameters
    ----------
    source : str, pathlib.Path or None
        YAML file, or a jagged report (``.html`` / ``.ipynb``) holding its parameters;
        None: the notebook's defaults.
    output : str or pathlib.Path
        Destination ``.html``.
    notebook : str, optional
        Notebook to run (default: the one stored in ``source``, else the cross-model
        report's).
    overrides : mapping, optional
        Parameters that replace the stored ones (options given on the command line).
    title : str, optional
        Title (default: the stored one, else the notebook's default).
    show_code : bool
        Show the code cells.

    Returns
    -------
    pathlib.Path
        The HTML report.

    Raises
    ------
    JaggedInputError
        Unreadable parameters, a parameter the notebook does not declare, bad input or an
        unknown model (all found before a kernel starts).
    ReportError
        The notebook failed.
    """
    from jagged.report import REPORT_NOTEBOOK, find_notebook, input_facts, run_report, validate_input, version_facts

    stored = StoredRun(None, {}) if source is None else read_parameters(source)
    name = notebook or stored.notebook or notebook_name(REPORT_NOTEBOOK)
    try:
        find_notebook(name)
    except FileNotFoundError:
        raise JaggedInputError(f"no notebook {name!r} in notebooks/") from None
    overrides = {k: _plain(v) for k, v in (overrides or {}).items()}
    for key in ("scores", "weights"):  # paths typed now are stored absolute, like the batch's
        if overrides.get(key):
            overrides[key] = str(Path(overrides[key]).resolve())
    params = {**stored.parameters, **overrides}
    declared = default_values(name)
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise JaggedInputError(f"{Path(source or name).name}: notebooks/{name}.ipynb has no parameter "
                               f"{', '.join(unknown)} (it has: {', '.join(declared)})")
    scores = params.get("scores") or None
    # In the notebooks "" means "not given"; the loader and the analysis say None.
    dataset = validate_input(scores, {k: (None if v == "" else v) for k, v in params.items()})
    if "model" in declared:
        from jagged.model_view import resolve_model

        params["model"] = resolve_model(dataset.scores, params.get("model", declared["model"]))
    facts = input_facts(dataset, bundled=scores is None) + version_facts()
    counts = {row[0]: row[1] for row in facts}
    subtitle = f"{counts['models']} models × {counts['domains']} domains from {dataset.source}"
    return run_report(name, output, params, title=title or stored.title or default_title(name, params),
                      show_code=show_code, facts=facts, subtitle=subtitle)
