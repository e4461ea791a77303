"""Block YAML of plain data written line by line, as plaindata.dump_yaml writes it.

A render writes thousands of small documents (policies, CLI tests, workload patches);
PyYAML builds an event per node and its emitter weighs every scalar again, which made
their serialization a tenth of a fleet's render. Here the layout of block style is
written directly (indent 2, sorted keys, sequences in a mapping not indented, empty
containers as {} and []) and each scalar is written by PyYAML itself once per run, on
its own in a one-item sequence (and as a mapping key), then reused.

A string of one line so long that PyYAML may wrap it (at the line width, 10,000) is
written by PyYAML where it stands: where it breaks the line, and how far it indents the
rest, depend on the column and indentation it starts at, which only its ancestors decide.
So it is written inside a copy of its ancestors that holds nothing else (one key or
item per level), and its lines are taken from there.

What this does not cover goes to dump_yaml whole (None is returned): a scalar PyYAML
writes over several lines (a string with a line break), a long key (written as a complex
key), a container referenced twice (an anchor and alias), a key that is not a string, a
type other than dict, list, str, int, float, bool and None, and a document that is not a
non-empty mapping or sequence.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

__all__ = ["block_yaml"]

_LONGEST = 4000  # longer scalars could reach the line width (10,000) and wrap
_LONGEST_KEY = 100  # PyYAML writes a key of 128 characters or more as a complex key
_NULL = ScalarNode("tag:yaml.org,2002:null", "null")
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_BREAKS = re.compile("[\r\n\x85\u2028\u2029]")  # what PyYAML writes as a line break

# where a scalar stands: its ancestors as nested pairs (parent's path, key), the key None
# for a sequence item; () at the document's root
Path = tuple[Any, ...]


class _Uncovered(Exception):
    """Outside what is written here: dump_yaml writes the document."""


class _Scalars:
    """Each scalar's text as PyYAML writes it (as a value, and as a key), once."""

    def __init__(self, node: Any, dumper: Any, as_is: Callable[[str], bool] | None) -> None:
        self.node = node  # plaindata._node: the scalar's node, as dump_yaml makes it
        self.dumper = dumper
        self.as_is = as_is  # plaindata.plain_as_is: a string the dumper writes as it is
        self.values: dict[tuple[type, Any], str | None] = {}
        self.keys: dict[str, str | None] = {}

    def value(self, v: Any, path: Path) -> str:
        """The scalar's text, written after `key: ` or `- ` where `path` says."""
        key = (type(v), v)
        text = self.values.get(key, "") if type(v) is not float else ""  # 0.0 == -0.0
        if text == "":
            if type(v) is str and len(v) <= _LONGEST and self.as_is is not None and self.as_is(v):
                text = self.values[key] = v
            else:
                node = SequenceNode(_SEQ, [self.node(v, set())], flow_style=False)
                text = self.values[key] = self._one(node, "- ")
        if text is None:
            if type(v) is str and not _BREAKS.search(v):
                return self._in_place(v, path)
            raise _Uncovered
        return text

    def _in_place(self, v: str, path: Path) -> str:
        """A long one-line string's text (its lines, if PyYAML wraps it) where it stands."""
        marker = self._skeleton("x", path)
        whole = self._skeleton(v, path)
        head = marker[:-2]
        if not marker.endswith(" x\n") or not whole.startswith(head):
            raise _Uncovered
        if not whole.endswith("\n") or whole.endswith("...\n"):  # an end marker: not alone
            raise _Uncovered
        return whole[len(head) : -1]

    def _skeleton(self, leaf: Any, path: Path) -> str:
        """The document of the scalar `leaf` under its ancestors alone."""
        node = self.node(leaf, set())
        while path:
            path, k = path
            if k is None:
                node = SequenceNode(_SEQ, [node], flow_style=False)
            else:
                node = MappingNode(_MAP, [(self.node(k, set()), node)], flow_style=False)
        out: str = yaml.serialize(node, Dumper=self.dumper, allow_unicode=True, width=10_000)
        return out

    def key(self, k: Any) -> str:
        if type(k) is not str:
            raise _Uncovered
        text = self.keys.get(k, "")
        if text == "" and self.as_is is not None and len(k) <= _LONGEST_KEY and self.as_is(k):
            text = self.keys[k] = k
        if text == "":
            node = MappingNode(_MAP, [(self.node(k, set()), _NULL)], flow_style=False)
            text = self.keys[k] = self._one(node, "", ": null")
            if text is not None and len(text) > _LONGEST_KEY:
                text = self.keys[k] = None
        if text is None:
            raise _Uncovered
        return text

    def _one(self, node: Any, head: str, tail: str = "") -> str | None:
        """The scalar's text in a document of one item, or None if it is not one line."""
        out: str = yaml.serialize(node, Dumper=self.dumper, allow_unicode=True, width=10_000)
        if not (out.startswith(head) and out.endswith(tail + "\n")):
            return None
        text = out[len(head) : len(out) - len(tail) - 1]
        if "\n" in text or "\r" in text or len(text) > _LONGEST:
            return None
        return text


_scalars: _Scalars | None = None


def block_yaml(
    value: Any, node: Any, dumper: Any, as_is: Callable[[str], bool] | None = None
) -> str | None:
    """The document dump_yaml(value, width=10_000, allow_unicode=True) writes, or None
    where this does not cover it. `node` and `dumper`: plaindata's scalar node maker and
    dumper (the scalars are written by them); `as_is`: which strings the dumper writes
    plain as they are (those are not asked of it)."""
    global _scalars
    if _scalars is None or _scalars.dumper is not dumper or _scalars.as_is is not as_is:
        _scalars = _Scalars(node, dumper, as_is)
    if type(value) not in (dict, list) or not value:
        return None
    lines: list[str] = []
    try:
        _block(value, "", lines, _scalars, set(), ())
    except (_Uncovered, TypeError):
        return None
    return "\n".join(lines) + "\n"


_SCALARS = (str, int, float, bool, type(None))


def _block(value: Any, pad: str, lines: list[str], s: _Scalars, seen: set[int], path: Path) -> None:
    """A non-empty mapping or sequence at indentation `pad`; its first line is appended
    without the indentation (the caller puts it after its key or dash)."""
    if id(value) in seen:
        raise _Uncovered  # PyYAML would write an anchor and an alias
    seen.add(id(value))
    first = True
    if type(value) is dict:
        for k in sorted(value):
            head = s.key(k) + ":"
            line = head if first else pad + head
            first = False
            v = value[k]
            t = type(v)
            if t is dict or t is list:
                if not v:
                    lines.append(line + (" {}" if t is dict else " []"))
                elif t is dict:
                    lines.append(line)
                    inner = pad + "  "
                    at = len(lines)
                    _block(v, inner, lines, s, seen, (path, k))
                    lines[at] = inner + lines[at]
                else:  # a sequence in a mapping is not indented
                    lines.append(line)
                    at = len(lines)
                    _block(v, pad, lines, s, seen, (path, k))
                    lines[at] = pad + lines[at]
            elif t in _SCALARS:
                lines.append(f"{line} {s.value(v, (path, k))}")
            else:
                raise _Uncovered
        return
    for v in value:
        dash = "- " if first else pad + "- "
        first = False
        t = type(v)
        if t is dict or t is list:
            if not v:
                lines.append(dash + ("{}" if t is dict else "[]"))
            else:
                at = len(lines)
                _block(v, pad + "  ", lines, s, seen, (path, None))
                lines[at] = dash + lines[at]
        elif t in _SCALARS:
            lines.append(dash + s.value(v, (path, None)))
        else:
            raise _Uncovered
