"""Large input files parsed once: what parsing a file gave, kept in the user's cache folder
(packfile.cache_root()/parsed) and loaded instead of parsing the same bytes again.

topogen runs on every Argo CD refresh and every pull request, mostly over inputs that did
not change since the last run: a cluster snapshot (12.8 MB of JSON for 5,000 nodes), the
workloads (2.5 MB of YAML for 1,000 jobs). Parsing them is a good part of a fleet's run;
loading the documents the last parse made (marshal) takes a fraction of it.

An entry is keyed by the file's bytes (the blake2b digest sources/yamlio.py takes anyway)
and by the parser: the source of the modules that turn bytes into documents
(yamltext.load_yaml_bytes, yamlfast), PyYAML's and libyaml's versions and Python's
(marshal's format). The path is not part of it (a parse's result does not depend on it;
only its errors name it). The entry's payload sits behind a digest of its own: a damaged,
truncated or foreign entry is ignored and the file parsed.

Kept: files of at least MIN_BYTES whose parse succeeded with a result marshal holds as it
is (plain data; a document with a YAML timestamp or !!binary value is not kept). A parse
error is never kept: it is raised again, from the file. At most MAX_ENTRIES entries and
MAX_BYTES in all, the least recently used removed first. A cache that cannot be read or
written is skipped; TOPOGEN_PARSE_CACHE=0 turns it off. The documents are what the parse
returns, type for type (tests/core/test_parsecache.py), and decide nothing of their own.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from topogen.packfile import cache_root, write_atomically

try:  # built in: hashlib would load OpenSSL first
    from _blake2 import blake2b as _digest
except ImportError:  # pragma: no cover (a Python built without it)
    from hashlib import blake2b as _digest

__all__ = ["MAX_BYTES", "MAX_ENTRIES", "MIN_BYTES", "documents"]

MIN_BYTES = 256 * 1024  # below this, parsing is about as fast as loading an entry
MAX_ENTRIES = 64
MAX_BYTES = 512 * 1024 * 1024
_MAGIC = b"topogen-parsed-1\n"
_CHECK = 20  # bytes of the payload's digest, after the magic


def documents(size: int, digest: str, parse: Callable[[], list[Any]]) -> list[Any]:
    """parse() of a file of `size` bytes with this digest: the documents kept for it, else
    parsed and, when the file is large enough, kept."""
    if size < MIN_BYTES:
        return parse()
    docs = _load(digest)
    if docs is None:
        docs = parse()
        _store(digest, docs)
    return docs


def _load(digest: str) -> list[Any] | None:
    """The documents kept for a file whose bytes have this digest, or None."""
    file = _entry(digest)
    if file is None:
        return None
    try:
        data = file.read_bytes()
    except OSError:
        return None
    head = len(_MAGIC) + _CHECK
    payload = memoryview(data)[head:]
    if (
        data[: len(_MAGIC)] != _MAGIC
        or _digest(payload, digest_size=_CHECK).digest() != data[len(_MAGIC) : head]
    ):
        return None
    try:
        docs = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
    if type(docs) is not list:
        return None
    with contextlib.suppress(OSError):
        os.utime(file)  # recently used: removed last
    return docs


def _store(digest: str, docs: list[Any]) -> None:
    """Keep a successful parse's documents (when marshal holds them as they are)."""
    file = _entry(digest)
    if file is None:
        return
    try:
        payload = marshal.dumps(docs)
    except ValueError:  # a value marshal cannot hold (a timestamp, a set's subclass ...)
        return
    if len(payload) > MAX_BYTES // 4:
        return
    check = _digest(payload, digest_size=_CHECK).digest()
    write_atomically(file, b"".join((_MAGIC, check, payload)))
    _evict(file.parent)


def _entry(digest: str) -> Path | None:
    if os.environ.get("TOPOGEN_PARSE_CACHE", "") == "0":
        return None
    root = cache_root()
    tag = _parser_tag()
    if root is None or tag is None:
        return None
    return root / "parsed" / f"{tag}-{digest}.marshal"


@cache
def _parser_tag() -> str | None:
    """What the documents of some bytes depend on besides them (None: unknown, no cache)."""
    import yaml

    from topogen import yamlfast, yamltext

    h = _digest(digest_size=8)
    libyaml = getattr(getattr(yaml, "_yaml", None), "get_version_string", lambda: "")()
    versions = f"{sys.implementation.cache_tag} {sys.hexversion} {yaml.__version__} {libyaml}"
    h.update(versions.encode())
    for module in (yamltext, yamlfast, sys.modules[__name__]):
        try:
            h.update(Path(module.__file__ or "").read_bytes())
        except OSError:
            return None
    return h.hexdigest()


def _evict(folder: Path) -> None:
    """The least recently used entries removed past MAX_ENTRIES or MAX_BYTES."""
    entries = []
    with contextlib.suppress(OSError), os.scandir(folder) as it:
        for e in it:
            if e.name.endswith(".marshal") and not e.name.startswith("."):
                with contextlib.suppress(OSError):
                    st = e.stat()
                    entries.append((st.st_mtime_ns, st.st_size, e.path))
    entries.sort(reverse=True)  # the most recent first
    total = 0
    for n, (_, size, path) in enumerate(entries):
        total += size
        if n >= MAX_ENTRIES or total > MAX_BYTES:
            with contextlib.suppress(OSError):
                os.unlink(path)
