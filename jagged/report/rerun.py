"""Exact reruns: a report's full parameter set, stored in it and read back.

A report stores ``jagged-notebook`` (the notebook's name), ``jagged-parameters`` (every
declared parameter with its value, as papermill-style YAML) and, in a batch,
``jagged-input-hash`` (:func:`jagged.report.batch_plan.content_hash`): as ``<meta>`` tags in
the HTML head and under ``metadata.jagged`` in the kept ``.ipynb``. :func:`read_parameters`
reads them back, or a plain YAML file, for ``jagged report --params FILE``.

Stored parameters come from a stranger: reading them is bounded (:data:`MAX_YAML_BYTES`,
:data:`MAX_NODES`, :data:`MAX_DEPTH`, :data:`MAX_REPORT_BYTES`) and builds plain values only
(:func:`load_yaml`: no aliases, anchors or tags beyond the core ones; an unquoted date stays
text); :func:`jagged.options.check_parameters` checks them before any kernel starts.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Mapping

import yaml

from jagged import safe_yaml
from jagged.errors import JaggedInputError
from jagged.option_checks import shown
from jagged.paths import file_kind
from jagged.report.notebooks import notebook_name
from jagged.text import printable

META_PREFIX = "jagged-"
NOTEBOOK_KEY = "notebook"
PARAMETERS_KEY = "parameters"
HASH_KEY = "input-hash"
TITLE_KEY = "title"
#: Largest YAML parameter text read (bytes).
MAX_YAML_BYTES = 1 << 20
#: Most YAML values (scalars, sequences, mappings) in a parameter set.
MAX_NODES = 10_000
#: Deepest nesting of sequences and mappings (a parameter set is a mapping of scalars and lists).
MAX_DEPTH = 4
#: Largest report (.html) or kept notebook (.ipynb) read for its parameters (bytes).
MAX_REPORT_BYTES = 64 << 20
#: Longest YAML scalar (characters): longer is no parameter value, and ``int()`` of it would be slow.
MAX_SCALAR = 4096
#: Explicit tags a parameter file may carry: the JSON-like core types.


def parameters_yaml(parameters: Mapping[str, Any]) -> str:
    """Papermill-style YAML of a parameter set (``papermill -f FILE`` reads it too).

    Non-ASCII text is written as is unless it would not read back exactly (PyYAML folds a NEL
    inside single quotes) or holds a character a page shows escaped (:data:`jagged.text.HIDDEN`):
    then every non-ASCII character is escaped.
    """
    values = dict(parameters)
    text = yaml.safe_dump(values, sort_keys=False, allow_unicode=True, default_flow_style=False, width=10_000)
    try:
        exact = load_yaml(text, "parameters") == values and printable(text, keep="\n") == text
    except JaggedInputError:  # e.g. more values than a rerun reads: the rerun will say so
        exact = True
    if exact:
        return text
    return yaml.safe_dump(values, sort_keys=False, allow_unicode=False, default_flow_style=False, width=10_000)


def report_metadata(notebook: str | Path, parameters: Mapping[str, Any],
                    extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The metadata a report stores (keys without ``jagged-``) as strings: notebook, YAML parameters, ``extra``."""
    meta = {NOTEBOOK_KEY: notebook_name(notebook), PARAMETERS_KEY: parameters_yaml(parameters)}
    meta.update({str(k): str(v) for k, v in (extra or {}).items()})
    return meta


def rerun_command(report: str | Path) -> str:
    """The shell command that reruns a report: ``jagged report --params REPORT -o STEM.rerun.html``, quoted."""
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
    """The ``jagged-…`` metadata of an HTML report, from its head only (read up to :data:`MAX_REPORT_BYTES`)."""
    text = _read_head(Path(path))
    end = text.find("</head>")
    reader = _MetaReader()
    reader.feed(text if end < 0 else text[:end])
    reader.close()
    return reader.meta


