"""SHA-1 and SHA-256 hex digests from CPython's own small hash modules (_sha1, _sha256):
hashlib loads OpenSSL first, some 4 ms of a run. Past 1 MiB of a run's SHA-256 input
(a fleet's render digests every file it writes, 14 MB), hashlib's: OpenSSL's is about
five times faster, which pays for loading it from about 2 MB on. The same digests either
way; hashlib's where a Python is built without those modules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    from _sha1 import sha1 as _sha1  # type: ignore[import-not-found]
    from _sha256 import sha256 as _sha256  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover (a Python built without them)
    from hashlib import sha1 as _sha1
    from hashlib import sha256 as _sha256

__all__ = ["sha1_hex", "sha256_hex"]

SMALL_INPUT = 1 << 20  # SHA-256 input of a run hashed without loading OpenSSL

_hashed = 0  # bytes hashed with _sha256 so far
_fast: Callable[[bytes], Any] | None = None


def sha1_hex(data: bytes) -> str:
    """As the operators' controllers name objects with it (JobSet, LeaderWorkerSet)."""
    return str(_sha1(data).hexdigest())


def sha256_hex(data: bytes) -> str:
    global _hashed, _fast
    if _fast is None:
        _hashed += len(data)
        if _hashed <= SMALL_INPUT:
            return str(_sha256(data).hexdigest())
        from hashlib import sha256

        _fast = sha256
    return str(_fast(data).hexdigest())
