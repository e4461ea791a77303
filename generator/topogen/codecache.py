"""Start-up: compiled code kept between runs in the user's cache folder
($XDG_CACHE_HOME/topogen, else ~/.cache/topogen).

Every frozen dataclass has its __init__, __repr__, __eq__, __hash__, __setattr__ and
__delattr__ written as source text and compiled when its module is imported: for the
hundred dataclasses of a command, that compiling was most of topogen's own start-up.
The text of each method depends only on the class's fields and options, so its compiled
code is kept, keyed by the text, in one file per Python version (an item per module,
mapped: packfile.py):
the next run reads the files of the modules it imports and executes the same code
without compiling it: the functions made are those
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
import dataclasses
import inspect
import marshal
import os
import sys
from pathlib import Path
from types import CodeType
from typing import Any

from topogen.packfile import Pack, write_pack

__all__ = ["cache_root", "install"]

_MAX_ENTRIES = 512  # a module's texts: past this, a run keeps only what it used
_MAGIC = b"topogen-dataclasses-1\n"  # the file's format (packfile.py)


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
    """module name -> {text: its code}: a module's read from the file (packfile.Pack, an
    item per module) when its first class asks, the file written back at exit when this
    run compiled something new. Keyed by the text itself: no hash to compute, and no two
    texts share a code."""

    def __init__(self, file: Path | None) -> None:
        self.file = file
        self.pack = Pack(file, _MAGIC)
        self.modules: dict[str, dict[str, CodeType]] = {}
        self.used: dict[str, set[str]] = {}
        self.added: set[str] = set()

    def _load(self, module: str) -> dict[str, CodeType]:
        codes: dict[str, CodeType] = {}
        try:
            data = marshal.loads(self.pack.bytes(module)) if module in self.pack.index else None
        except (EOFError, ValueError, TypeError):
            data = None
        if type(data) is dict:
            codes = {k: v for k, v in data.items() if type(k) is str and type(v) is CodeType}
        self.modules[module] = codes
        self.used[module] = set()
        return codes

    def compiled(self, text: str, module: str = "") -> CodeType:
        codes = self.modules.get(module)
        if codes is None:
            codes = self._load(module)
        self.used[module].add(text)
        code = codes.get(text)
        if code is None:
            # as exec(text) compiles it in dataclasses.py: no __future__ flags of ours
            code = codes[text] = compile(text, "<string>", "exec", dont_inherit=True)
            self.added.add(module)
        return code

    def save(self) -> None:
        """The file, when this run compiled something new: the modules this run changed,
        and the others' items as they were."""
        if not self.added or self.file is None:
            return
        items = {n: (None, bytes(self.pack.bytes(n))) for n in self.pack.index}
        for module in self.added:
            codes = self.modules[module]
            if len(codes) > _MAX_ENTRIES:  # past this, only what this run used
                codes = {k: v for k, v in codes.items() if k in self.used[module]}
            items[module] = (None, marshal.dumps(codes))
        write_pack(self.file, _MAGIC, items)


def _cached_exec(cache: _CodeCache) -> Any:
    """exec for dataclasses.py: its one call, exec(text, globals, ns), runs the kept code
    of `text` (the code exec would compile: no __future__ flags, as in dataclasses.py),
    kept with the other texts of the class's module (globals are its namespace)."""
    run = builtins.exec

    def exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
        if type(source) is str:
            module = globals.get("__name__") if type(globals) is dict else None
            source = cache.compiled(source, module if type(module) is str else "")
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
