"""Start-up: compiled code kept between runs in the user's cache folder
($XDG_CACHE_HOME/topogen, else ~/.cache/topogen).

Every frozen dataclass has its __init__, __repr__, __eq__, __hash__, __setattr__ and
__delattr__ written as source text and compiled when its module is imported: for the
hundred dataclasses of a command, that compiling was most of topogen's own start-up.
The text of each method depends only on the class's fields and options, so its compiled
code is kept, keyed by the text's hash (and the file by Python's bytecode version), and
the next run executes the same code without compiling it: the functions made are those
a compile gives (tests/core/test_codecache.py compares them). A cache that cannot be
read or written is skipped; an interpreter whose dataclasses build methods some other
way (Python 3.13 and later) is left alone.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import marshal
import os
import sys
from pathlib import Path
from types import CodeType
from typing import Any

try:  # the built-in module: hashlib would load OpenSSL first (milliseconds)
    from _blake2 import blake2b as _blake2b
except ImportError:  # pragma: no cover (a Python built without it)
    from hashlib import blake2b as _blake2b

__all__ = ["cache_root", "install"]

_MAX_ENTRIES = 4096  # past this, a run keeps only what it used (old classes' code goes)
_SIGNATURE = ("name", "args", "body", "globals", "locals", "return_type")


def cache_root() -> Path | None:
    """$XDG_CACHE_HOME/topogen or ~/.cache/topogen (None: neither is an absolute path)."""
    root = os.environ.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(root):
        home = os.environ.get("HOME") or ""
        if not os.path.isabs(home):
            return None
        root = os.path.join(home, ".cache")
    return Path(root) / "topogen"


class _CodeCache:
    """text hash -> marshalled code, read from one file on first use (each code is
    unmarshalled when a class asks for it), written back at exit when this run compiled
    something new."""

    def __init__(self, file: Path | None) -> None:
        self.file = file
        self.codes: dict[bytes, bytes] | None = None
        self.used: set[bytes] = set()
        self.added = False

    def _load(self) -> dict[bytes, bytes]:
        codes: dict[bytes, bytes] = {}
        if self.file is not None:
            try:
                data = marshal.loads(self.file.read_bytes())
            except (OSError, EOFError, ValueError, TypeError):
                data = None
            if isinstance(data, dict):
                codes = {k: v for k, v in data.items() if type(v) is bytes}
        self.codes = codes
        return codes

    def compiled(self, text: str) -> CodeType:
        codes = self.codes if self.codes is not None else self._load()
        key = _blake2b(text.encode(), digest_size=16).digest()
        self.used.add(key)
        kept = codes.get(key)
        if type(kept) is bytes:
            with contextlib.suppress(EOFError, ValueError, TypeError):
                code = marshal.loads(kept)
                if type(code) is CodeType:
                    return code
        # as exec(text) compiles it in dataclasses.py: no __future__ flags of ours
        code = compile(text, "<string>", "exec", dont_inherit=True)
        codes[key] = marshal.dumps(code)
        self.added = True
        return code

    def save(self) -> None:
        if not self.added or self.file is None or self.codes is None:
            return
        codes = self.codes
        if len(codes) > _MAX_ENTRIES:
            codes = {k: v for k, v in codes.items() if k in self.used}
        import tempfile  # only when something new was compiled

        with contextlib.suppress(OSError):
            self.file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.file.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(marshal.dumps(codes))
                os.replace(tmp, self.file)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise


def _cached_create_fn(cache: _CodeCache) -> Any:
    missing = dataclasses.MISSING

    def _create_fn(
        name: str,
        args: list[str],
        body: list[str],
        *,
        globals: dict[str, Any] | None = None,
        locals: dict[str, Any] | None = None,
        return_type: Any = missing,
    ) -> Any:
        # dataclasses._create_fn of Python 3.11 and 3.12, line for line, but the compile
        if locals is None:
            locals = {}
        return_annotation = ""
        if return_type is not missing:
            locals["_return_type"] = return_type
            return_annotation = "->_return_type"
        joined = ",".join(args)
        lines = "\n".join(f"  {b}" for b in body)
        txt = f" def {name}({joined}){return_annotation}:\n{lines}"
        local_vars = ", ".join(locals.keys())
        txt = f"def __create_fn__({local_vars}):\n{txt}\n return {name}"
        ns: dict[str, Any] = {}
        exec(cache.compiled(txt), globals, ns)
        return ns["__create_fn__"](**locals)

    return _create_fn


def install() -> None:
    """Keep the compiled methods of the dataclasses defined from now on (once a process)."""
    stock = getattr(dataclasses, "_create_fn", None)
    code = getattr(stock, "__code__", None)
    if code is None or code.co_filename != dataclasses.__file__:
        return  # not the standard library's own (another tool's, or this one, installed)
    if sys.version_info[:2] not in ((3, 11), (3, 12)):
        return
    if code.co_varnames[: code.co_argcount + code.co_kwonlyargcount] != _SIGNATURE:
        return
    root = cache_root()
    name = f"dataclasses-{sys.implementation.cache_tag}-{sys.hexversion:x}.marshal"
    cache = _CodeCache(root / name if root is not None else None)
    dataclasses._create_fn = _cached_create_fn(cache)  # type: ignore[attr-defined]
    atexit.register(cache.save)
