"""The file-system steps under a render's journal: the lock on a tree, an atomic exchange
of two paths, working folders, and the repair of what an older topogen's killed runs left.

On Linux (renameat2 RENAME_EXCHANGE) and macOS (renamex_np RENAME_SWAP) two paths trade
places in one system call (journal.py turns an older topogen's symlinked top folder into a
plain one so). Elsewhere, or on a file system that cannot exchange, it is two renames, and
the journal redoes what a kill between them left undone.
"""

from __future__ import annotations

import errno
import fcntl
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from topogen.emit.layout import CONTROL, MANIFEST, TREE, has_header
from topogen.errors import InputError

__all__ = ["TreeBusy", "exchange", "locked", "make_folder", "recover_legacy", "remove_path"]

# an older topogen's working folders under .topogen (the whole tree swapped at once)
_LEGACY_PREFIXES = ("next-", "old-")
# what topogen before that left in OUT when killed
_OLD_LEFTOVERS = (".topogen-render-", ".topogen-old-")
_AT_FDCWD = -100
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV}


@cache  # the C library is looked up when a render first swaps (start-up: ctypes stays out)
def _exchanger() -> Callable[[bytes, bytes], int] | None:
    import ctypes

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


def exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths atomically; False when this system cannot."""
    swap = _exchanger()
    if swap is None:
        return False
    if swap(os.fsencode(a), os.fsencode(b)) == 0:
        return True
    import ctypes

    err = ctypes.get_errno()
    if err in _UNSUPPORTED:
        return False
    raise OSError(err, os.strerror(err), str(b))


class TreeBusy(InputError):
    """Another topogen process holds the tree's lock (a render writing it)."""


@contextmanager
def locked(out: Path) -> Iterator[None]:
    """One render (or recovery) at a time per output tree: a lock on the folder OUT itself,
    so nothing is left behind; InputError when another holds it."""
    fd = os.open(out, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise TreeBusy(
                "another topogen render is writing this tree", path=_shown(out)
            ) from None
        yield
    finally:
        os.close(fd)


def recover_legacy(out: Path) -> list[str]:
    """Repair what an older topogen's killed render left (under the lock): a swap of the
    whole .topogen/tree cut between its two renames is completed, then every leftover is
    removed. Returns what was removed."""
    control = out / CONTROL
    tree = control / TREE
    names = (
        sorted(n for n in os.listdir(control) if n.startswith(_LEGACY_PREFIXES))
        if control.is_dir()
        else []
    )
    if names and not tree.exists() and not tree.is_symlink():
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
        remove_path(control / n)
    for n in sorted(os.listdir(out)):
        if n.startswith(_OLD_LEFTOVERS) and (out / n).is_dir() and _only_generated(out / n):
            _rmtree(out / n)
            removed.append(n)
    return removed


def make_folder(prefix: str, parent: Path) -> Path:
    """A fresh folder of a random name after `prefix`, with the permissions mkdir gives
    (as tempfile.mkdtemp makes one, but for its 0700; tempfile costs a render 4 ms)."""
    for _ in range(100):
        path = parent / f"{prefix}{os.urandom(6).hex()}"
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(errno.EEXIST, "no unused folder name", str(parent / prefix))


def _shown(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def remove_path(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        _rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _only_generated(folder: Path) -> bool:
    """An older topogen's leftover holds its generated files only (else it stays)."""
    for p in folder.rglob("*"):
        if p.is_symlink() or (p.is_file() and p.suffix != ".json" and not has_header(p)):
            return False
    return True


def _rmtree(path: Path) -> None:
    import shutil  # only when a folder goes (start-up: shutil stays out)

    shutil.rmtree(path)
