"""Shared YAML loading: libyaml's parse events built faster, the same data as CSafeLoader.

PyYAML's C loader parses in C but composes and constructs in Python, one Node object and
one constructor call per scalar; on a 5,000-node snapshot that is ~90% of the time. Here
the C parser's events build the containers directly and each distinct plain scalar is
resolved and constructed once (with PyYAML's own Resolver and SafeConstructor, so `yes`,
`0o17`, `1_000`, `.inf`, `2001-12-14` come out exactly as SafeLoader makes them).

A text that is JSON (as `kubectl get -o json` and topogen snapshots write it) is read by
the json module, numbers resolved as the plain scalars they are in YAML.

Anything outside the common subset (explicit tags, merge keys, complex keys, recursive
aliases, duplicate anchors, duplicate keys, any parse error) returns None: the caller then
loads the text with the C loader, which gives the same result or raises the error (for a
duplicate key, with both lines: yamltext.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)
from yaml.nodes import ScalarNode

__all__ = ["FastLoad", "load_all_fast", "yaml_unsafe_in_json"]

_CParser: Any = getattr(yaml, "CSafeLoader", None)
_RESOLVER: Any = yaml.resolver.Resolver()
_CONSTRUCTOR: Any = yaml.constructor.SafeConstructor()
_CONSTRUCTORS: dict[Any, Callable[..., Any]] = yaml.constructor.SafeConstructor.yaml_constructors
_SPECIAL_TAGS = ("tag:yaml.org,2002:merge", "tag:yaml.org,2002:value")
_CACHE_LIMIT = 200_000
_plain_cache: dict[str, Any] = {}
_NO_KEY: Any = object()
_NOT_JSON: Any = object()
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


@cache  # compiled when non-ASCII text first needs it (start-up: a large character class)
def yaml_unsafe_in_json() -> re.Pattern[str]:
    """Characters PyYAML rejects, and those it reads as line breaks: raw in a JSON string,
    they make PyYAML read the text otherwise than the json module (sources/live.py
    escapes them)."""
    return re.compile(f"{yaml.reader.Reader.NON_PRINTABLE.pattern}|[\x85\u2028\u2029]")


class _Unsupported(Exception):
    """Outside the fast subset: load with the C loader instead."""


FastLoad = tuple[list[Any], list[bool]]  # documents, and whether each used an alias


def _plain(value: str) -> Any:
    """A plain scalar as SafeLoader constructs it (cached: scalars repeat a lot)."""
    tag = _RESOLVER.resolve(ScalarNode, value, (True, False))
    construct = _CONSTRUCTORS.get(tag)
    if construct is None or tag in _SPECIAL_TAGS:
        raise _Unsupported
    result = construct(_CONSTRUCTOR, ScalarNode(tag, value))
    if len(_plain_cache) >= _CACHE_LIMIT:
        _plain_cache.clear()
    _plain_cache[value] = result
    return result


def load_all_fast(text: str) -> FastLoad | None:
    """Every document of the stream, or None when the C loader must do it."""
    body = _json_body(text)
    if body is not None:
        doc = _json(body)
        if doc is not _NOT_JSON:
            return [doc], [False]
    if _CParser is None:
        return None
    parser = _CParser(text)
    try:
        return _build(parser.get_event)
    except (_Unsupported, yaml.YAMLError, KeyError, TypeError, ValueError):
        return None
    finally:
        parser.dispose()


def _json_body(text: str) -> str | None:
    """The text from its first character on, when that opens a JSON object or array
    (after blank and comment lines); else None."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n":
            i += 1
        elif c == "#":
            j = text.find("\n", i)
            if j < 0:
                return None
            i = j + 1
        else:
            return text[i:] if c in "{[" else None
    return None


def _json(body: str) -> Any:
    """A JSON text as SafeLoader reads it (JSON is YAML: a flow collection of quoted
    strings and plain numbers), or _NOT_JSON when it is not plain JSON or PyYAML would
    read it otherwise: escaped surrogates and characters it does not accept (it rejects
    them, and only the YAML loader says so), and raw line breaks other than \\n inside strings. Numbers are resolved as plain scalars,
    so `1e5` stays a string as in YAML 1.1."""
    if "\\u" in body and _SURROGATE_ESCAPE.search(body):
        return _NOT_JSON
    if "\x7f" in body or (not body.isascii() and yaml_unsafe_in_json().search(body)):
        return _NOT_JSON
    import json  # only a JSON document needs it (a YAML input never does)

    try:
        return json.loads(
            body,
            parse_float=_plain,
            parse_int=_plain,
            parse_constant=_plain,
            object_pairs_hook=_unique_keys,
        )
    except (ValueError, RecursionError, _Unsupported):
        return _NOT_JSON


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Unsupported  # a duplicate key: the YAML loader names both lines
    return out


def _build(get_event: Callable[[], Any]) -> FastLoad:
    docs: list[Any] = []
    aliased: list[bool] = []
    stack: list[tuple[Any, Any]] = []
    container: Any = None
    key: Any = _NO_KEY
    anchors: dict[str, Any] = {}
    root: Any = None
    used_alias = False
    cache = _plain_cache
    while True:
        event = get_event()
        if event is None:
            break
        kind = type(event)
        if kind is ScalarEvent:
            if event.tag is not None:
                raise _Unsupported
            if event.implicit[0]:
                try:
                    value = cache[event.value]
                except KeyError:
                    value = _plain(event.value)
            else:
                value = event.value
            if event.anchor is not None:
                _anchor(anchors, event.anchor, value)
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            if event.tag is not None:
                raise _Unsupported
            new: Any = {} if kind is MappingStartEvent else []
            if event.anchor is not None:
                _anchor(anchors, event.anchor, new)
            stack.append((container, key))
            container, key = new, _NO_KEY
            continue
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            if key is not _NO_KEY:
                raise _Unsupported
            value = container
            container, key = stack.pop()
        elif kind is AliasEvent:
            value = anchors[event.anchor]
            if (value is container or any(value is c for c, _ in stack)) and isinstance(
                value, dict | list
            ):
                raise _Unsupported  # a recursive structure
            used_alias = True
        elif kind is DocumentStartEvent:
            anchors, container, key, root, used_alias = {}, None, _NO_KEY, None, False
            continue
        elif kind is DocumentEndEvent:
            docs.append(root)
            aliased.append(used_alias)
            continue
        else:  # stream start and end
            continue
        if container is None:
            root = value
        elif type(container) is list:
            container.append(value)
        elif key is _NO_KEY:
            if isinstance(value, dict | list):
                raise _Unsupported  # a complex key
            key = value
        else:
            if key in container:
                raise _Unsupported  # a duplicate key: the slow loader names both lines
            container[key] = value
            key = _NO_KEY
    return docs, aliased


def _anchor(anchors: dict[str, Any], name: str, value: Any) -> None:
    if name in anchors:
        raise _Unsupported  # the C loader reports the duplicate anchor
    anchors[name] = value
