"""A YAML loader for untrusted text: plain data only, no aliases or anchors, core tags, bounded size."""

from __future__ import annotations

from typing import Any

import yaml

from jagged.errors import JaggedInputError
from jagged.option_checks import shown

_CORE = "tag:yaml.org,2002:"
#: Tags a document may carry: text, numbers, true/false, null, lists and mappings ("!" is a quoted scalar).
ALLOWED_TAGS = frozenset(_CORE + t for t in ("str", "int", "float", "bool", "null", "seq", "map")) | {"!"}


class _DuplicateKey(yaml.YAMLError):
    """A mapping gives one key twice (PyYAML would keep the last silently)."""

    def __init__(self, key: Any, line: int) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key, self.line = key, line


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """PyYAML's safe loader without implicit dates, merge keys or ``=`` (an unquoted date stays text), and
    refusing a key given twice in one mapping (``1`` and ``1.0`` are one key, as in the dict built)."""

    def construct_mapping(self, node: Any, deep: bool = False) -> dict:
        mapping = super().construct_mapping(node, deep=deep)
        if len(mapping) < len(node.value):
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if key in seen:
                    raise _DuplicateKey(key, key_node.start_mark.line + 1)
                seen.add(key)
        return mapping


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers
            if tag not in (_CORE + "timestamp", _CORE + "merge", _CORE + "value")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}


def _yaml_tag(tag: str) -> str:
    """A tag as written (``!!binary``), cut short for a message."""
    short = "!!" + tag[len(_CORE):] if tag.startswith(_CORE) else tag
    return short if len(short) <= 40 else short[:39] + "…"


def _scan_events(text: str, source: str, *, max_nodes: int, max_depth: int, max_scalar: int, key: str) -> None:
    """Refuse aliases, anchors, foreign tags, long scalars, too many or too deeply nested values.

    Walks PyYAML's event stream (linear, nothing built), naming the top-level key and the line.
    """
    count = depth = 0
    top_key: str | None = None
    expect_key = False  # inside the top-level mapping, whether the next scalar is a key
    for event in yaml.parse(text, Loader=_Loader):
        line = event.start_mark.line + 1 if event.start_mark is not None else 0
        where = (f" in {key} {shown(top_key)}" if top_key is not None else "") + f" (line {line})"
        if isinstance(event, yaml.AliasEvent):
            raise JaggedInputError(f"{source}: YAML aliases (*{shown(event.anchor)[1:-1]}) are not allowed{where}")
        if not isinstance(event, (yaml.NodeEvent, yaml.CollectionEndEvent)):
            continue
        if getattr(event, "anchor", None) is not None:
            raise JaggedInputError(f"{source}: YAML anchors (&{shown(event.anchor)[1:-1]}) are not allowed{where}")
        tag = getattr(event, "tag", None)
        if tag is not None and tag not in ALLOWED_TAGS:
            raise JaggedInputError(f"{source}: YAML tag {_yaml_tag(tag)} is not allowed (only text, numbers, "
                                   f"true/false, null, lists and mappings){where}")
        if isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
            expect_key = depth == 1
            continue
        count += 1
        if count > max_nodes:
            raise JaggedInputError(f"{source}: more than {max_nodes:,} YAML values{where}")
        if isinstance(event, yaml.ScalarEvent):
            if len(event.value) > max_scalar:
                raise JaggedInputError(f"{source}: a YAML value of {len(event.value):,} characters (at most "
                                       f"{max_scalar:,}){where}")
            if depth == 1 and expect_key:
                top_key = event.value
                expect_key = False
            elif depth == 1:
                expect_key = True
            continue
        depth += 1  # a sequence or mapping starts
        if depth > max_depth:
            raise JaggedInputError(f"{source}: YAML nested more than {max_depth} levels deep{where}")
        if depth == 1:
            expect_key = isinstance(event, yaml.MappingStartEvent)


def load_yaml(text: str, source: str, *, max_bytes: int, max_nodes: int, max_depth: int, max_scalar: int,
              what: str = "YAML", key: str = "entry") -> Any:
    """Load untrusted YAML as plain data (None for an empty text): bounded, alias-free, core tags only.

    ``max_bytes``, ``max_nodes``, ``max_depth`` and ``max_scalar`` bound the UTF-8 size, the
    number of values, the nesting and one value's length; ``what`` names the content and
    ``key`` a top-level key in messages ("parameters"/"parameter", "weights"/"profile").

    Raises
    ------
    JaggedInputError
        Not valid YAML; over a bound; an alias, an anchor or a tag other than the core ones; a
        key given twice in one mapping. One line, with the line number.

    Notes
    -----
    The event stream is scanned first, so an alias bomb or a deeply nested document is
    refused before any object is built.
    """
    if len(text) > max_bytes or len(text.encode("utf-8", errors="replace")) > max_bytes:
        raise JaggedInputError(f"{source}: {what} over {max_bytes:,} bytes of YAML")
    try:
        _scan_events(text, source, max_nodes=max_nodes, max_depth=max_depth, max_scalar=max_scalar, key=key)
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is PyYAML's safe loader, narrowed
    except JaggedInputError:
        raise
    except _DuplicateKey as exc:
        raise JaggedInputError(f"{source}: YAML key {shown(exc.key)} given twice (line {exc.line}); a mapping "
                               "names each key once") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise JaggedInputError(f"{source}: not valid YAML{where}") from None
    except (ValueError, OverflowError, RecursionError):  # a number the constructor cannot build
        raise JaggedInputError(f"{source}: not valid YAML (a value cannot be read)") from None
