"""JSON texts (kubectl -o json, topogen snapshots) load through the json module with the
same data as PyYAML's safe loader, or fall back to it where PyYAML reads them otherwise."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from topogen import yamlfast
from topogen.yamlfast import load_all_fast

LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

STRINGS = ["", "yes", "on", "0o17", "012", "1e3", "2001-12-14", "~", "null", "a: b", "- x",
           "#c", "tab\there", "line\nbreak", 'quote"s', "back\\slash", "sl/ash", "ünï", "日本",
           "🚀", "\x00nul", "\x1fus", "\u2028ls", "é" * 50]  # fmt: skip
NUMBERS = ["0", "-0", "7", "-12", "123456789012345678901234567890", "1.5", "-2.25", "1e5",
           "1E5", "1e+5", "1.0e5", "1.0e+5", "1.0E-5", "-0.0", "0.5e-3", "1.0e+400"]  # fmt: skip


def _tree(rng: random.Random, depth: int) -> Any:
    if depth == 0 or rng.random() < 0.3:
        return rng.choice([*STRINGS, 0, -3, 10**20, 0.25, True, False, None])
    if rng.random() < 0.5:
        return [_tree(rng, depth - 1) for _ in range(rng.randrange(0, 4))]
    return {rng.choice(STRINGS): _tree(rng, depth - 1) for _ in range(rng.randrange(0, 4))}


def _same(text: str) -> None:
    """The fast path gives what PyYAML gives; None (so PyYAML reports it) where PyYAML fails."""
    try:
        expected = list(yaml.load_all(text, Loader=LOADER))
    except yaml.YAMLError:  # e.g. an emoji written as an escaped surrogate pair
        assert load_all_fast(text) is None
        return
    fast = load_all_fast(text)
    assert fast is not None
    assert fast[0] == expected
    assert repr(fast[0]) == repr(expected)  # 1 vs 1.0, True vs 1


@pytest.mark.parametrize("seed", range(200))
def test_json_dumps_load_as_yaml_does(seed: int) -> None:
    rng = random.Random(seed)
    value = {"items": [_tree(rng, 5) for _ in range(3)]}
    for kwargs in ({}, {"indent": 2}, {"separators": (",", ":")}, {"ensure_ascii": False}):
        _same(json.dumps(value, **kwargs))  # type: ignore[arg-type]


@pytest.mark.parametrize("number", NUMBERS)
def test_numbers_resolve_as_plain_yaml_scalars(number: str) -> None:
    _same(f'{{"n": {number}, "l": [{number}]}}')


def test_comment_lines_before_the_json() -> None:
    text = "# topogen snapshot\n#\n\n" + json.dumps({"kind": "List", "items": []}, indent=2)
    _same(text)


def test_the_json_path_needs_no_yaml_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlfast, "_CParser", None)
    assert load_all_fast('{"a": [1, "b"]}') == ([{"a": [1, "b"]}], [False])
    assert load_all_fast("a: 1") is None  # YAML proper still goes to the C loader


@pytest.mark.parametrize(
    "text",
    [
        '{"x": "\\ud83d\\ude80"}',  # PyYAML rejects escaped surrogates
        '{"x": "del\x7f"}',  # and characters it does not print
        '{"x": "\ufffe"}',
        '{"a": 1}\n# trailing comment\n',  # YAML, not JSON
        '{"a": 1}\n---\n{"b": 2}\n',  # two documents
        "{a: 1}",  # a YAML flow mapping
        '{"a": NaN}',  # the json module would read NaN; YAML reads a string
    ],
)
def test_otherwise_the_yaml_loader_decides(text: str) -> None:
    try:
        expected: Any = list(yaml.load_all(text, Loader=LOADER))
    except yaml.YAMLError:
        expected = None
    fast = load_all_fast(text)
    if expected is None:
        assert fast is None  # the caller then loads with PyYAML, which says what is wrong
    else:
        assert fast is not None and fast[0] == expected


def test_snapshot_json_reads_back_as_the_same_data() -> None:
    from topogen.sources.live import json_yaml

    awkward = ["\u2028", "\u2029", "\x85", "\x7f", "\ufffe", "🚀", "é", "\x00", "yes", "1e5"]
    doc = {"items": [{"metadata": {"name": s, "labels": {s: s}}} for s in awkward]}
    text = "# header\n" + json_yaml(doc)
    assert yaml.load(text, Loader=LOADER) == doc  # any YAML reader: the same data
    fast = load_all_fast(text)
    assert fast is not None and fast[0] == [doc]
    assert "\\u2028" in text and "\u2028" not in text  # escaped, not raw
    assert "🚀" in text  # astral characters stay raw (escaped, they would be surrogates)


def test_files_read_as_text_mode_reads_them_and_parsed_once(tmp_path: Path) -> None:
    """iter_documents reads a file's bytes: CRLF and lone CR lines are read as text mode
    reads them (universal newlines), a file that is not UTF-8 is refused with its name,
    and a file read again (the same bytes) is not parsed again."""
    from topogen.errors import InputError
    from topogen.sources.yamlio import iter_documents

    body = "a: |\n  one\n  two\nb: [1, 2]\n---\nc: 3\n"
    expected = [({"a": "one\ntwo\n", "b": [1, 2]}, 0), ({"c": 3}, 1)]
    for name, newline in (("lf.yaml", "\n"), ("crlf.yaml", "\r\n"), ("cr.yaml", "\r")):
        path = tmp_path / name
        path.write_bytes(body.replace("\n", newline).encode("utf-8"))
        assert [(d.data, d.index) for d in iter_documents([path])] == expected, name
    again = tmp_path / "lf.yaml"
    first = next(iter_documents([again])).data
    assert next(iter_documents([again])).data is first
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8 text") as err:
        list(iter_documents([bad]))
    assert "latin1.yaml" in str(err.value.path)
