"""topogen.jsontext.dumps_indented writes what json.dumps(indent=2, sort_keys=True) writes,
and raises what it raises."""

from __future__ import annotations

import enum
import json
import random
from collections import OrderedDict
from typing import Any

import pytest

from topogen.jsontext import dumps_indented


class Kind(enum.StrEnum):
    OK = "ok"


class Level(enum.IntEnum):
    HIGH = 3


class Text(str):
    pass


TRICKY: list[Any] = [
    {},
    [],
    (),
    "",
    None,
    True,
    False,
    0,
    -7,
    10**40,
    0.1,
    -0.0,
    1e300,
    float("nan"),
    float("inf"),
    float("-inf"),
    {"b": [], "a": {}, "c": [{}], "d": [[]]},
    {"z": (1, (2, ())), "y": [None, True, False, 1.5]},
    {"é": "naïve", "emoji": "\U0001f680", "sep": "\u2028\u0085", "ctl": "\x00\x1f\x7f"},
    {"quote": '"\\/', "tab": "\t\n\r\b\f"},
    {"kind": Kind.OK, "level": Level.HIGH, "text": Text("sub")},
    [Kind.OK, Level.HIGH, Text("x"), True, 1, 1.0],
    OrderedDict([("b", 1), ("a", 2)]),
    {Text("sub-key"): 1, "a": 2},  # a str subclass as a key
    {1: "int key", 2: "two"},  # keys json converts
    {1.5: 3, 0.5: 4},
    {True: 1, False: 2},
    {"nested": {"deeper": {"deepest": [1, {"x": "y"}]}}},
]


@pytest.mark.parametrize("ensure_ascii", [True, False])
@pytest.mark.parametrize("value", TRICKY, ids=lambda v: repr(v)[:40])
def test_tricky_values_as_json_writes_them(value: Any, ensure_ascii: bool) -> None:
    want = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=ensure_ascii)
    assert dumps_indented(value, ensure_ascii=ensure_ascii) == want


def _random_value(rng: random.Random, depth: int) -> Any:
    pick = rng.randrange(10 if depth < 5 else 6)
    if pick == 0:
        return rng.choice([None, True, False])
    if pick == 1:
        return rng.randint(-(10**12), 10**12)
    if pick == 2:
        return rng.choice([rng.uniform(-1e6, 1e6), 1e-7, 2.5e20, -0.0])
    if pick in (3, 4, 5):
        return "".join(
            rng.choice('ab Z09"\\\n\té\u2028\U0001f680') for _ in range(rng.randrange(6))
        )
    if pick in (6, 7):
        items = [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
        return tuple(items) if rng.random() < 0.3 else items
    keys = ["".join(rng.choice("abcXYZ_é") for _ in range(rng.randrange(1, 4))) for _ in range(4)]
    return {k: _random_value(rng, depth + 1) for k in keys[: rng.randrange(5)]}


@pytest.mark.parametrize("seed", range(5))
def test_random_documents_as_json_writes_them(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(400):
        value = _random_value(rng, 0)
        for ascii_only in (True, False):
            want = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=ascii_only)
            assert dumps_indented(value, ensure_ascii=ascii_only) == want


def test_errors_are_the_json_modules() -> None:
    circular: list[Any] = []
    circular.append(circular)
    for bad, error in (
        ({"a": {1, 2}}, TypeError),  # a set
        ({"a": 1, 2: "b"}, TypeError),  # keys that do not sort
        ({None: 1, True: 2}, TypeError),
        ([object()], TypeError),
        (circular, ValueError),
    ):
        with pytest.raises(error) as want:
            json.dumps(bad, indent=2, sort_keys=True)
        with pytest.raises(error) as got:
            dumps_indented(bad)
        assert str(got.value) == str(want.value)


def test_the_analysis_json_is_written_with_it() -> None:
    from topogen.pipeline import format as analysis_format

    assert analysis_format.dumps_indented is dumps_indented
