"""Shared text UI: text that fits where it is shown: tables cut to a width (none when
piped), colour only for a terminal (never with NO_COLOR), progress lines on stderr.

The formatters take `width` and `colour` as arguments; only the CLI asks the terminal.
Progress: the core calls `step(...)`, which says nothing unless the CLI installed a sink.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from typing import TextIO

__all__ = [
    "fit_row",
    "install_progress",
    "paint",
    "step",
    "terminal_width",
    "use_colour",
]

_STYLES = {"red": "31", "green": "32", "yellow": "33", "magenta": "35", "bold": "1"}


def terminal_width(stream: TextIO | None = None) -> int | None:
    """The terminal's columns when `stream` (stdout) is one; None (no limit) when piped."""
    stream = stream or sys.stdout
    if not stream.isatty():
        return None
    return shutil.get_terminal_size((120, 24)).columns


def use_colour(stream: TextIO | None = None) -> bool:
    """Colour for a terminal only, and never when NO_COLOR is set (no-color.org)."""
    stream = stream or sys.stdout
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def paint(text: str, style: str, colour: bool) -> str:
    return f"\033[{_STYLES[style]}m{text}\033[0m" if colour and style in _STYLES else text


def fit_row(cells: Sequence[str], widths: Sequence[int], width: int | None) -> str:
    """Cells padded to `widths`, the last one cut (with ...) so the line fits `width`
    (the line itself when even the other columns are wider)."""
    head = "  ".join(c.ljust(w) for c, w in zip(cells[:-1], widths[:-1], strict=True))
    line = f"{head}  {cells[-1]}".rstrip() if cells[:-1] else cells[-1]
    if width is None or len(line) <= width:
        return line
    room = width - len(head) - 2
    if room < 12:  # too narrow even for the first columns: cut the line itself
        return line[: max(width - 3, 0)] + "..."
    return f"{head}  {cells[-1][: room - 3]}..."


# --- progress ---------------------------------------------------------------------------

_sink: Callable[[str], None] | None = None


def step(message: str) -> None:
    """Say what long work is doing (a no-op unless the CLI installed a sink)."""
    if _sink is not None:
        _sink(message)


def install_progress(stream: TextIO | None = None, after: float = 2.0) -> Callable[[], None]:
    """Show steps on `stream` (stderr) when it is a terminal, once `after` seconds have
    passed, on one line that is rewritten; returns the function that clears it."""
    global _sink
    out = stream or sys.stderr
    if not out.isatty():
        return lambda: None
    start = time.monotonic()
    shown = [False]

    def sink(message: str) -> None:
        if time.monotonic() - start >= after:
            out.write(f"\r\033[Ktopogen: {message}")
            out.flush()
            shown[0] = True

    def clear() -> None:
        global _sink
        _sink = None
        if shown[0]:
            out.write("\r\033[K")
            out.flush()

    _sink = sink
    return clear
