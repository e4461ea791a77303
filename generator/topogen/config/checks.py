"""Config: the fast reader's checks, one per kind of value of topogen.yaml.

Each check takes a value as yaml.safe_load gives it and returns what the pydantic model
(models.py) would hold for it, or raises Unsure: the value may be wrong, or right in a
way this reader does not follow (a bool spelt "yes", a non-ASCII pattern match, a float
where an integer goes), and the pydantic model then decides and words any error. So a
check may refuse more than the model does, never less, and never returns another value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

__all__ = [
    "BOOL",
    "Check",
    "Unsure",
    "either",
    "integer",
    "listof",
    "literal",
    "mapping",
    "number",
    "optional",
    "text",
]

Check = Callable[[Any], Any]


class Unsure(Exception):
    """The fast reader cannot vouch for a value: the pydantic model decides."""


def text(
    pattern: str | None = None,
    *,
    min_length: int = 0,
    max_length: int | None = None,
    any_text: bool = False,
    problem: Callable[[str], str | None] | None = None,
) -> Check:
    """A string of `min_length` to `max_length` characters that matches `pattern` (ASCII
    only unless `any_text`: the pattern's meaning is then the same in pydantic's regex
    engine and Python's) and of which `problem` says nothing."""

    def check(value: Any) -> Any:
        if type(value) is not str or len(value) < min_length:
            raise Unsure
        if max_length is not None and len(value) > max_length:
            raise Unsure
        if not any_text and not value.isascii():
            raise Unsure
        # fullmatch: pydantic's `$` is the end of the text, never before a final newline
        if pattern is not None and re.fullmatch(pattern, value) is None:
            raise Unsure
        if problem is not None and problem(value):
            raise Unsure
        return value

    return check


def _bool(value: Any) -> Any:
    if type(value) is not bool:
        raise Unsure
    return value


BOOL: Check = _bool


def literal(*choices: str) -> Check:
    def check(value: Any) -> Any:
        if type(value) is not str or value not in choices:
            raise Unsure
        return value

    return check


def integer(*, ge: int | None = None) -> Check:
    def check(value: Any) -> Any:
        if type(value) is not int or (ge is not None and value < ge):
            raise Unsure
        return value

    return check


def number(*, ge: float | None = None, le: float | None = None) -> Check:
    """A float, as pydantic makes one of an int or a float (a finite one, in bounds)."""

    def check(value: Any) -> Any:
        if type(value) not in (int, float):
            raise Unsure
        try:
            out = float(value)
        except OverflowError:
            raise Unsure from None
        if not math.isfinite(out) or (ge is not None and out < ge):
            raise Unsure
        if le is not None and out > le:
            raise Unsure
        return out

    return check


def optional(inner: Check) -> Check:
    def check(value: Any) -> Any:
        return None if value is None else inner(value)

    return check


def listof(item: Check, *, min_length: int = 0) -> Check:
    def check(value: Any) -> Any:
        if type(value) is not list or len(value) < min_length:
            raise Unsure
        return [item(v) for v in value]

    return check


def mapping(key: Check, value: Check, *, min_length: int = 0) -> Check:
    def check(data: Any) -> Any:
        if type(data) is not dict or len(data) < min_length:
            raise Unsure
        return {key(k): value(v) for k, v in data.items()}

    return check


def either(*checks: Check) -> Check:
    """The first check that vouches for the value (each accepts one Python type only, so
    pydantic's union picks the same member)."""

    def check(value: Any) -> Any:
        for inner in checks:
            try:
                return inner(value)
            except Unsure:
                continue
        raise Unsure

    return check