def _read_head(path: Path) -> str:
    """A file's text up to its ``</head>`` (or :data:`MAX_REPORT_BYTES`), read in chunks."""
    chunks: list[bytes] = []
    size = 0
    with open(path, "rb") as handle:
        while size < MAX_REPORT_BYTES:
            chunk = handle.read(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if b"</head>" in chunk or (len(chunks) > 1 and b"</head>" in chunks[-2][-7:] + chunk[:7]):
                break
    return b"".join(chunks).decode("utf-8", errors="replace")


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
        # never echoed: a file that is no parameter file (``--params /etc/shadow``) parses as such keys
        raise JaggedInputError(f"{source}: parameter names must be Python identifiers; {len(bad)} "
                               f"{'is' if len(bad) == 1 else 'are'} not (not shown: is this a parameter file?)")
    return data


@dataclass(frozen=True)
class StoredRun:
    """A parameter set read back for a rerun: the notebook and title stored with it (None: not stored)."""

    notebook: str | None
    parameters: dict
    title: str | None = None


def _require_regular(path: Path, source: str) -> int:
    """The size of a regular file (no FIFO, device, socket or folder), or a one-line error."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        raise JaggedInputError(f"{source}: no such parameter file") from None
    if not stat.S_ISREG(info.st_mode):
        raise JaggedInputError(f"{source}: not a regular file")
    return info.st_size


def _open_regular(path: Path, source: str, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes, or a one-line error."""
    size = _require_regular(path, source)
    if size > limit:
        raise JaggedInputError(f"{source}: {size:,} bytes, more than the {limit:,} a parameter file may have")
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise JaggedInputError(f"{source}: more than the {limit:,} bytes a parameter file may have")
    return data


def read_parameters(path: str | Path, source: str | None = None) -> StoredRun:
    """Read a parameter set for a rerun from a YAML file, or from a jagged report's ``.html`` or ``.ipynb``.

    ``source`` names the file in messages (default: its name). The values are plain data;
    their meaning is checked by :func:`jagged.report.jaggedness.report_from_parameters`.

    Raises
    ------
    JaggedInputError
        Missing, unreadable, oversized or not a regular file; no stored parameters; not a
        mapping; YAML with aliases, anchors, other tags or too many values.
    """
    path = Path(path)
    name = source or path.name
    suffix = path.suffix.lower()
    if suffix in (".html", ".htm"):
        _require_regular(path, name)
        meta = html_metadata(path)
        if PARAMETERS_KEY not in meta:
            raise JaggedInputError(f"{name}: no stored parameters (not a jagged report, or an older one)")
        params = _check_mapping(load_yaml(meta[PARAMETERS_KEY], name), name)
        return StoredRun(_text_or_none(meta.get(NOTEBOOK_KEY), "notebook", name), params,
                         _text_or_none(meta.get(TITLE_KEY), "title", name))
    if suffix == ".ipynb":
        data = _open_regular(path, name, MAX_REPORT_BYTES)
        try:
            document = json.loads(data.decode("utf-8"), object_pairs_hook=_unique_keys)
        except RecursionError:
            raise JaggedInputError(f"{name}: not a readable notebook (nested too deeply)") from None
        except KeyError as exc:
            raise JaggedInputError(f"{name}: JSON key {shown(exc.args[0])} given twice in one object") from None
        except (ValueError, UnicodeDecodeError):
            raise JaggedInputError(f"{name}: not a readable notebook") from None
        stored = document.get("metadata", {}) if isinstance(document, dict) else None
        stored = stored.get("jagged", {}) if isinstance(stored, dict) else None
        if not isinstance(stored, dict) or PARAMETERS_KEY not in stored:
            raise JaggedInputError(f"{name}: no stored parameters in metadata.jagged")
        params = stored[PARAMETERS_KEY]
        if isinstance(params, str):
            params = load_yaml(params, name)
        else:
            _check_tree(params, name)
        return StoredRun(_text_or_none(stored.get(NOTEBOOK_KEY), "notebook", name), _check_mapping(params, name),
                         _text_or_none(stored.get(TITLE_KEY), "title", name))
    data = _open_regular(path, name, MAX_YAML_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise JaggedInputError(f"{name}: not UTF-8 text") from None
    return StoredRun(None, _check_mapping(load_yaml(text, name), name))


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as a dict, or a KeyError naming a key it gives twice (json keeps the last silently)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise KeyError(key)
        out[key] = value
    return out


def _text_or_none(value: object, what: str, source: str) -> str | None:
    """A stored notebook name or title: text (bounded, no NUL) or None."""
    from jagged.option_checks import check_text

    return check_text(f"the stored {what}", value, source)


def _check_tree(value: object, source: str) -> None:
    """Refuse JSON metadata that is not plain data of bounded size and depth (json.loads gives plain types)."""
    count = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise JaggedInputError(f"{source}: stored parameters hold more than {MAX_NODES:,} values")
        if depth > MAX_DEPTH:
            raise JaggedInputError(f"{source}: stored parameters nested more than {MAX_DEPTH} levels deep")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, str) and len(item) > MAX_SCALAR:
            raise JaggedInputError(f"{source}: a stored value of {len(item):,} characters (at most {MAX_SCALAR:,})")


def load_yaml(text: str, source: str) -> Any:
    """Stored parameters as plain data ({} for an empty text): :func:`jagged.safe_yaml.load_yaml` with these bounds."""
    data = safe_yaml.load_yaml(text, source, max_bytes=MAX_YAML_BYTES, max_nodes=MAX_NODES, max_depth=MAX_DEPTH,
                               max_scalar=MAX_SCALAR, what="parameters", key="parameter")
    return {} if data is None else data


def check_input_path(value: Any, name: str = "scores", source: str = "") -> None:
    """Refuse an input that is neither a regular file nor a folder (FIFO, device, socket) before it is opened.

    A missing path, ``None`` and ``""`` pass (the reader says "no such file"; the bundled
    data). Reading a FIFO would wait forever. The one-line error is
    ``SOURCE: NAME PATH is a FIFO, not a regular file or folder``.
    """
    if value is None or value == "":
        return
    where = f"{source}: " if source else ""
    try:
        mode = os.stat(value).st_mode
    except (OSError, ValueError, TypeError):
        return  # missing or unreadable: the reader gives its own one-line error
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    raise JaggedInputError(f"{where}{name} {os.fspath(value)} is {file_kind(mode)}, not a regular file or folder")
