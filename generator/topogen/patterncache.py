"""Start-up: topogen's regular expressions kept compiled between runs, in one file in the
user's cache folder (packfile.cache_root(), a file per Python version), mapped.

Python compiles a pattern (re.compile, or re.match and the like the first time a process
meets it) in Python: re/_parser.py parses it, re/_compiler.py writes the matcher's code
(a list of ints), then _sre.compile builds the pattern object from that code. topogen's
own patterns, some compiled at import and some on first use, cost a command about 3 ms
of CPU that way. The code depends only on the pattern, its flags and the Python version,
so it is kept: install() has re's compile step, for a pattern compiled by topogen's own
code, build the pattern from the kept code (an item per module of the file, packfile.py)
and compile only what is new, written at exit. The pattern objects are those re.compile
makes (equal: same pattern, flags and code; tests/core/test_patterncache.py compares
every pattern of topogen's modules). Other packages' patterns (PyYAML's, click's) are
compiled as before. A file that cannot be read or written is skipped;
TOPOGEN_PATTERN_CACHE=0 turns it off.
"""

from __future__ import annotations

import atexit
import os
import sys
from array import array
from pathlib import Path
from typing import Any

from topogen.packfile import Items, cache_root

__all__ = ["install"]

_MAGIC = b"topogen-patterns-1\n"  # the file's format (Python's version: in its name)
_MAX_ENTRIES = 256  # a module's patterns: past this, a run keeps only what it used
_PACKAGE = "topogen"

# a pattern as kept: the flags of the pattern object, its code (array of SRE_CODE, as
# bytes), its group count less one, its group names -> numbers, numbers -> names
Kept = tuple[int, bytes, int, dict[str, int], tuple[str | None, ...]]


class _PatternCache:
    """module name -> {(pattern, flags): Kept}, an item of the file (packfile.Items) read
    when the module first compiles a pattern, written at exit when this run compiled a
    new one."""

    def __init__(self, file: Path | None, sre: Any, parser: Any, compiler: Any) -> None:
        self.items = Items(file, _MAGIC, _MAX_ENTRIES)
        self.save = self.items.save
        self._sre, self._parser, self._compiler = sre, parser, compiler

    def compiled(self, pattern: str | bytes, flags: int, module: str) -> Any:
        """The pattern object re's compile step makes of (pattern, flags)."""
        kept = self.items.item(module, _is_kept)
        key = (pattern, flags)
        self.items.used[module].add(key)
        entry = kept.get(key)
        if entry is None:
            entry = kept[key] = self._compile(pattern, flags)
            self.items.changed.add(module)
        final, code, groups, groupindex, indexgroup = entry
        ints = array("I")
        ints.frombytes(code)
        return self._sre.compile(pattern, final, ints.tolist(), groups, groupindex, indexgroup)

    def _compile(self, pattern: str | bytes, flags: int) -> Kept:
        """re/_compiler.py's compile() up to _sre.compile, its arguments kept."""
        p = self._parser.parse(pattern, flags)
        code = self._compiler._code(p, flags)
        groupindex = dict(p.state.groupdict)
        indexgroup: list[str | None] = [None] * p.state.groups
        for name, i in groupindex.items():
            indexgroup[i] = name
        return (
            flags | p.state.flags,
            array("I", code).tobytes(),
            p.state.groups - 1,
            groupindex,
            tuple(indexgroup),
        )


def _is_kept(key: object, value: object) -> bool:
    return (
        type(key) is tuple
        and len(key) == 2
        and type(key[0]) in (str, bytes)
        and type(key[1]) is int
        and type(value) is tuple
        and len(value) == 5
        and type(value[0]) is int
        and type(value[1]) is bytes
        and type(value[2]) is int
        and type(value[3]) is dict
        and type(value[4]) is tuple
    )


def _caller(skip: int) -> str | None:
    """The module of topogen's whose code asked re for the pattern (None: not topogen's)."""
    frame: Any = sys._getframe(skip)
    while frame is not None:
        name = frame.f_globals.get("__name__")
        if type(name) is not str:
            return None
        if name != "re" and not name.startswith("re."):
            return name if name == _PACKAGE or name.startswith(_PACKAGE + ".") else None
        frame = frame.f_back
    return None


def install() -> None:
    """re's compile step serves topogen's patterns from the cache (once a process)."""
    if os.environ.get("TOPOGEN_PATTERN_CACHE") == "0":
        return
    import _sre  # type: ignore[import-not-found]
    import re
    from re import _compiler, _parser  # type: ignore[attr-defined]

    real = _compiler.compile
    if getattr(real, "_topogen", False):
        return
    root = cache_root()
    if root is None or array("I").itemsize != _sre.CODESIZE or not hasattr(_compiler, "_code"):
        return  # nowhere to keep them, or an engine this does not know
    name = f"patterns-{sys.implementation.cache_tag}-{sys.hexversion:x}.marshal"
    cache = _PatternCache(root / name, _sre, _parser, _compiler)
    debug = re.DEBUG.value

    def compile(p: Any, flags: int = 0) -> Any:
        if (type(p) is str or type(p) is bytes) and type(flags) is int and not flags & debug:
            module = _caller(2)
            if module is not None:
                return cache.compiled(p, flags, module)
        return real(p, flags)

    compile._topogen = True  # type: ignore[attr-defined]
    compile.__wrapped__ = real  # type: ignore[attr-defined]
    _compiler.compile = compile
    atexit.register(cache.save)
