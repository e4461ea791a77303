"""The journal of a render: how a killed render is finished by the next topogen command.

A render never writes a file of the tree in place. It stages, in OUT/.topogen/journal.new-*/,
the new content of every file that changes (`files/...`), the new MANIFEST and, last, the
PLAN (what is converted, removed and written, with a hash of each file as found and as
rendered); renaming that folder to OUT/.topogen/journal commits the render. Then the steps
are done in order: an older topogen's symlinked top folder becomes a plain one (an atomic
exchange, else two renames), each removed file is unlinked (and the folders it leaves
empty), each written file renamed into place (so each file is old or new, never half),
the MANIFEST renamed into place, an older layout's .topogen/tree removed, and the journal
retired (renamed to journal.done-*, then deleted).

recover(), which every topogen command runs first (under the tree's lock):
- journal.new-*: a render killed before its commit: deleted (the tree is as it was);
- journal: a render killed after it: the steps not yet done are done, once every file it
  replaces or removes is checked to be as the plan found it or as it leaves it (else
  nothing is touched and the error names the file);
- journal.done-*, and what an older topogen's interrupted runs left: deleted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from topogen.digests import sha256_hex
from topogen.emit.layout import CONTROL, MANIFEST, TREE
from topogen.emit.leftovers import JOURNAL, RETIRED, STAGING, interrupted
from topogen.emit.swap import TreeBusy, exchange, locked, make_folder, recover_legacy, remove_path
from topogen.errors import InputError

__all__ = [
    "JOURNAL",
    "Change",
    "Plan",
    "Recovery",
    "apply",
    "commit",
    "digest",
    "finish",
    "interrupted",
    "recover",
    "stage",
]

_FILES, _PLAN = "files", "PLAN"
_KIND = "RenderJournal"


def _checkpoint(step: str) -> None:
    """A point between two steps of a render (the kill tests stop a render at each)."""


def digest(data: bytes) -> str:
    return sha256_hex(data)


def _file_digest(path: Path) -> str | None:
    """The file's digest; None when there is none; "" when it is no regular file."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        return ""
    try:
        return digest(path.read_bytes())
    except FileNotFoundError:
        return None


@dataclass(frozen=True)
class Change:
    """One file: its digest as found (None: absent) and as the render leaves it (None:
    removed)."""

    path: str
    was: str | None
    now: str | None


@dataclass(frozen=True)
class Plan:
    convert: tuple[str, ...]  # an older topogen's top folders in .topogen/tree
    changes: tuple[Change, ...]
    manifest: bool  # the MANIFEST changes
    drop_tree: bool  # .topogen/tree (an older layout) goes

    @property
    def empty(self) -> bool:
        return not (self.convert or self.changes or self.manifest or self.drop_tree)

    @property
    def removed(self) -> list[str]:
        return [c.path for c in self.changes if c.now is None]

    @property
    def written(self) -> list[str]:
        return [c.path for c in self.changes if c.now is not None]

    def to_json(self) -> str:
        """The plan as JSON, a change per line, each written by json's C encoder (its
        indenting encoder is Python: a fleet's 1,670 changes took 24 ms)."""
        head = json.dumps(
            {
                "apiVersion": "topogen.io/v1alpha1",
                "kind": _KIND,
                "convert": list(self.convert),
                "manifest": self.manifest,
                "dropTree": self.drop_tree,
            }
        )
        changes = ",".join(
            f"\n  {json.dumps({'path': c.path, 'was': c.was, 'now': c.now})}" for c in self.changes
        )
        return f'{head[:-1]},\n "changes": [{changes}\n ]}}\n'

    @classmethod
    def from_json(cls, text: str) -> Plan:
        doc: Any = json.loads(text)
        if not isinstance(doc, dict) or doc.get("kind") != _KIND:
            raise ValueError("not a render journal")
        return cls(
            tuple(str(t) for t in doc["convert"]),
            tuple(Change(str(c["path"]), c["was"], c["now"]) for c in doc["changes"]),
            bool(doc["manifest"]),
            bool(doc["dropTree"]),
        )


def stage(out: Path, plan: Plan, contents: dict[str, bytes], manifest: str) -> Path:
    """Write the journal of `plan` (not yet committed: the tree is untouched)."""
    control = out / CONTROL
    control.mkdir(exist_ok=True)
    staging = make_folder(STAGING, control)
    # a fleet's render stages thousands of files: plain os calls on str paths (pathlib's
    # objects cost a fifth of the write on tmpfs)
    files = os.path.join(staging, _FILES)
    made: set[str] = set()
    for i, path in enumerate(plan.written):
        target = os.path.join(files, path)
        parent = os.path.dirname(target)
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            made.add(parent)
        _write_new(target, contents[path])
        if i == 0:
            _checkpoint("staged a file")
    (staging / MANIFEST).write_text(manifest, encoding="utf-8", newline="\n")
    _checkpoint("staged the files")
    (staging / _PLAN).write_text(plan.to_json(), encoding="utf-8", newline="\n")
    _checkpoint("staged the plan")
    return staging


