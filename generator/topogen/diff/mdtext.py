"""Markdown building blocks shared by the report's parts: escaping, code spans, fences,
collapsible sections."""

from __future__ import annotations

import re

__all__ = ["cell", "code", "details", "fence", "text"]

MAX_CELL = 300
_ESCAPE = re.compile(r"([\\`*_\[\]<|$~])")
_LINE_START = re.compile(r"^(\d*)([>#=+.)-])")


def details(summary: str, body: str) -> str:
    return f"<details>\n<summary>{summary}</summary>\n\n{body.rstrip()}\n\n</details>\n\n"


def text(s: str) -> str:
    """Literal text in Markdown: punctuation escaped, HTML neutralised, one line."""
    s = " ".join(s.split()).replace("&", "&amp;")
    return _LINE_START.sub(r"\1\\\2", _ESCAPE.sub(r"\\\1", s))


def cell(s: str) -> str:
    s = " ".join(s.split())
    if len(s) > MAX_CELL:
        s = s[:MAX_CELL].rsplit(" ", 1)[0] + " …"
    return text(s)


def code(s: str, in_table: bool = True) -> str:
    """An inline code span that survives any backticks in s (and, in a table, its pipes)."""
    s = " ".join(s.split())
    if in_table:
        s = s.replace("|", "\\|")
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


def fence(body: str, lang: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`{3,}", body)), default=0)
    mark = "`" * max(3, longest + 1)
    return f"{mark}{lang}\n{body}\n{mark}"
