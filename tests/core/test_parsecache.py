"""parsecache.py: a large input file parsed once is loaded, type for type, from the user's
cache folder on the next run; a damaged entry, a parse error, a value marshal cannot hold
and a small file are parsed as before."""

from __future__ import annotations

import datetime
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from topogen import parsecache
from topogen.config import load_config
from topogen.errors import InputError
from topogen.pipeline import inputs
from topogen.pipeline.analyze import analyze
from topogen.pipeline.format import analysis_json
from topogen.sources import yamlio

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import fleet


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache folder, and no file remembered in memory."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("TOPOGEN_PARSE_CACHE", raising=False)
    yamlio._PARSED.clear()
    return tmp_path / "cache" / "topogen" / "parsed"


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the parser itself read (not loaded from an entry)."""
    seen: list[str] = []
    real = yamlio.load_yaml_bytes

    def counted(raw: bytes, path: str) -> list[Any]:
        seen.append(path)
        return real(raw, path)

    monkeypatch.setattr(yamlio, "load_yaml_bytes", counted)
    return seen


def _read(path: Path) -> list[Any]:
    yamlio._PARSED.clear()  # as a new run: nothing remembered in memory
    return [d.data for d in yamlio.iter_documents([path])]


def _parsed_each_time(path: Path, parses: list[str], cache: Path) -> list[Any]:
    """Two reads of the file, each parsed, nothing kept; the first read's documents."""
    first = _read(path)
    _read(path)
    assert len(parses) == 2
    assert not cache.exists() or not list(cache.iterdir())
    return first