def _write_new(path: str, data: bytes) -> None:
    """Path.write_bytes: created (mode 0666 less the umask) or truncated, then written."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def commit(staging: Path) -> Path:
    """The commit point: from here on the render is finished, by itself or by recover()."""
    journal = staging.parent / JOURNAL
    os.rename(staging, journal)
    _checkpoint("committed")
    return journal


def apply(out: Path, journal: Path, plan: Plan) -> None:
    """Do every step of a committed journal not yet done (each may have been)."""
    control = out / CONTROL
    for top in plan.convert:
        _convert(out, top)
        _checkpoint(f"converted {top}")
    for path in plan.removed:
        (out / path).unlink(missing_ok=True)
        _checkpoint(f"removed {path}")
    _prune(out, plan.removed)
    made: set[str] = set()
    files, tree_root = os.path.join(journal, _FILES), str(out)
    for path in plan.written:
        source, target = os.path.join(files, path), os.path.join(tree_root, path)
        if not os.path.exists(source):
            continue  # in place already
        parent = os.path.dirname(target)
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            made.add(parent)
        os.replace(source, target)
        _checkpoint(f"wrote {path}")
    if plan.manifest and (journal / MANIFEST).exists():
        os.replace(journal / MANIFEST, control / MANIFEST)
        _checkpoint("wrote the manifest")
    tree = control / TREE
    if plan.drop_tree and (tree.exists() or tree.is_symlink()):
        remove_path(tree)
        _checkpoint("removed .topogen/tree")
    retired = make_folder(RETIRED, control)
    os.replace(journal, retired)
    _checkpoint("retired the journal")
    import shutil

    shutil.rmtree(retired)


def _convert(out: Path, top: str) -> None:
    """An older topogen's OUT/top -> .topogen/tree/top becomes the plain folder."""
    link, real = out / top, out / CONTROL / TREE / top
    if link.is_symlink():
        if not real.is_dir() or real.is_symlink():
            link.unlink()  # dangling
        elif exchange(real, link):
            real.unlink()  # the symlink, now there
        else:
            link.unlink()  # a kill here leaves no OUT/top: the next run renames it in
            os.rename(real, link)
    elif not link.exists() and real.is_dir() and not real.is_symlink():
        os.rename(real, link)
    elif real.is_symlink():
        real.unlink()  # an exchange done, its clean-up not


def _prune(out: Path, removed: Iterable[str]) -> None:
    """Remove the folders the removed files left empty (never OUT itself)."""
    for path in sorted(removed, key=lambda p: -p.count("/")):
        folder = (out / path).parent
        while folder != out and folder.is_dir() and not folder.is_symlink():
            try:
                folder.rmdir()
            except OSError:
                break
            folder = folder.parent


# --- recovery ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recovery:
    """What recover() did: the files an interrupted render still had to write or remove
    (None: there was no journal), and the leftovers it deleted."""

    finished: int | None
    removed: tuple[str, ...]
    busy: bool = False  # another topogen process holds the tree: nothing was done


def finish(out: Path) -> Recovery | None:
    """What a command runs before anything else on a tree it names: recover() under the
    tree's lock when OUT holds what an interrupted render left (None: it holds nothing)."""
    if not interrupted(out):
        return None
    try:
        with locked(out):
            return recover(out)
    except TreeBusy:
        return Recovery(None, (), busy=True)  # a render still writing: its journal is live
    except OSError as exc:
        raise InputError(
            f"cannot finish an interrupted render: {exc.strerror or exc}", path=str(out)
        ) from None


def recover(out: Path) -> Recovery:
    """Finish or roll back what an interrupted render left at OUT (under the lock)."""
    control = out / CONTROL
    if not control.is_dir():
        return Recovery(None, tuple(recover_legacy(out)))
    removed = recover_legacy(out)
    for name in sorted(os.listdir(control)):
        if name.startswith((STAGING, RETIRED)):
            remove_path(control / name)
            removed.append(f"{CONTROL}/{name}")
    journal = control / JOURNAL
    if not journal.is_dir():
        return Recovery(None, tuple(removed))
    plan = _read_plan(journal)
    _check_unchanged(out, journal, plan)
    pending = sum(
        1
        for c in plan.changes
        if ((journal / _FILES / c.path).exists() if c.now else (out / c.path).exists())
    )
    apply(out, journal, plan)
    return Recovery(pending, tuple(removed))


def _read_plan(journal: Path) -> Plan:
    shown = f"{CONTROL}/{JOURNAL}/{_PLAN}"
    try:
        return Plan.from_json((journal / _PLAN).read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(
            f"cannot read the journal of an interrupted render ({type(exc).__name__}): "
            f"delete {CONTROL}/{JOURNAL} to keep the tree as it is, then render again",
            path=shown,
        ) from None


def _check_unchanged(out: Path, journal: Path, plan: Plan) -> None:
    """Every file the journal still replaces or removes is as the render found it (or
    gone, or already as it leaves it): nobody changed it since."""
    for c in plan.changes:
        found = _file_digest(out / c.path)
        if found is None or found in (c.was, c.now):
            continue
        raise InputError(
            f"{c.path} changed after a render was interrupted, so its journal "
            f"({CONTROL}/{JOURNAL}) was not finished: move your change out of the output "
            f"tree (or delete {CONTROL}/{JOURNAL} to keep the tree as it is) and run again",
            path=str(out),
        )
