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

# every module of topogen imported with each dataclass method made twice, by the stock
# _create_fn and by the cached one (an in-memory cache, first a compile, then a hit)
_SAME_METHODS = """
import dataclasses, importlib, pkgutil
stock = dataclasses._create_fn
made = []

def both(name, args, body, *, globals=None, locals=None, return_type=dataclasses.MISSING):
    fns = []
    for make in (stock, cached, cached):
        fns.append(make(name, list(args), list(body), globals=globals,
                        locals=dict(locals or {}), return_type=return_type))
    a = fns[0]
    for b in fns[1:]:
        assert a.__code__ == b.__code__, name
        assert a.__annotations__ == b.__annotations__, name
        assert a.__defaults__ == b.__defaults__ and a.__kwdefaults__ == b.__kwdefaults__
        assert a.__globals__ is b.__globals__ and a.__name__ == b.__name__
        cells = [c.cell_contents for c in a.__closure__ or ()]
        assert all(x is c.cell_contents for x, c in zip(cells, b.__closure__ or (), strict=True))
    made.append(name)
    return a

dataclasses._create_fn = both  # before topogen: its install() then leaves this one alone
from topogen import codecache
assert dataclasses._create_fn is both
cached = codecache._cached_create_fn(codecache._CodeCache(None))
import topogen
for m in pkgutil.walk_packages(topogen.__path__, "topogen."):
    importlib.import_module(m.name)
print(len(made), len(set(made)))
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
    made, names = (int(n) for n in out.stdout.split())
    assert made > 500 and names >= 6  # __init__, __repr__, __eq__, __hash__, __setattr__ ...
    assert not (tmp_path / "topogen").exists()  # an in-memory cache writes nothing


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="dataclasses compile another way")
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
