"""Start-up: topogen's modules' code kept in one file (topogen/modulecache.py) changes
nothing but the time: a module run from it is the one Python's own import gives (same
code, same attributes), a source that changed is imported anew, a damaged file or
another checkout's code is never run, and a command's output is the same either way."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from topogen import modulecache

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "examples" / "zone-split" / "topogen.yaml"
PKG = "mcache_pkg"


def _package(root: Path, value: int = 1) -> Path:
    """A package with a subpackage and modules, one importing another, under root."""
    pkg = root / PKG
    (pkg / "sub").mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text('"""the package"""\n')
    (pkg / "sub" / "__init__.py").write_text("KIND = 'sub'\n")
    (pkg / "sub" / "leaf.py").write_text(f"from {PKG}.other import VALUE\nDOUBLE = VALUE * 2\n")
    (pkg / "other.py").write_text(f'"""other"""\nVALUE = {value}\n')
    return pkg


@pytest.fixture
def fresh_imports() -> Iterator[list[modulecache._ModuleCache]]:
    """Caches put on sys.meta_path by the test, and the package's modules, gone after."""
    added: list[modulecache._ModuleCache] = []
    path = list(sys.path)
    yield added
    for cache in added:
        sys.meta_path.remove(cache)
    sys.path[:] = path
    for name in [n for n in sys.modules if n == PKG or n.startswith(PKG + ".")]:
        del sys.modules[name]
    importlib.invalidate_caches()


def _import(root: Path, file: Path, added: list[modulecache._ModuleCache]) -> dict[str, object]:
    """The package's modules imported through a module cache of `file`, written back."""
    for name in [n for n in sys.modules if n == PKG or n.startswith(PKG + ".")]:
        del sys.modules[name]
    importlib.invalidate_caches()
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    cache = modulecache._ModuleCache(file, prefix=PKG + ".")
    sys.meta_path.insert(0, cache)
    added.append(cache)
    importlib.import_module(PKG)
    leaf = importlib.import_module(f"{PKG}.sub.leaf")
    cache.save()
    mods = {n: sys.modules[n] for n in (PKG, f"{PKG}.sub", f"{PKG}.sub.leaf", f"{PKG}.other")}
    return {"cache": cache, "mods": mods, "double": leaf.DOUBLE}


def _attrs(module: object) -> tuple[object, ...]:
    spec = module.__spec__  # type: ignore[attr-defined]
    return (
        module.__name__,  # type: ignore[attr-defined]
        module.__file__,  # type: ignore[attr-defined]
        module.__package__,  # type: ignore[attr-defined]
        getattr(module, "__path__", None),
        module.__doc__,
        spec.origin,
        spec.submodule_search_locations,
        spec.parent,
    )


def test_a_module_run_from_the_cache_is_the_one_python_imports(
    tmp_path: Path, fresh_imports: list[modulecache._ModuleCache]
) -> None:
    root, file = tmp_path / "src", tmp_path / "cache" / "modules.marshal"
    _package(root)
    first = _import(root, file, fresh_imports)
    assert set(first["cache"].kept) == {f"{PKG}.sub", f"{PKG}.sub.leaf", f"{PKG}.other"}  # type: ignore[attr-defined]
    assert file.exists()
    second = _import(root, file, fresh_imports)
    assert not second["cache"].kept  # type: ignore[attr-defined]  # all run from the file
    for name, module in second["mods"].items():  # type: ignore[attr-defined]
        if name == PKG:
            continue  # the package itself: Python's own import (the cache finds submodules)
        assert module.__spec__.loader is second["cache"]
        assert _attrs(module) == _attrs(first["mods"][name])  # type: ignore[index]
        source = Path(module.__file__).read_text()
        expected = compile(source, module.__file__, "exec", dont_inherit=True)
        assert second["cache"].get_code(name) == expected  # type: ignore[attr-defined]
    assert second["double"] == 2
    # and as Python's own import gives them
    for cache in list(fresh_imports):
        sys.meta_path.remove(cache)
        fresh_imports.remove(cache)
    for name in [n for n in sys.modules if n.startswith(PKG)]:
        del sys.modules[name]
    plain = importlib.import_module(f"{PKG}.sub.leaf")
    assert type(plain.__spec__.loader).__name__ == "SourceFileLoader"
    assert _attrs(plain) == _attrs(second["mods"][f"{PKG}.sub.leaf"])  # type: ignore[index]


