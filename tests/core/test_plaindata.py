"""plaindata: the fast copy and YAML dump give what copy.deepcopy and yaml.dump give (with
strings quoted for every YAML reader: plaindata._Dumper)."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
import yaml

from topogen import plaindata
from topogen.plaindata import copy_plain, dump_yaml

DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
QUOTING: Any = plaindata._Dumper

# scalars whose quoting PyYAML decides: implicit types, indicators, unicode, blanks
AWKWARD = [
    "", " ", "yes", "No", "on", "null", "~", "true", "0o17", "017", "1_000", "0x1F", "1e3",
    ".inf", "-.nan", "2001-12-14", "12:30:00", "a: b", "- x", "#c", "&a", "*a", "!t", "%p",
    "@x", "`y", "'q'", '"d"', "{a}", "[b]", "x\ny", "line\n", "tab\there", " lead", "trail ",
    "ünïcødé", "日本", "emoji 🚀", "\x85next", "a" * 300, "k=v,w", "http://x/y?z#f", "|", ">",
]  # fmt: skip
SCALARS: list[Any] = [*AWKWARD, 0, -1, 7, 10**30, 0.5, -2.0, 1e17, 1e-7, float("inf"),
                      float("-inf"), float("nan"), True, False, None]  # fmt: skip


def _tree(rng: random.Random, depth: int) -> Any:
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(SCALARS)
    if rng.random() < 0.5:
        return [_tree(rng, depth - 1) for _ in range(rng.randrange(0, 4))]
    keys = rng.sample([s for s in AWKWARD if s] + ["name", "spec", "z", "A"], rng.randrange(0, 5))
    return {k: _tree(rng, depth - 1) for k in keys}


def _reference(value: Any) -> str:
    return yaml.dump(
        value, Dumper=QUOTING, sort_keys=True, default_flow_style=False, allow_unicode=True,
        width=10_000,
    )  # fmt: skip


@pytest.mark.parametrize("seed", range(300))
def test_dump_matches_yaml_dump(seed: int) -> None:
    value = _tree(random.Random(seed), 5)
    assert dump_yaml(value, width=10_000, allow_unicode=True) == _reference(value)


@pytest.mark.parametrize("value", [*SCALARS, {}, [], {"a": {}}, [[]], {1: "x", "1": "y"}])
def test_dump_matches_for_edge_values(value: Any) -> None:
    assert dump_yaml(value, width=10_000, allow_unicode=True) == _reference(value)


def test_narrow_width_and_ascii_match() -> None:
    value = {"msg": "word " * 40, "u": "ünï"}
    got = dump_yaml(value, width=40, allow_unicode=False)
    assert got == yaml.dump(value, Dumper=DUMPER, sort_keys=True, default_flow_style=False,
                            allow_unicode=False, width=40)  # fmt: skip
    assert "\\xFC" in got or "\\xfc" in got


def test_shared_containers_keep_pyyaml_anchors() -> None:
    shared = {"key": "v"}
    value = {"a": shared, "b": shared}
    got = dump_yaml(value, width=10_000, allow_unicode=True)
    assert got == _reference(value)
    assert "&id001" in got


def test_unsorted_keys_and_other_types_fall_back() -> None:
    mixed = {1: "a", "b": 2}  # int and str keys cannot be sorted together
    assert dump_yaml(mixed, width=10_000, allow_unicode=True) == _reference(mixed)
    with pytest.raises(yaml.representer.RepresenterError):
        dump_yaml({"x": object()}, width=10_000, allow_unicode=True)


def test_copy_plain_is_deep_and_equal() -> None:
    rng = random.Random(7)
    for _ in range(100):
        value = {"root": _tree(rng, 5), "list": [{"x": [1, {"y": None}]}]}
        got = copy_plain(value)
        assert got == copy.deepcopy(value)
        got["list"][0]["x"][1]["y"] = "changed"
        assert value["list"][0]["x"][1]["y"] is None
    other = {"s": {1, 2}}
    dup = copy_plain(other)
    assert dup == other and dup["s"] is not other["s"]


@pytest.mark.parametrize("seed", range(300))
def test_block_writer_matches_yaml_dump_where_it_writes(seed: int) -> None:
    """blockyaml writes most documents itself (the rest: None, dump_yaml's own path)."""
    from topogen.blockyaml import block_yaml

    value = _tree(random.Random(seed), 5)
    got = block_yaml(value, plaindata._node, QUOTING, plaindata.plain_as_is)
    assert got is None or got == _reference(value)


def test_block_writer_covers_a_policy_and_leaves_what_it_cannot() -> None:
    from topogen.blockyaml import block_yaml

    policy = {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "MutatingPolicy",
        "metadata": {"name": "pin", "labels": {"a": "1e3", "b": "yes", "": "x"}},
        "spec": {"rules": [{"match": ["a: b", "#c", [], {}], "n": [1, 0.5, None, True]}]},
        "list": [[["deep"]], {"k": [{"x": 1}]}],
    }
    assert block_yaml(policy, plaindata._node, QUOTING, plaindata.plain_as_is) == _reference(policy)
    for uncovered in ({"msg": "two\nlines"}, {"k" * 200: 1}, {1: "x"}, {}, "scalar"):
        assert block_yaml(uncovered, plaindata._node, QUOTING, plaindata.plain_as_is) is None
        assert dump_yaml(uncovered, width=10_000, allow_unicode=True) == _reference(uncovered)


LONG_WORDS = ["a", "bb", "x: y", "#h", "'q'", '"d"', "ünï", "日本", "{{ $x }}", "%q", "`b`", "yes"]


def _long_tree(rng: random.Random, depth: int) -> Any:
    """Trees whose strings are often long enough for PyYAML to wrap them (10,000 columns)."""
    if depth == 0 or rng.random() < 0.3:
        words = rng.choice([1, 5, 3000, 6000, 9000])
        return " ".join(rng.choice(LONG_WORDS) for _ in range(words))
    if rng.random() < 0.5:
        return [_long_tree(rng, depth - 1) for _ in range(rng.randrange(1, 3))]
    keys = ["k", "description", "a" * 50, "annotations"]
    return {
        f"{rng.choice(keys)}{i}": _long_tree(rng, depth - 1) for i in range(rng.randrange(1, 3))
    }


@pytest.mark.parametrize("seed", range(60))
def test_block_writer_writes_long_strings_where_they_stand(seed: int) -> None:
    """A string PyYAML wraps is written as PyYAML writes it at its column and indentation."""
    from topogen.blockyaml import block_yaml

    value = {"root": _long_tree(random.Random(seed), 5)}
    want = _reference(value)
    assert block_yaml(value, plaindata._node, QUOTING, plaindata.plain_as_is) == want


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def test_long_strings_wrap_in_the_reference() -> None:
    """The long strings above do wrap: no line of PyYAML's is as long as the longest."""
    wrapped = 0
    for seed in range(60):
        value = {"root": _long_tree(random.Random(seed), 5)}
        longest = max(len(s) for s in _strings(value))
        if longest > 12_000:
            assert max(len(line) for line in _reference(value).splitlines()) < longest
            wrapped += 1
    assert wrapped > 10


AS_IS_CANDIDATES = [
    "a", "name", "Yes", "yes", "no", "NO", "on", "Off", "true", "False", "null", "Null", "y",
    "N", "a.b", "a/b", "a-b", "a_b", "a-", "x.", "e1", "E5", "inf", "nan", "NaN", "x" * 100,
    "topology.kubernetes.io/zone", "us-east-1a", "v1", "Job", "a:b", "a b", "a#b", "1a",
    "_a", ".a", "-a", "a,b", "ü", "a b", "a  b", "a b ", " a", "yes no", "on off",
]  # fmt: skip


@pytest.mark.parametrize("seed", range(20))
def test_strings_written_as_they_are_are_what_pyyaml_writes(seed: int) -> None:
    """plain_as_is: PyYAML writes such a string as it is, as a value and as a key."""
    rng = random.Random(seed)
    alphabet = "aZyYnN_./-019eE:# "
    words = [*AS_IS_CANDIDATES]
    words += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 8))) for _ in range(300)]
    as_is = [w for w in words if plaindata.plain_as_is(w)]
    for w in as_is:
        assert yaml.dump([w], Dumper=QUOTING, width=10_000, allow_unicode=True) == f"- {w}\n"
        assert yaml.dump({w: None}, Dumper=QUOTING, width=10_000) == f"{w}: null\n"
    assert {"name", "us-east-1a", "a b", "a  b", "yes no"} <= set(as_is)
    assert not {
        "yes",
        "no",
        "on",
        "Off",
        "true",
        "null",
        "y",
        "N",
        "a:b",
        "1a",
        "a b ",
        " a",
    } & set(as_is)
