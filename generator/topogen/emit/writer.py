"""Byte-for-byte deterministic output that touches only what topogen owns.

Before anything is written the current tree is checked: a file topogen did not write
stops the render with its name; nothing is removed or overwritten but topogen's own
files. Only files whose bytes change are written (a render that changes nothing touches
nothing), through the journal (journal.py): each file is replaced by a rename, and a kill
at any moment is finished by the next topogen command.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from topogen.emit.journal import Change, Plan, Recovery, apply, commit, digest, recover, stage
from topogen.emit.layout import (
    CONTROL,
    KNOWN_TOPS,
    MANIFEST,
    CurrentTree,
    check_output_path,
    manifest_text,
    read_current,
)
from topogen.emit.stream import GENERATED_HEADER
from topogen.emit.swap import locked
from topogen.errors import InputError, InternalError
from topogen.render.base import RenderedFile
from topogen.yamltext import display_path

__all__ = [
    "GENERATED_HEADER",
    "WriteReport",
    "check_tree",
    "swap_units",
    "write_tree",
]


@dataclass(frozen=True)
class WriteReport:
    tops: tuple[str, ...]  # the top folders of the tree now
    written: int  # files the render wrote (new or changed)
    unchanged: int  # files it rendered as they were (left alone, mtimes too)
    stale: tuple[str, ...]  # generated files of the previous tree that are gone
    cleaned: tuple[str, ...]  # leftovers of an interrupted render, removed
    converted: tuple[str, ...] = ()  # an older topogen's symlinked top folders, now plain
    finished: int | None = None  # files an interrupted render's journal still had to do


def _content(f: RenderedFile, header: str) -> str:
    text = f.text if f.text.endswith("\n") else f.text + "\n"
    return header + text if f.header else text


def swap_units(files: Sequence[RenderedFile], clusters: Sequence[str] | None) -> list[str]:
    """What a render replaces: the top-level folders, or for a render of some clusters only,
    each folder named after one of them (policies/lab, kustomize/overlays/lab, ...) and the
    shared files one by one, so the other clusters' output stays."""
    if clusters is None:
        return sorted({Path(f.path).parts[0] for f in files})
    units = set()
    for f in files:
        parts = Path(f.path).parts
        cut = next((i for i, p in enumerate(parts[:-1]) if p in clusters), None)
        units.add(Path(*parts[: cut + 1]).as_posix() if cut is not None else f.path)
    return sorted(units)


def _check_files(files: Sequence[RenderedFile]) -> None:
    dupes = sorted(p for p, n in Counter(f.path for f in files).items() if n > 1)
    if dupes:
        raise InternalError(f"two rendered files share the path {dupes[0]}")
    for f in files:
        check_output_path(f.path)


def _in_units(path: str, units: Sequence[str]) -> bool:
    return any(path == u or path.startswith(u + "/") for u in units)


def check_tree(files: Sequence[RenderedFile], out: Path) -> CurrentTree:
    """The current tree at `out`, checked: raise InputError naming the first file a render
    of `files` must not touch. Reads only."""
    _check_files(files)
    rendered = {f.path for f in files}
    cur = read_current(out, {p.split("/")[0] for p in rendered} | set(KNOWN_TOPS), rendered)
    if cur.foreign:
        first = cur.foreign[0]
        more = f" (and {len(cur.foreign) - 1} more)" if len(cur.foreign) > 1 else ""
        raise InputError(
            f"{first}{more}: render writes and removes only its own files, so it changed "
            "nothing; move that out of the output tree (or delete it) and render again",
            path=_shown(out),
        )
    return cur


def write_tree(
    files: Sequence[RenderedFile], out: Path, header: str, clusters: Sequence[str] | None = None
) -> WriteReport:
    """Make the tree at `out` hold `files` (for `clusters` only: their folders and the
    shared files; see swap_units), changing only the files that differ."""
    _check_files(files)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(
            f"cannot write the output tree: {exc.strerror}", path=_shown(out)
        ) from None
    try:
        with locked(out):
            recovery = recover(out)
            cur = check_tree(files, out)
            return _write(files, cur, header, clusters, recovery)
    except _Unchanged as exc:
        raise _error(exc.cause, out, "; the previous tree is unchanged") from None
    except OSError as exc:
        raise _error(exc, out, "") from None


class _Unchanged(Exception):
    """An OSError before the journal's commit: the tree is as it was."""

    def __init__(self, cause: OSError) -> None:
        self.cause = cause


def _error(exc: OSError, out: Path, tail: str) -> InputError:
    where = exc.filename if isinstance(exc.filename, str) else str(out)
    return InputError(
        f"cannot write the output tree: {exc.strerror or exc}{tail}", path=_shown(Path(where))
    )


def _plan(
    cur: CurrentTree, contents: dict[str, bytes], units: Sequence[str] | None, manifest: str
) -> Plan:
    """What makes the tree hold `contents`: only the files whose bytes differ."""
    changes = [
        Change(path, digest(src.read_bytes()), None)
        for path, src in sorted(cur.owned.items())
        if path not in contents and (units is None or _in_units(path, units))
    ]
    for path, data in sorted(contents.items()):
        src = cur.owned.get(path)
        was = digest(src.read_bytes()) if src is not None else None
        now = digest(data)
        if was != now:
            changes.append(Change(path, was, now))
    old = cur.control / MANIFEST
    same = old.is_file() and not old.is_symlink() and old.read_text(encoding="utf-8") == manifest
    legacy = cur.tree.exists() or cur.tree.is_symlink()
    convert = (
        tuple(sorted(n for n in os.listdir(cur.tree) if (cur.tree / n).is_dir()))
        if legacy and cur.tree.is_dir() and not cur.tree.is_symlink()
        else ()
    )
    return Plan(convert, tuple(sorted(changes, key=lambda c: c.path)), not same, legacy)


def _write(
    files: Sequence[RenderedFile],
    cur: CurrentTree,
    header: str,
    clusters: Sequence[str] | None,
    recovery: Recovery,
) -> WriteReport:
    units = swap_units(files, clusters) if clusters is not None else None
    contents = {f.path: _content(f, header).encode("utf-8") for f in files}
    kept = {
        p for p in cur.owned if p not in contents and units is not None and not _in_units(p, units)
    }
    paths = set(contents) | kept
    manifest = manifest_text(paths)
    plan = _plan(cur, contents, units, manifest)
    if not plan.empty:
        try:
            staging = stage(cur.out, plan, contents, manifest)
        except OSError as exc:
            _discard(cur.out)
            raise _Unchanged(exc) from None
        journal = commit(staging)
        try:
            apply(cur.out, journal, plan)
        except OSError as exc:
            tail = "; the render is journalled: the next topogen command finishes it"
            raise _error(exc, cur.out, tail) from None
    return WriteReport(
        tuple(sorted({p.split("/")[0] for p in paths})),
        len(plan.written),
        len(contents) - len(plan.written),
        tuple(plan.removed),
        recovery.removed,
        tuple(t for t in plan.convert if t in cur.symlinked),
        recovery.finished,
    )


def _discard(out: Path) -> None:
    """A journal that could not be staged whole (a full disk): gone, as if never begun
    (and .topogen with it when that leaves it empty)."""
    with contextlib.suppress(OSError, InputError):
        recover(out)
        (out / CONTROL).rmdir()


def _shown(path: Path) -> str | None:
    """The output folder as the user gave it (None for the working folder: the files it
    names are then named from there already)."""
    shown = display_path(path)
    return None if shown == "." else shown
