"""Shared YAML loading: YAML text to Python objects, checked: the C loader (or the fast
event loader) with duplicate keys refused and alias bombs stopped; errors name the file
and line. Config reads topogen.yaml with it, sources every input file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from topogen.errors import InputError
from topogen.yamlfast import load_all_fast

__all__ = ["display_path", "load_yaml_bytes", "load_yaml_text"]

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE = "tag:yaml.org,2002:merge"


class _DuplicateKey(Exception):
    def __init__(self, key: Any, first: tuple[int, int], again: tuple[int, int]) -> None:
        self.key, self.first, self.again = key, first, again

    def where(self) -> str:
        (line, col), (again, _) = self.first, self.again
        return f"also on line {line}" if line != again else f"also at column {col} of it"


class _Loader(_BaseLoader):  # type: ignore[misc]
    """The C loader, refusing a mapping that names a key twice: YAML readers differ on
    which one wins (PyYAML and Kubernetes keep the last, some refuse), so topogen refuses."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: dict[Any, tuple[int, int]] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:
                continue
            key = self.construct_object(key_node, deep=True)
            mark = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            try:
                first = seen.setdefault(key, mark)
            except TypeError:  # unhashable: the constructor says so
                continue
            if first != mark:
                raise _DuplicateKey(key, first, mark)
        return super().construct_mapping(node, deep)


# A document may expand aliases to at most this many nodes (and at most
# _MAX_EXPANSION times its own size); beyond that it is an alias bomb.
_MAX_EXPANDED_NODES = 2_000_000
_MAX_EXPANSION = 50


def display_path(path: Path) -> str:
    """A path as the user gave it: absolute stays absolute, relative stays relative (to the
    working folder, as given), `./` and doubled slashes aside."""
    return os.path.normpath(path) if str(path) else "."


def load_yaml_bytes(raw: bytes, path: str) -> list[Any]:
    """load_yaml_text of a file's bytes: UTF-8, read as text mode reads it (universal
    newlines)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("file is not UTF-8 text", path=path) from None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return load_yaml_text(text, path)


def load_yaml_text(text: str, path: str) -> list[Any]:
    """Parse every document of a YAML stream; raise InputError naming the line."""
    fast = load_all_fast(text)
    if fast is not None:
        docs, aliased = fast
        for i, doc in enumerate(docs):
            if aliased[i]:  # without aliases a document is exactly its written size
                _check_alias_expansion(doc, path, i)
        return docs
    try:
        docs = list(yaml.load_all(text, Loader=_Loader))
    except _DuplicateKey as exc:
        raise InputError(
            f"duplicate key {exc.key!r} ({exc.where()}): YAML readers disagree on which one counts",
            path=path,
            line=exc.again[0],
            hint="keep one of them",
        ) from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise InputError(f"malformed YAML: {exc}", path=path) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise InputError(f"malformed YAML: {problem}", path=path, line=line) from None
    except yaml.YAMLError as exc:
        raise InputError(f"malformed YAML: {exc}", path=path) from None
    for i, doc in enumerate(docs):
        _check_alias_expansion(doc, path, i)
    return docs


def _check_alias_expansion(doc: Any, path: str, index: int) -> None:
    """Reject documents whose aliases expand far beyond their written size.

    The C loader shares aliased nodes instead of copying them, so the document
    itself is small; every consumer that walks it would not be. Count the
    expanded size with memoisation (linear in the distinct nodes).
    """
    sizes: dict[int, int] = {}
    distinct = 0
    stack: list[tuple[Any, bool]] = [(doc, False)]
    while stack:
        node, done = stack.pop()
        if not isinstance(node, dict | list):
            continue
        key = id(node)
        if done:
            children = node.values() if isinstance(node, dict) else node
            total = 1
            for child in children:
                if isinstance(child, dict | list):
                    total += sizes[id(child)]
                else:
                    total += 1
            sizes[key] = total
            if total > _MAX_EXPANDED_NODES and total > _MAX_EXPANSION * max(distinct, 1):
                raise InputError(
                    f"document {index + 1} expands its YAML aliases to over "
                    f"{_MAX_EXPANDED_NODES} nodes (an alias bomb?)",
                    path=path,
                    hint="write the document without anchors and aliases",
                )
            continue
        if key in sizes:
            continue
        sizes[key] = 0  # placeholder: cycles are impossible in safe-loaded YAML
        distinct += 1
        stack.append((node, True))
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, dict | list) and id(child) not in sizes:
                stack.append((child, False))