def test_a_changed_source_is_imported_anew(
    tmp_path: Path, fresh_imports: list[modulecache._ModuleCache]
) -> None:
    root, file = tmp_path / "src", tmp_path / "modules.marshal"
    _package(root, value=1)
    assert _import(root, file, fresh_imports)["double"] == 2
    other = root / PKG / "other.py"
    stat = other.stat()
    other.write_text('"""other"""\nVALUE = 7\n')  # one byte changed, size the same
    os.utime(other, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    again = _import(root, file, fresh_imports)
    assert again["double"] == 14
    assert set(again["cache"].kept) == {f"{PKG}.other"}  # type: ignore[attr-defined]
    assert _import(root, file, fresh_imports)["double"] == 14  # kept anew


def test_another_checkouts_code_is_never_run(
    tmp_path: Path, fresh_imports: list[modulecache._ModuleCache]
) -> None:
    """One cache file, two copies of the package (the same names): each runs its own."""
    file = tmp_path / "modules.marshal"
    _package(tmp_path / "a", value=1)
    _package(tmp_path / "b", value=5)
    assert _import(tmp_path / "a", file, fresh_imports)["double"] == 2
    sys.path.remove(str(tmp_path / "a"))
    assert _import(tmp_path / "b", file, fresh_imports)["double"] == 10


@pytest.mark.parametrize(
    "damage",
    [b"", b"garbage", b"topogen-modules-1\n" + b"\xff" * 8, "truncated", "code"],
)
def test_a_damaged_file_is_not_run(
    tmp_path: Path, fresh_imports: list[modulecache._ModuleCache], damage: bytes | str
) -> None:
    root, file = tmp_path / "src", tmp_path / "modules.marshal"
    _package(root)
    _import(root, file, fresh_imports)
    data = file.read_bytes()
    if damage == "truncated":
        file.write_bytes(data[: len(data) - 40])
    elif damage == "code":  # the index intact, every module's code overwritten
        at = len(modulecache._MAGIC)
        head = at + 8 + int.from_bytes(data[at : at + 8], "little")
        file.write_bytes(data[:head] + b"\x00" * (len(data) - head))
    else:
        assert isinstance(damage, bytes)
        file.write_bytes(damage)
    assert _import(root, file, fresh_imports)["double"] == 2


def _topogen(args: list[str], cache_home: Path, env: dict[str, str]) -> str:
    run = subprocess.run(
        [sys.executable, "-m", "topogen", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_CACHE_HOME": str(cache_home), **env},
        check=False,
    )
    assert run.returncode in (0, 1), run.stderr
    return run.stdout + run.stderr


def test_a_commands_output_is_the_same_with_or_without_the_cache(tmp_path: Path) -> None:
    args = ["render", "-c", str(CONFIG), "--stdout"]
    off = _topogen(args, tmp_path / "off", {"TOPOGEN_MODULE_CACHE": "0"})
    assert not list((tmp_path / "off").rglob("modules-*"))
    cold = _topogen(args, tmp_path / "on", {})
    (kept,) = (tmp_path / "on").rglob("modules-*")
    written = kept.stat().st_mtime_ns
    warm = _topogen(args, tmp_path / "on", {})
    assert off == cold == warm
    assert kept.stat().st_mtime_ns == written  # nothing new: not written again
    probe = (
        "import sys, topogen.pipeline.render as r; from topogen import modulecache as m;"
        "print(type(r.__spec__.loader) is m._ModuleCache)"
    )
    used = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "on")},
        check=True,
    )
    assert used.stdout.strip() == "True"


def test_each_copy_has_its_own_file_and_old_ones_go(
    tmp_path: Path, fresh_imports: list[modulecache._ModuleCache]
) -> None:
    """Two copies of topogen never share a file (they would take turns rewriting it);
    another copy's file not written for 30 days goes when this one's is written."""
    name = modulecache._file_name()
    assert name.startswith("modules-") and name.endswith(".marshal")
    folder = tmp_path / "cache"
    folder.mkdir()
    old, recent = folder / "modules-old.marshal", folder / "modules-recent.marshal"
    for f in (old, recent):
        f.write_bytes(b"x")
    os.utime(old, (0, 0))
    _package(tmp_path / "src")
    _import(tmp_path / "src", folder / name, fresh_imports)  # keeps the package: written
    assert sorted(p.name for p in folder.iterdir()) == sorted([name, recent.name])
