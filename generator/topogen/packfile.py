"""Named byte strings kept in one file, mapped into memory: the format of the start-up
caches in the user's cache folder (cache_root()) (modulecache.py: topogen's modules' code; codecache.py:
the dataclasses' methods). A run maps the file and reads its index; an item's bytes are
read (their pages faulted in) only when asked for. Writing replaces the whole file
(write_atomically, the caches' one way to write: a reader keeps the file it mapped).

The file: a magic line (the format, and whose file it is), the index's length (8 bytes),
the index (marshal: name -> (meta, start, end), offsets into what follows it), then the
items' bytes. `meta` is the caller's (anything marshal holds); a damaged, truncated or
foreign file reads as empty, and an item whose bytes lie past the file's end as missing.
"""

from __future__ import annotations

import contextlib
import marshal
import mmap
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["Items", "Pack", "cache_root", "write_atomically", "write_pack"]

_LENGTH = 8  # bytes of the index's length


def cache_root() -> Path | None:
    """$XDG_CACHE_HOME/topogen or ~/.cache/topogen (None: neither is an absolute path)."""
    root = os.environ.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(root):
        home = os.environ.get("HOME") or ""
        if not os.path.isabs(home):
            return None
        root = os.path.join(home, ".cache")
    return Path(root) / "topogen"


class Pack:
    """A file's items: meta(name) from the index, bytes(name) from the mapping."""

    def __init__(self, file: Path | None, magic: bytes) -> None:
        self.index: dict[str, tuple[Any, int, int]] = {}  # offsets into self._data
        self._data: bytes | mmap.mmap = b""
        if file is not None:
            self._read(file, magic)

    def _read(self, file: Path, magic: bytes) -> None:
        try:
            with open(file, "rb") as f:
                data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # none yet, or empty
            return
        start = len(magic) + _LENGTH
        if data[: len(magic)] != magic or len(data) < start:
            return
        end = start + int.from_bytes(data[len(magic) : start], "little")
        try:
            index = marshal.loads(data[start:end])
        except (EOFError, ValueError, TypeError):
            return
        if type(index) is not dict:
            return
        size = len(data)
        for name, item in index.items():
            if (
                type(name) is str
                and type(item) is tuple
                and len(item) == 3
                and type(item[1]) is int
                and type(item[2]) is int
                and 0 <= item[1] <= item[2] <= size - end
            ):
                self.index[name] = (item[0], item[1] + end, item[2] + end)
        self._data = data

    def meta(self, name: str) -> Any:
        """The item's meta (None: no such item; an item's meta may be None too)."""
        item = self.index.get(name)
        return item[0] if item is not None else None

    def bytes(self, name: str) -> bytes:
        """The item's bytes (b"": no such item)."""
        item = self.index.get(name)
        return self._data[item[1] : item[2]] if item is not None else b""


class Items:
    """Dicts kept as the items of one file (marshal), each read when first asked for, the
    ones a run changed written back at exit with the others as they were; an item past
    `most` entries keeps only the keys this run used. The caches of dataclasses' methods
    (codecache.py) and of regular expressions (patterncache.py) are made of them."""

    def __init__(self, file: Path | None, magic: bytes, most: int) -> None:
        self.file, self.magic, self.most = file, magic, most
        self.pack = Pack(file, magic)
        self.items: dict[str, dict[Any, Any]] = {}
        self.used: dict[str, set[Any]] = {}  # per item, the keys this run asked for
        self.changed: set[str] = set()  # the items this run changed

    def item(self, name: str, valid: Callable[[Any, Any], bool]) -> dict[Any, Any]:
        """The item `name` (its entries that are `valid`; {} when none, or damaged)."""
        got = self.items.get(name)
        if got is None:
            try:
                data = marshal.loads(self.pack.bytes(name)) if name in self.pack.index else None
            except (EOFError, ValueError, TypeError):
                data = None
            got = {k: v for k, v in data.items() if valid(k, v)} if type(data) is dict else {}
            self.items[name] = got
            self.used[name] = set()
        return got

    def save(self) -> None:
        """The file, when this run changed an item (most runs write nothing)."""
        if not self.changed or self.file is None:
            return
        out = {n: (None, bytes(self.pack.bytes(n))) for n in self.pack.index}
        for name in self.changed:
            kept = self.items[name]
            if len(kept) > self.most:  # past this, only what this run used
                kept = {k: v for k, v in kept.items() if k in self.used[name]}
            out[name] = (None, marshal.dumps(kept))
        write_pack(self.file, self.magic, out)


def write_pack(file: Path, magic: bytes, items: Mapping[str, tuple[Any, bytes]]) -> None:
    """The file with these items (name -> (meta, bytes)), in name order, replacing it."""
    index: dict[str, tuple[Any, int, int]] = {}
    parts: list[bytes] = []
    at = 0
    for name, (meta, data) in sorted(items.items()):
        index[name] = (meta, at, at + len(data))
        parts.append(data)
        at += len(data)
    head = marshal.dumps(index)
    write_atomically(file, b"".join([magic, len(head).to_bytes(_LENGTH, "little"), head, *parts]))


def write_atomically(path: Path, data: bytes) -> None:
    """path's new content, or (an error) the old one: a temporary file of this process in
    the same folder, renamed; never a link followed. The caches' one way to write."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.parent / f".tmp-{os.getpid()}-{path.name}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(tmp, flags, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
