"""Input files as YAML documents: files and folders expanded (confined to the config's
folder), each file read once and parsed by topogen.yamltext."""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from topogen import parsecache
from topogen.errors import InputError
from topogen.yamltext import display_path, load_yaml_bytes

try:  # built in: hashlib would load OpenSSL first (milliseconds of every start-up)
    from _blake2 import blake2b as _digest
except ImportError:  # pragma: no cover (a Python built without it)
    from hashlib import blake2b as _digest

__all__ = ["MAX_FILE_BYTES", "Document", "expand_paths", "iter_documents"]

MAX_FILE_BYTES = 256 * 1024 * 1024
_YAML_SUFFIXES = (".yaml", ".yml", ".json")
# a folder's kustomization is how kustomize builds it, not an object of it
KUSTOMIZATION_FILES = frozenset({"kustomization.yaml", "kustomization.yml"})


@dataclass(frozen=True)
class Document:
    """One parsed YAML document and where it came from."""

    data: Any
    path: str
    index: int  # position of the document in its file


def expand_paths(
    paths: Iterable[str | os.PathLike[str]],
    *,
    base: Path | None = None,
    what: str = "input",
    root: Path | None = None,
    source: str | None = None,
) -> list[Path]:
    """Files named directly, plus YAML files under named folders (kustomization files
    and hidden folders left out), sorted per folder.

    With `root` (a resolved folder), every path, and every file found in a folder, must
    resolve (symlinks followed) to root or below it; `source` names the file that gave
    the paths, for the error."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if base is not None and not path.is_absolute():
            path = base / path
        if root is not None:
            _confined(path, root, what, str(raw), source)
        try:
            if path.is_dir():
                found = _yaml_files(path)
                if root is not None:
                    for p in found:
                        _confined(p, root, what, display_path(p), source)
                out.extend(found)
            elif path.is_file():
                out.append(path)
            else:
                raise InputError(
                    f"{what} path does not exist"
                    if not path.exists()
                    else f"{what} path is neither a file nor a folder",
                    path=display_path(path),
                    hint="check the path in topogen.yaml (relative paths start at its folder)",
                )
        except OSError as exc:
            where = exc.filename if isinstance(exc.filename, str) else str(path)
            raise InputError(
                f"cannot read {what}: {exc.strerror or exc}", path=display_path(Path(where))
            ) from None
    seen: set[Path] = set()
    unique = []
    for p in out:
        rp = p.resolve()
        if rp not in seen:
            seen.add(rp)
            unique.append(p)
    return unique


def _yaml_files(folder: Path) -> list[Path]:
    """The YAML files under folder (dot-named entries and folder symlinks skipped), sorted;
    a folder that cannot be listed is an error, not a silent gap."""

    def fail(exc: OSError) -> None:
        raise exc

    found = []
    for dirpath, dirnames, filenames in os.walk(folder, onerror=fail):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            p = Path(dirpath) / name
            if (
                not name.startswith(".")
                and p.suffix in _YAML_SUFFIXES
                and name not in KUSTOMIZATION_FILES
            ):
                if not p.is_file():  # a broken symlink, a loop, a FIFO: refused, not skipped
                    what = "a symlink to no readable file" if p.is_symlink() else "not a file"
                    raise InputError(
                        f"{what}: topogen reads every YAML file of the folder",
                        path=display_path(p),
                        hint="remove it, or point it at a file",
                    )
                found.append(p)
    return sorted(found)


def _confined(path: Path, root: Path, what: str, shown: str, source: str | None) -> None:
    try:
        real = path.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise InputError(f"{what}: cannot resolve {shown}: {exc}", path=source) from None
    if real != root and root not in real.parents:
        via = f" (it resolves to {real})" if Path(shown) != real else ""
        raise InputError(
            f"{what}: {shown} is outside the folder of the config{via}",
            path=source,
            hint="keep inputs in that folder or below it; --allow-outside-paths reads "
            "others, for interactive use",
        )


def iter_documents(files: Iterable[Path]) -> Iterator[Document]:
    for file in files:
        shown = display_path(file)
        try:
            st = file.stat()
            if st.st_size > MAX_FILE_BYTES:
                raise InputError(f"file is larger than {MAX_FILE_BYTES} bytes", path=shown)
            seen = (str(file), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            docs = _PARSED.get(_SEEN.get(seen, ("", "")))
            if docs is None:
                raw = file.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read file: {exc.strerror}", path=shown) from None
        if docs is None:
            docs, _SEEN[seen] = _parsed(raw, shown)
        for i, data in enumerate(docs):
            if data is None:
                continue
            yield Document(data, shown, i)


_PARSED: OrderedDict[tuple[str, str], list[Any]] = OrderedDict()
_PARSED_KEEP = 8
# Within one command, a file read again (a snapshot: its nodes, later its running pods) is
# taken from the command's first read when its stat is the same (the same file, unchanged
# since): neither read nor hashed again (12.8 MB: 25 ms). new_run() forgets them.
_SEEN: dict[tuple[str, int, int, int, int, int], tuple[str, str]] = {}


def new_run() -> None:
    """A command starts: files are read again, not taken from the stat of an earlier read
    (a file rewritten since may have the same size and times, at the clock's resolution)."""
    _SEEN.clear()


def _parsed(raw: bytes, shown: str) -> tuple[list[Any], tuple[str, str]]:
    """load_yaml_bytes of the file's bytes (UTF-8, read as text mode reads it: universal
    newlines), and its key, remembered for the last few files: the same bytes read again
    (a file whose stat changed, or read by a later command of the process) are neither
    decoded nor parsed again (within one command, a file whose stat did not change is not
    even read: iter_documents). A large file is kept between runs too (parsecache.py):
    unchanged, it is not parsed again. The documents are shared: callers treat them as
    read-only (KubeObject.body is a Mapping)."""
    digest = _digest(raw, digest_size=20).hexdigest()
    key = (shown, digest)
    hit = _PARSED.get(key)
    if hit is None:
        hit = _PARSED[key] = parsecache.documents(
            len(raw), digest, lambda: load_yaml_bytes(raw, shown)
        )
        while len(_PARSED) > _PARSED_KEEP:
            _PARSED.popitem(last=False)
    else:
        _PARSED.move_to_end(key)
    return hit, key
