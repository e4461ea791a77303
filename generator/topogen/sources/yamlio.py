"""Safe, fast YAML reading with errors that name the file and line."""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from topogen.errors import InputError
from topogen.yamlfast import load_all_fast

__all__ = ["MAX_FILE_BYTES", "Document", "expand_paths", "iter_documents", "load_yaml_text"]

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE = "tag:yaml.org,2002:merge"


class _DuplicateKey(Exception):
    def __init__(self, key: Any, first: tuple[int, int], again: tuple[int, int]) -> None:
        self.key, self.first, self.again = key, first, again

    def where(self) -> str:
        (line, col), (again, _) = self.first, self.again
        return f"also on line {line}" if line != again else f"also at column {col} of it"


class _Loader(_BaseLoader):  # type: ignore[misc]
    """The C loader, refusing a mapping that names a key twice: YAML readers differ on
    which one wins (PyYAML and Kubernetes keep the last, some refuse), so topogen refuses."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: dict[Any, tuple[int, int]] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:
                continue
            key = self.construct_object(key_node, deep=True)
            mark = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            try:
                first = seen.setdefault(key, mark)
            except TypeError:  # unhashable: the constructor says so
                continue
            if first != mark:
                raise _DuplicateKey(key, first, mark)
        return super().construct_mapping(node, deep)


MAX_FILE_BYTES = 256 * 1024 * 1024
# A document may expand aliases to at most this many nodes (and at most
# _MAX_EXPANSION times its own size); beyond that it is an alias bomb.
_MAX_EXPANDED_NODES = 2_000_000
_MAX_EXPANSION = 50
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
                and p.is_file()
            ):
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


def display_path(path: Path) -> str:
    """A path as the user would type it: relative to the working folder when possible."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def load_yaml_text(text: str, path: str) -> list[Any]:
    """Parse every document of a YAML stream; raise InputError naming the line."""
    fast = load_all_fast(text)
    if fast is not None:
        docs, aliased = fast
        for i, doc in enumerate(docs):
            if aliased[i]:  # without aliases a document is exactly its written size
                _check_alias_expansion(doc, path, i)
        return docs
    try:
        docs = list(yaml.load_all(text, Loader=_Loader))
    except _DuplicateKey as exc:
        raise InputError(
            f"duplicate key {exc.key!r} ({exc.where()}): YAML readers disagree on which one counts",
            path=path,
            line=exc.again[0],
            hint="keep one of them",
        ) from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise InputError(f"malformed YAML: {exc}", path=path) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise InputError(f"malformed YAML: {problem}", path=path, line=line) from None
    except yaml.YAMLError as exc:
        raise InputError(f"malformed YAML: {exc}", path=path) from None
    for i, doc in enumerate(docs):
        _check_alias_expansion(doc, path, i)
    return docs


def iter_documents(files: Iterable[Path]) -> Iterator[Document]:
    for file in files:
        shown = display_path(file)
        try:
            size = file.stat().st_size
            if size > MAX_FILE_BYTES:
                raise InputError(f"file is larger than {MAX_FILE_BYTES} bytes", path=shown)
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise InputError("file is not UTF-8 text", path=shown) from None
        except OSError as exc:
            raise InputError(f"cannot read file: {exc.strerror}", path=shown) from None
        for i, data in enumerate(_parsed(text, shown)):
            if data is None:
                continue
            yield Document(data, shown, i)


_PARSED: OrderedDict[tuple[str, str], list[Any]] = OrderedDict()
_PARSED_KEEP = 8


def _parsed(text: str, shown: str) -> list[Any]:
    """load_yaml_text, remembered for the last few files: one run reads some inputs twice
    (render's workload patches re-read the workloads). The documents are shared: callers
    treat them as read-only (KubeObject.body is a Mapping)."""
    key = (shown, hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest())
    hit = _PARSED.get(key)
    if hit is None:
        hit = _PARSED[key] = load_yaml_text(text, shown)
        while len(_PARSED) > _PARSED_KEEP:
            _PARSED.popitem(last=False)
    else:
        _PARSED.move_to_end(key)
    return hit


def _check_alias_expansion(doc: Any, path: str, index: int) -> None:
    """Reject documents whose aliases expand far beyond their written size.

    The C loader shares aliased nodes instead of copying them, so the document
    itself is small; every consumer that walks it would not be. Count the
    expanded size with memoisation (linear in the distinct nodes).
    """
    sizes: dict[int, int] = {}
    distinct = 0
    stack: list[tuple[Any, bool]] = [(doc, False)]
    while stack:
        node, done = stack.pop()
        if not isinstance(node, dict | list):
            continue
        key = id(node)
        if done:
            children = node.values() if isinstance(node, dict) else node
            total = 1
            for child in children:
                if isinstance(child, dict | list):
                    total += sizes[id(child)]
                else:
                    total += 1
            sizes[key] = total
            if total > _MAX_EXPANDED_NODES and total > _MAX_EXPANSION * max(distinct, 1):
                raise InputError(
                    f"document {index + 1} expands its YAML aliases to over "
                    f"{_MAX_EXPANDED_NODES} nodes (an alias bomb?)",
                    path=path,
                    hint="write the document without anchors and aliases",
                )
            continue
        if key in sizes:
            continue
        sizes[key] = 0  # placeholder: cycles are impossible in safe-loaded YAML
        distinct += 1
        stack.append((node, True))
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, dict | list) and id(child) not in sizes:
                stack.append((child, False))
