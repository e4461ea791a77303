"""The one atomic step of a render, the lock around it, and the repair of a killed run.

On Linux (renameat2 RENAME_EXCHANGE) and macOS (renamex_np RENAME_SWAP) the new tree
and .topogen/tree trade places in one system call. Elsewhere, or on a file system that
cannot exchange, it is two renames: a kill between them leaves no tree at all (a reader
sees no folder, never a mix), and the next run puts the complete new tree in place.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from topogen.emit.layout import CONTROL, MANIFEST, TREE, has_header
from topogen.errors import InputError

__all__ = ["LEFTOVER_PREFIXES", "exchange", "locked", "recover", "replace_dir"]

# working folders under .topogen; what an interrupted run leaves behind starts so
LEFTOVER_PREFIXES = ("next-", "old-")
# what topogen before this layout left in OUT when killed
_OLD_LEFTOVERS = (".topogen-render-", ".topogen-old-")
_AT_FDCWD = -100
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV}


def _exchanger() -> Callable[[bytes, bytes], int] | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    if sys.platform == "darwin" and hasattr(libc, "renamex_np"):
        swap = libc.renamex_np
        return lambda a, b: int(swap(a, b, 0x2))  # RENAME_SWAP
    if hasattr(libc, "renameat2"):
        rename2 = libc.renameat2
        return lambda a, b: int(rename2(_AT_FDCWD, a, _AT_FDCWD, b, 0x2))  # RENAME_EXCHANGE
    return None


_EXCHANGE = _exchanger()


def exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths atomically; False when this system cannot."""
    if _EXCHANGE is None:
        return False
    if _EXCHANGE(os.fsencode(a), os.fsencode(b)) == 0:
        return True
    err = ctypes.get_errno()
    if err in _UNSUPPORTED:
        return False
    raise OSError(err, os.strerror(err), str(b))


def replace_dir(new: Path, current: Path, aside: Path) -> Path | None:
    """Put folder `new` where `current` is; return where the previous one went (None when
    there was none). `aside` is a free name beside them for the two-rename fallback."""
    if not current.exists() and not current.is_symlink():
        os.rename(new, current)
        return None
    if exchange(new, current):
        return new
    os.rename(current, aside)
    os.rename(new, current)  # a kill just before this leaves no tree: see recover()
    return aside


@contextmanager
def locked(control: Path) -> Iterator[None]:
    """One render at a time per output tree (a lock on the .topogen folder itself, so
    nothing is left behind)."""
    fd = os.open(control, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(
                "another topogen render is writing this tree", path=str(control.parent)
            ) from None
        yield
    finally:
        os.close(fd)


def recover(out: Path) -> list[str]:
    """Repair what a killed render left (under the lock): a swap cut between its two
    renames is completed, then every leftover is removed. Returns what was removed."""
    control = out / CONTROL
    tree = control / TREE
    names = sorted(n for n in os.listdir(control) if n.startswith(LEFTOVER_PREFIXES))
    if not tree.exists() and not tree.is_symlink():
        complete = [n for n in names if (control / n / MANIFEST).is_file()]
        # the new tree is a next-*; the old one went aside as old-*
        pick = next((n for n in complete if n.startswith("next-")), None) or next(
            iter(complete), None
        )
        if pick is not None:
            os.rename(control / pick, tree)
            names.remove(pick)
    removed = [f"{CONTROL}/{n}" for n in names]
    for n in names:
        _remove(control / n)
    for n in sorted(os.listdir(out)):
        if n.startswith(_OLD_LEFTOVERS) and (out / n).is_dir() and _only_generated(out / n):
            shutil.rmtree(out / n)
            removed.append(n)
    return removed


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _only_generated(folder: Path) -> bool:
    """An older topogen's leftover holds its generated files only (else it stays)."""
    for p in folder.rglob("*"):
        if p.is_symlink() or (p.is_file() and p.suffix != ".json" and not has_header(p)):
            return False
    return True
