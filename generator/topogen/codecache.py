"""Start-up: compiled code kept between runs in the user's cache folder
($XDG_CACHE_HOME/topogen, else ~/.cache/topogen).

Every frozen dataclass has its __init__, __repr__, __eq__, __hash__, __setattr__ and
__delattr__ written as source text and compiled when its module is imported: for the
hundred dataclasses of a command, that compiling was most of topogen's own start-up.
The text of each method depends only on the class's fields and options, so its compiled
code is kept, keyed by the text's hash (and the file by Python's bytecode version), and
the next run executes the same code without compiling it: the functions made are those
a compile gives (tests/core/test_codecache.py compares them). dataclasses.py compiles
through one call, exec(text, globals, ns); install() gives that module a name `exec` of
its own that runs the kept code of `text` (Python 3.11 to 3.13 alike). A cache that
cannot be read or written is skipped.

A dataclass without a docstring gets one from dataclasses.py, its name and its
__init__'s signature: inspect.signature, a tenth of a millisecond a class, for a text
nothing reads at run time. install() has that text made when __doc__ is first read
instead (the same text, tests/core/test_codecache.py compares them).
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import dataclasses
import inspect
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


def _cached_exec(cache: _CodeCache) -> Any:
    """exec for dataclasses.py: its one call, exec(text, globals, ns), runs the kept code
    of `text` (the code exec would compile: no __future__ flags, as in dataclasses.py)."""
    run = builtins.exec

    def exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
        if type(source) is str:
            source = cache.compiled(source)
        run(source, globals, locals)

    return exec


class _DataclassDoc:
    """A dataclass's __doc__ when its class has none: while dataclasses.py makes the
    class, a placeholder (it then leaves __doc__ alone); after, on first read, the text
    dataclasses.py would have set, which then replaces this in the class."""

    def __init__(self) -> None:
        self.made = False

    def __get__(self, instance: object, owner: type) -> str:
        if not self.made:
            return "..."
        try:  # as dataclasses.py: a signature may not be available
            text = owner.__name__ + str(inspect.signature(owner)).replace(" -> None", "")
        except (TypeError, ValueError):
            text = owner.__name__
        owner.__doc__ = text
        return text


def _doc_on_first_read(process: Any) -> Any:
    """dataclasses._process_class with the class docstring it makes (when the class has
    none) left to _DataclassDoc."""

    def _process_class(cls: type, *args: Any, **kwargs: Any) -> Any:
        if vars(cls).get("__doc__"):
            return process(cls, *args, **kwargs)
        doc = _DataclassDoc()
        cls.__doc__ = doc  # type: ignore[assignment]
        try:
            made = process(cls, *args, **kwargs)
        except BaseException:
            cls.__doc__ = None
            raise
        doc.made = True
        return made

    _process_class.__wrapped__ = process  # type: ignore[attr-defined]
    return _process_class


def install() -> None:
    """Keep the compiled methods of the dataclasses defined from now on (once a process):
    dataclasses.py's name `exec` (the builtin) becomes one that runs kept code."""
    if "exec" in vars(dataclasses):
        return  # installed already, or another tool's
    root = cache_root()
    name = f"dataclasses-{sys.implementation.cache_tag}-{sys.hexversion:x}.marshal"
    cache = _CodeCache(root / name if root is not None else None)
    dataclasses.exec = _cached_exec(cache)  # type: ignore[attr-defined]
    dataclasses._process_class = _doc_on_first_read(  # type: ignore[attr-defined]
        dataclasses._process_class  # type: ignore[attr-defined]
    )
    atexit.register(cache.save)
