"""digests.py: the same SHA-256 hex digests before and after it switches to hashlib's
(past SMALL_INPUT bytes of a run), and SHA-1 as hashlib gives it."""

from __future__ import annotations

import hashlib
import importlib

import pytest

import topogen.digests as digests


@pytest.fixture
def fresh() -> object:
    """The module as a run starts it (no byte hashed yet)."""
    return importlib.reload(digests)


def test_sha256_is_hashlibs_on_both_sides_of_the_switch(fresh: object) -> None:
    mod = digests
    chunk = bytes(range(256)) * 1024  # 256 KiB
    seen = []
    for i in range(8):  # 2 MiB in all: the switch happens on the way
        data = chunk + bytes([i])
        seen.append(mod._fast is not None)
        assert mod.sha256_hex(data) == hashlib.sha256(data).hexdigest()
    assert not seen[0] and seen[-1], "the run switched to hashlib's past SMALL_INPUT"
    assert mod.sha256_hex(b"") == hashlib.sha256(b"").hexdigest()


def test_small_runs_do_not_load_openssl_for_it(fresh: object) -> None:
    mod = digests
    for n in (0, 1, 1000, mod.SMALL_INPUT // 2):
        assert mod.sha256_hex(b"a" * n) == hashlib.sha256(b"a" * n).hexdigest()
    assert mod._fast is None


def test_sha1(fresh: object) -> None:
    assert digests.sha1_hex(b"jobset") == hashlib.sha1(b"jobset").hexdigest()
