"""Start-up: the compiled code of topogen's own modules, kept in one file in the user's
cache folder (packfile.cache_root(), a file per Python version and copy of topogen),
mapped into memory.

A command imports 100 to 150 of topogen's modules, and Python finds each on its own: a
stat of the source, then the .pyc looked up, opened, read and checked. Here the first
run that imports a module keeps its code object (what Python's own loader gives: the
.pyc's, else compiled from the source) and writes it at exit beside the others'; later
runs map that one file and unmarshal the code of each module they import from it (a
render of the smallest example: about 5 ms less CPU, in paired runs).

Kept code runs only while its source has the size and modification time it had when
kept (a .pyc's own rule) and lies where Python's path finder would find the module (two
copies never run each other's code); else the module is imported as Python would
import it, and kept anew. Modules run from here have the attributes Python's loader gives
(__file__, __path__, __spec__; tests/core/test_modulecache.py compares them). A file
that cannot be read or written is skipped; TOPOGEN_MODULE_CACHE=0 turns it off. Another
copy's file (a checkout, an install) is its own, and goes when not written for 30 days.
"""

from __future__ import annotations

import atexit
import contextlib
import marshal
import os
import sys
import time
from binascii import crc32  # loaded already (click, yaml): zlib is not
from importlib.machinery import ModuleSpec, PathFinder, SourceFileLoader
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

from topogen.packfile import Pack, cache_root, write_pack

__all__ = ["install"]

_MAGIC = b"topogen-modules-2\n"  # the file's format (Python's version: in its name)
_PREFIX = "modules-"  # the files' names: modules-<python>-<the copy's folder>.marshal
_MAX_AGE = 30 * 24 * 3600  # seconds: another copy's file not written for this long goes

# a module's meta in the file (packfile.Pack): its source's path, whether it is a package,
# the source's mtime_ns and size when kept
Meta = tuple[str, bool, int, int]


