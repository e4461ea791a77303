"""SHA-1 and SHA-256 hex digests from CPython's own small hash modules (_sha1, _sha256):
hashlib loads OpenSSL first, some 3.5 ms of a fleet's run. The same digests either way;
hashlib's where a Python is built without those modules."""

from __future__ import annotations

try:
    from _sha1 import sha1 as _sha1  # type: ignore[import-not-found]
    from _sha256 import sha256 as _sha256  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover (a Python built without them)
    from hashlib import sha1 as _sha1
    from hashlib import sha256 as _sha256

__all__ = ["sha1_hex", "sha256_hex"]


def sha1_hex(data: bytes) -> str:
    """As the operators' controllers name objects with it (JobSet, LeaderWorkerSet)."""
    return str(_sha1(data).hexdigest())


def sha256_hex(data: bytes) -> str:
    return str(_sha256(data).hexdigest())
