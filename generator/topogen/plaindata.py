"""Shared vocabulary: plain data (dicts, lists, scalars, as YAML and JSON hold them), fast.

`copy_plain` is copy.deepcopy for such trees at a fraction of the cost (no memo: a
container referenced twice is copied twice, which plain data never notices).

`dump_yaml` is yaml.dump(..., sort_keys=True, default_flow_style=False) with the
representer's work done in one pass: it builds the same nodes SafeRepresenter builds
and hands them to the same (C) serializer; with the width and Unicode a render uses,
blockyaml.py first writes the document line by line. A tree it does not cover (a container
referenced twice, which PyYAML writes as an anchor and alias; any type but dict, list,
str, int, float, bool and None) goes to yaml.dump itself.

Either way a string is quoted wherever some YAML reader would not read it back exactly
as written plain: PyYAML (YAML 1.1) quotes what it would resolve to another type; on top
of that `_style` quotes what Go's readers (yaml.v2 and yaml.v3, under kubectl, kustomize,
Argo CD, Kyverno) resolve otherwise (1e3, 0o17, y, N, 2024-1-2 ...), and double-quotes
(escaped) the line breaks YAML 1.1 knows and 1.2 does not (U+0085, U+2028, U+2029).
"""

from __future__ import annotations

import contextlib
import copy
import re
from typing import Any, TypeVar

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from topogen.blockyaml import block_yaml

__all__ = ["copy_plain", "dump_yaml"]

T = TypeVar("T")

_BaseDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_SCALARS = (str, int, float, bool, type(None))
_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"


def copy_plain(value: T) -> T:
    """A deep copy of plain data (anything else inside is deep-copied the usual way)."""
    return _copy(value)  # type: ignore[no-any-return]


def _copy(value: Any) -> Any:
    t = type(value)
    if t is dict:
        return {k: _copy(v) for k, v in value.items()}
    if t is list:
        return [_copy(v) for v in value]
    if t in _SCALARS:
        return value
    return copy.deepcopy(value)


class _Uncovered(Exception):
    """Outside what the fast representer covers: let yaml.dump do it."""


def _float(value: float) -> str:
    # SafeRepresenter.represent_float
    if value != value:
        return ".nan"
    if value == float("inf"):
        return ".inf"
    if value == float("-inf"):
        return "-.inf"
    text = repr(value).lower()
    if "." not in text and "e" in text:
        text = text.replace("e", ".0e", 1)
    return text


_ESCAPED = frozenset("\x85\u2028\u2029")
_GO_PLAIN_WORDS = frozenset(("y", "Y", "n", "N"))  # yaml.v2 booleans YAML 1.1 has not
# what yaml.v2/v3 make of a plain scalar starting with a digit, sign or dot, once they
# have dropped its underscores: strconv.ParseInt(s, 0, 64), yamlStyleFloat, a timestamp
_GO_NUMBER = re.compile(
    r"[-+]?(?:0[bB][01]+|0[oO]?[0-7]+|0[xX][0-9a-fA-F]+|[0-9]+)"
    r"|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
)
_GO_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ].*)?")


def _style(value: str) -> str | None:
    """How a string must be written so every YAML reader reads it back exactly (None: as
    PyYAML chooses)."""
    if not value.isascii() and any(ch in _ESCAPED for ch in value):
        return '"'
    if value[:1] in "+-.0123456789" and (
        _GO_NUMBER.fullmatch(value.replace("_", "")) or _GO_TIMESTAMP.fullmatch(value)
    ):
        return "'" if value.isprintable() else '"'
    if value in _GO_PLAIN_WORDS:
        return "'"
    return None


# (scalar, implicit) -> the tag the safe resolver gives it: the C serializer asks twice
# per scalar, and a tree repeats its keys and short values (the resolver's rules never
# change); long scalars (texts, code) seldom repeat and are not kept
_RESOLVED: dict[tuple[str, tuple[bool, bool]], str] = {}
_RESOLVER: Any = yaml.resolver.Resolver()  # the safe dumper's rules


def _scalar_tag(value: str, implicit: tuple[bool, bool]) -> str:
    """The tag the safe resolver gives a scalar (kept for short ones: _RESOLVED)."""
    if len(value) > 64:
        return _RESOLVER.resolve(ScalarNode, value, implicit)  # type: ignore[no-any-return]
    key = (value, implicit)
    tag = _RESOLVED.get(key)
    if tag is None:
        tag = _RESOLVED[key] = _RESOLVER.resolve(ScalarNode, value, implicit)
    return tag


_AS_IS = re.compile(r"[A-Za-z](?:[A-Za-z0-9_./ -]*[A-Za-z0-9_./-])?")


def plain_as_is(value: str) -> bool:
    """Whether _Dumper writes the string plain, as it is, wherever it stands (as a value
    or a short key): a letter, then letters, digits, `_./-` and inner spaces (nothing
    PyYAML's emitter quotes or indicates: no `: ` or ` #`), that _style leaves to PyYAML
    and the safe resolver reads back as a string (not `yes`, `null`, ...). blockyaml then
    skips asking PyYAML for it."""
    return (
        _AS_IS.fullmatch(value) is not None
        and _style(value) is None
        and _scalar_tag(value, (True, False)) == _STR
    )


class _Dumper(_BaseDumper):  # type: ignore[misc]
    """The safe dumper, with strings quoted as _style says."""

    def represent_str(self, data: str) -> Node:
        node: Node = self.represent_scalar(_STR, data, style=_style(data))
        return node

    def resolve(self, kind: type[Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is not ScalarNode:
            return super().resolve(kind, value, implicit)  # type: ignore[no-any-return]
        return _scalar_tag(value, implicit)


_Dumper.add_representer(str, _Dumper.represent_str)


def _node(value: Any, seen: set[int]) -> Node:
    t = type(value)
    if t is str:
        return ScalarNode(_STR, value, style=_style(value) if value else None)
    if t is dict or t is list:
        if id(value) in seen:
            raise _Uncovered  # PyYAML would write an anchor and an alias
        seen.add(id(value))
        if t is list:
            return SequenceNode(_SEQ, [_node(v, seen) for v in value], flow_style=False)
        items = list(value.items())
        with contextlib.suppress(TypeError):  # as SafeRepresenter: unsortable keys stay put
            items = sorted(items)
        return MappingNode(
            _MAP, [(_node(k, seen), _node(v, seen)) for k, v in items], flow_style=False
        )
    if t is bool:
        return ScalarNode(_BOOL, "true" if value else "false")
    if t is int:
        return ScalarNode(_INT, str(value))
    if value is None:
        return ScalarNode(_NULL, "null")
    if t is float:
        return ScalarNode(_FLOAT, _float(value))
    raise _Uncovered


def dump_yaml(value: Any, *, width: int, allow_unicode: bool) -> str:
    """yaml.dump(value, Dumper=CSafeDumper, sort_keys=True, default_flow_style=False, ...)."""
    if width == 10_000 and allow_unicode:  # as every render writes its documents
        block = block_yaml(value, _node, _Dumper, plain_as_is)
        if block is not None:
            return block
    try:
        node = _node(value, set())
    except _Uncovered:
        return yaml.dump(
            value,
            Dumper=_Dumper,
            sort_keys=True,
            default_flow_style=False,
            allow_unicode=allow_unicode,
            width=width,
        )
    text: str = yaml.serialize(node, Dumper=_Dumper, allow_unicode=allow_unicode, width=width)
    return text