class _ModuleCache:
    """A finder and loader on sys.meta_path for topogen's modules."""

    def __init__(self, file: Path | None, prefix: str = "topogen.") -> None:
        self.file = file
        self.prefix = prefix  # the names it finds: a package's submodules
        self.pack = Pack(file, _MAGIC)  # mapped: a module's code is read when run
        self.entries: dict[str, Meta] = {
            n: m for n, (m, _, _) in self.pack.index.items() if _is_meta(m)
        }
        self.codes: dict[str, CodeType] = {}  # of the modules run from here
        # found anew this run (written at exit), with their code's bytes
        self.kept: dict[str, tuple[Meta, bytes]] = {}
        self._fresh: dict[str, tuple[SourceFileLoader, str, bool, int, int]] = {}

    # --- finder ----------------------------------------------------------------------

    def find_spec(
        self, name: str, path: Any = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if not name.startswith(self.prefix):
            return None
        entry = self.entries.get(name)
        if (
            entry is not None
            and _where(name, path) == _place(entry[0], entry[1])
            and _unchanged(entry[0], entry[2], entry[3])
        ):
            return self._spec(name, entry[0], entry[1])
        spec = PathFinder.find_spec(name, path, target)
        if spec is None or type(spec.loader) is not SourceFileLoader or not spec.origin:
            return spec  # not one of ours to keep (Python imports it as ever)
        try:
            st = os.stat(spec.origin)
        except OSError:
            return spec
        package = spec.submodule_search_locations is not None
        self._fresh[name] = (spec.loader, spec.origin, package, st.st_mtime_ns, st.st_size)
        return self._spec(name, spec.origin, package)

    def _spec(self, name: str, origin: str, package: bool) -> ModuleSpec:
        loader: Any = self  # a loader by its methods (importlib.abc costs imports)
        spec = ModuleSpec(name, loader, origin=origin, is_package=package)
        spec.has_location = True  # __file__ is the source, as Python's loader sets it
        if package:
            spec.submodule_search_locations = [os.path.dirname(origin)]
        return spec

    # --- loader ----------------------------------------------------------------------

    def create_module(self, spec: ModuleSpec) -> None:
        return None  # the default module object

    def exec_module(self, module: ModuleType) -> None:
        exec(self.get_code(module.__name__), module.__dict__)

    def get_code(self, name: str) -> CodeType:
        """The module's code (runpy asks for it to run topogen.__main__)."""
        code = self.codes.get(name)
        if code is not None:
            return code
        fresh = self._fresh.pop(name, None)
        if fresh is not None:
            loader, origin, package, mtime, size = fresh
            code = loader.get_code(name)  # the .pyc's, or compiled from the source
            if code is not None:
                self.kept[name] = ((origin, package, mtime, size), marshal.dumps(code))
        else:
            origin, code = self.entries[name][0], _code(self.pack.bytes(name))
            if code is None:  # a damaged entry: Python's own way
                code = SourceFileLoader(name, origin).get_code(name)
        if code is None:
            raise ImportError(f"no code for module {name}", name=name)
        self.codes[name] = code
        return code

    def is_package(self, name: str) -> bool:
        kept = self.kept.get(name)
        meta = kept[0] if kept is not None else self.entries.get(name)
        return meta is not None and meta[1]

    # --- the file --------------------------------------------------------------------

    def save(self) -> None:
        """The kept code, with what this run found anew (only then: most runs write nothing)."""
        if not self.kept or self.file is None:
            return
        items = {
            n: (m, bytes(self.pack.bytes(n)))
            for n, m in self.entries.items()
            if n not in self.kept and _unchanged(m[0], m[2], m[3])
        }
        items.update(self.kept)
        write_pack(self.file, _MAGIC, items)
        _forget_old(self.file)


def _where(name: str, path: Any) -> str | None:
    """The folder a submodule of a regular package is found in (its package's one
    __path__ entry); None for anything else (found by Python's path finder)."""
    if not isinstance(path, list) or len(path) != 1 or not isinstance(path[0], str):
        return None
    return os.path.join(path[0], name.rpartition(".")[2])


def _place(origin: str, package: bool) -> str:
    """The kept source's folder and name, as _where gives them (a package: its folder)."""
    return os.path.dirname(origin) if package else os.path.splitext(origin)[0]


def _code(data: bytes) -> CodeType | None:
    try:
        code = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    return code if type(code) is CodeType else None


def _unchanged(path: str, mtime: int, size: int) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return st.st_mtime_ns == mtime and st.st_size == size


def _is_meta(m: object) -> bool:
    return (
        type(m) is tuple
        and len(m) == 4
        and type(m[0]) is str
        and type(m[1]) is bool
        and type(m[2]) is int
        and type(m[3]) is int
    )


def install() -> None:
    """Put the module cache first on sys.meta_path (once a process)."""
    if os.environ.get("TOPOGEN_MODULE_CACHE") == "0":
        return
    if any(type(f) is _ModuleCache for f in sys.meta_path):
        return
    root = cache_root()
    if root is None:  # no cache folder: nothing to keep the code in
        return
    cache = _ModuleCache(root / _file_name())
    sys.meta_path.insert(0, cache)
    atexit.register(cache.save)


def _file_name() -> str:
    """The file for this Python and this copy of topogen (a checkout, an install): each
    its own, so that runs of two copies do not take turns rewriting one file."""
    where = os.path.dirname(os.path.abspath(__file__)).encode()
    copy = crc32(where)
    return f"{_PREFIX}{sys.implementation.cache_tag}-{sys.hexversion:x}-{copy:08x}.marshal"


def _forget_old(keep: Path) -> None:
    """Other copies' files not written for _MAX_AGE: removed (a copy gone, a bench's)."""
    now = time.time()
    with contextlib.suppress(OSError), os.scandir(keep.parent) as found:
        for e in found:
            if e.name.startswith(_PREFIX) and e.name.endswith(".marshal") and e.path != str(keep):
                with contextlib.suppress(OSError):
                    if now - e.stat().st_mtime > _MAX_AGE:
                        os.unlink(e.path)
