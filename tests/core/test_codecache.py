"""Start-up: compiled code kept between runs (topogen/codecache.py, topogen/templatecache.py)
changes nothing but the time: every dataclass method made from the cache is the one a
compile makes, a command's output is the same with an empty, a warm, a damaged or an
unwritable cache, and the cache is written only in its folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "examples" / "zone-split" / "topogen.yaml"

# every module of topogen imported with each dataclass's methods made from their text
# twice more, from the cached code (an in-memory cache: first a compile, then a hit), and
# compared with what the builtin exec made of the text
_SAME_METHODS = """
import builtins, dataclasses, importlib, pkgutil
made = []

def both(source, globals=None, ns=None, /):
    builtins.exec(source, globals, ns)
    for _ in range(2):
        again = {}
        cached(source, globals, again)
        assert again.keys() == ns.keys(), source
        for name, fn in ns.items():
            other = again[name]
            assert fn.__code__ == other.__code__, source
            assert fn.__globals__ is other.__globals__ and fn.__name__ == other.__name__
            assert fn.__defaults__ == other.__defaults__, source
    made.append(source)

dataclasses.exec = both  # before topogen: its install() then leaves this one alone
from topogen import codecache
assert dataclasses.exec is both
cached = codecache._cached_exec(codecache._CodeCache(None))
import topogen
for m in pkgutil.walk_packages(topogen.__path__, "topogen."):
    importlib.import_module(m.name)
print(len(made), len({s.split("(", 1)[0] for s in made}))
"""


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "XDG_CACHE_HOME": str(cache)}


def _run(args: list[str], cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "topogen", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(cache),
        cwd=REPO,
    )


def test_every_dataclass_method_from_the_cache_is_the_compiled_one(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _SAME_METHODS],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(tmp_path),
        check=True,
    )
    made, kinds = (int(n) for n in out.stdout.split())
    assert made > 300 and kinds >= 1  # every dataclass of topogen, each method or class
    assert not (tmp_path / "topogen").exists()  # an in-memory cache writes nothing


def test_a_command_writes_the_cache_once_and_reads_it_after(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _run(["render", "--stdout", "-c", str(CONFIG)], cache)
    files = sorted(p for p in cache.rglob("*") if p.is_file())
    assert [p.parent.name for p in files].count("templates") >= 5
    dataclass_code = [p for p in files if p.name.startswith("dataclasses-")]
    assert len(dataclass_code) == 1
    written = {p: p.stat().st_mtime_ns for p in files}
    second = _run(["render", "--stdout", "-c", str(CONFIG)], cache)
    assert (second.returncode, second.stdout, second.stderr) == (
        first.returncode,
        first.stdout,
        first.stderr,
    )
    assert {p: p.stat().st_mtime_ns for p in files} == written  # hits: nothing rewritten
    assert not [p for p in cache.rglob(".tmp-*")]
    assert {p.relative_to(cache).parts[0] for p in cache.rglob("*")} == {"topogen"}


@pytest.mark.parametrize("command", [["analyze"], ["render", "--stdout"]])
def test_output_is_the_same_whatever_the_cache(tmp_path: Path, command: list[str]) -> None:
    args = [*command, "-c", str(CONFIG)]
    cold = _run(args, tmp_path / "a")
    warm = _run(args, tmp_path / "a")
    damaged_root = tmp_path / "b"
    _run(args, damaged_root)
    for p in damaged_root.rglob("*"):
        if p.is_file():
            p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2])
    damaged = _run(args, damaged_root)
    unwritable = tmp_path / "file"
    unwritable.write_text("not a folder", encoding="utf-8")
    nowhere = _run(args, unwritable)
    for other in (warm, damaged, nowhere):
        assert (other.returncode, other.stdout, other.stderr) == (
            cold.returncode,
            cold.stdout,
            cold.stderr,
        )
    assert cold.returncode in (0, 1) and cold.stdout
