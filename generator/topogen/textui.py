"""Shared text UI: text that fits where it is shown: tables cut to a width (none when
piped), colour only for a terminal (never with NO_COLOR), progress lines on stderr.

The formatters take `width` and `colour` as arguments; only the CLI asks the terminal.
Progress: the core calls `step(...)`, which says nothing unless the CLI installed a sink.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TextIO

__all__ = [
    "Column",
    "fit_row",
    "fit_table",
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
    import shutil  # only when a table is laid out (start-up: its archive modules stay out)

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


@dataclass(frozen=True)
class Column:
    """A table column: `give_way` 0 is never cut; 1 is cut first, then 2, ...; a
    `droppable` one is left out when cutting it to its least is not enough."""

    title: str
    give_way: int = 0
    droppable: bool = False


_LEAST = 8  # a column is cut to no fewer characters than this ("abcde...")


def fit_table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    width: int | None,
    styles: Sequence[Sequence[str | None]] | None = None,
    colour: bool = False,
) -> list[str]:
    """The header and rows in columns two spaces apart, fitting `width` (None: whole): the
    columns that give way are cut (with ...) in their order, and droppable ones left out;
    the others stay whole (a line wider than `width` only when they alone are). Widths
    count characters, never colour codes: `styles` (per row and column: a style of
    paint(), or None) are painted on after the layout."""
    natural = [max([len(c.title), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
    shown, widths = list(range(len(columns))), list(natural)

    def excess() -> int:
        return sum(widths[i] for i in shown) + 2 * (len(shown) - 1) - (width or 0)

    if width is not None:
        for i in sorted(
            (i for i, c in enumerate(columns) if c.give_way), key=lambda i: columns[i].give_way
        ):
            over = excess()
            if over <= 0:
                break
            least = min(natural[i], _LEAST)
            if columns[i].droppable and widths[i] - over < least:
                shown.remove(i)
            else:
                widths[i] = max(least, widths[i] - over)
    header = [c.title for c in columns]
    lines = [_laid_out(header, shown, widths, None, False)]
    for n, row in enumerate(rows):
        lines.append(_laid_out(row, shown, widths, styles[n] if styles else None, colour))
    return lines


def _laid_out(
    cells: Sequence[str],
    shown: Sequence[int],
    widths: Sequence[int],
    styles: Sequence[str | None] | None,
    colour: bool,
) -> str:
    out = []
    for k, i in enumerate(shown):
        text = cells[i] if len(cells[i]) <= widths[i] else cells[i][: max(widths[i] - 3, 0)] + "..."
        pad = "" if k == len(shown) - 1 else " " * (widths[i] - len(text))
        style = styles[i] if styles else None
        out.append((paint(text, style, colour) if style else text) + pad)
    return "  ".join(out).rstrip()


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