def _same(a: Any, b: Any) -> None:
    """Equal, and of the same type at every level (1, 1.0 and True are equal in Python)."""
    assert type(a) is type(b), (a, b)
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(k, next(x for x in b if x == k))
            _same(a[k], b[k])
    elif isinstance(a, list | tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    else:
        assert a == b or (a != a and b != b), (a, b)  # NaN


# every kind of scalar the resolver reads, nested, with anchors and aliases, many times
# over: a file over parsecache.MIN_BYTES
YAML_DOC = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm-{i}
  labels: &labels {{app: train, tier: "{i}", "yes": yes, on: off, n: ~}}
data:
  ints: [0, -7, 0o17, 0x1f, 1_000, 123456789012345678901234567890]
  floats: [1.5, -0.0, .inf, -.inf, .nan, 6.02e+23, 1_0.5]
  strings: ["0755", '12:30', "true", "", plain words, "é ü 中"]
  block: |
    line one
    line two
  folded: >
    folded
    text
  again: *labels
  empty: {{}}
  none: []
"""


def _yaml_file(tmp_path: Path, body: str = YAML_DOC, name: str = "big.yaml") -> Path:
    text = "---\n".join(body.format(i=i) for i in range(600))
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert path.stat().st_size >= parsecache.MIN_BYTES
    return path


def test_an_unchanged_large_file_is_loaded_type_for_type(
    tmp_path: Path, cache: Path, parses: list[str]
) -> None:
    path = _yaml_file(tmp_path)
    first = _read(path)
    assert len(parses) == 1 and len(list(cache.iterdir())) == 1
    again = _read(path)
    assert len(parses) == 1  # not parsed again
    _same(first, again)
    nan = again[0]["data"]["floats"][4]
    assert nan != nan
    assert again[0]["metadata"]["labels"]["yes"] is True
    assert again[0]["data"]["ints"][-1] == 123456789012345678901234567890


def test_a_json_snapshot_is_kept_too(tmp_path: Path, cache: Path, parses: list[str]) -> None:
    path = tmp_path / "snapshot.json"
    items = ",".join(
        f'{{"kind":"Node","metadata":{{"name":"n{i}","labels":{{"zone":"a{i % 3}"}}}},'
        f'"status":{{"capacity":{{"cpu":"8","nvidia.com/gpu":{i % 9}}}}},"x":1e400}}'
        for i in range(4000)
    )
    path.write_text(f'{{"kind":"List","items":[{items}]}}', encoding="utf-8")
    first = _read(path)
    again = _read(path)
    assert len(parses) == 1
    _same(first, again)


def test_the_same_bytes_elsewhere_are_the_same_entry(
    tmp_path: Path, cache: Path, parses: list[str]
) -> None:
    path = _yaml_file(tmp_path)
    other = tmp_path / "moved"
    other.mkdir()
    copy = other / "renamed.yaml"
    copy.write_bytes(path.read_bytes())
    _same(_read(path), _read(copy))
    assert len(parses) == 1


def test_changed_bytes_are_parsed(tmp_path: Path, cache: Path, parses: list[str]) -> None:
    path = _yaml_file(tmp_path)
    _read(path)
    path.write_text(path.read_text(encoding="utf-8").replace("cm-7\n", "cm-seven\n"), "utf-8")
    changed = _read(path)
    assert len(parses) == 2
    assert changed[7]["metadata"]["name"] == "cm-seven"


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "magic"])
def test_a_damaged_entry_is_ignored(
    tmp_path: Path, cache: Path, parses: list[str], damage: str
) -> None:
    path = _yaml_file(tmp_path)
    first = _read(path)
    (entry,) = cache.iterdir()
    data = bytearray(entry.read_bytes())
    if damage == "flip":  # one character of a name: still a valid marshal payload
        at = data.index(b"cm-300")
        data[at + 5] ^= 0x01
    elif damage == "truncate":
        del data[len(data) // 3 :]
    elif damage == "empty":
        data.clear()
    else:
        data[0:3] = b"xyz"
    entry.write_bytes(bytes(data))
    again = _read(path)
    assert len(parses) == 2  # parsed again, and kept again
    _same(first, again)
    _same(_read(path), first)
    assert len(parses) == 2


def test_a_parse_error_is_never_kept(tmp_path: Path, cache: Path, parses: list[str]) -> None:
    path = _yaml_file(tmp_path)
    path.write_text(path.read_text(encoding="utf-8") + "kind: [unclosed\n", encoding="utf-8")
    for _ in range(2):
        with pytest.raises(InputError) as err:
            _read(path)
        assert "big.yaml" in str(err.value)
    assert len(parses) == 2
    assert not cache.exists() or not list(cache.iterdir())


def test_values_marshal_cannot_hold_are_parsed_each_time(
    tmp_path: Path, cache: Path, parses: list[str]
) -> None:
    path = _yaml_file(tmp_path, YAML_DOC + "  when: 2001-12-14\n")
    first = _parsed_each_time(path, parses, cache)
    assert first[0]["data"]["when"] == datetime.date(2001, 12, 14)


def test_small_files_are_not_kept(tmp_path: Path, cache: Path, parses: list[str]) -> None:
    path = tmp_path / "small.yaml"
    path.write_text(YAML_DOC.format(i=0), encoding="utf-8")
    _parsed_each_time(path, parses, cache)
    assert not cache.exists()


def test_it_can_be_turned_off(
    tmp_path: Path, cache: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOPOGEN_PARSE_CACHE", "0")
    _parsed_each_time(_yaml_file(tmp_path), parses, cache)
    assert not cache.exists()


def test_an_unwritable_cache_is_skipped(
    tmp_path: Path, cache: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    path = _yaml_file(tmp_path)
    _same(_read(path), _read(path))
    assert len(parses) == 2


def test_the_least_recently_used_entries_go_first(
    tmp_path: Path, cache: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parsecache, "MAX_ENTRIES", 2)
    files = [
        _yaml_file(tmp_path, YAML_DOC.replace("cm-", f"f{k}-"), f"f{k}.yaml") for k in range(3)
    ]
    _read(files[0])
    _read(files[1])
    old = os.stat(next(cache.iterdir())).st_mtime_ns - 10**9
    for entry in cache.iterdir():  # both older than what comes next
        os.utime(entry, ns=(old, old))
    _read(files[0])  # used again: now the most recent
    _read(files[2])  # a third entry: files[1]'s, the least recently used, goes
    assert len(list(cache.iterdir())) == 2
    _read(files[0])
    _read(files[2])
    assert len(parses) == 3
    _read(files[1])
    assert len(parses) == 4


def test_a_fleet_analysis_is_the_same_from_kept_parses(
    tmp_path: Path, cache: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole report: kept by a run that reads the workloads in a forked copy, loaded by
    one that reads everything in this process."""
    fleet.write_fleet(fleet.FleetSpec("k", 300, 6, 300, 40, seed=9), tmp_path / "fleet")
    config = tmp_path / "fleet" / "snapshot" / "topogen.yaml"
    big = [p for p in config.parent.iterdir() if p.stat().st_size >= parsecache.MIN_BYTES]
    assert big
    monkeypatch.setenv("TOPOGEN_JOBS", "2")
    monkeypatch.setattr(inputs, "MIN_INPUT_BYTES", 0)
    cold = analysis_json(analyze(load_config(config)))
    assert len(list(cache.iterdir())) == len(big)
    yamlio._PARSED.clear()
    monkeypatch.setenv("TOPOGEN_JOBS", "1")
    parsed = len(parses)
    warm = analysis_json(analyze(load_config(config)))
    assert warm == cold
    assert {Path(p).name for p in parses[parsed:]}.isdisjoint(p.name for p in big)
