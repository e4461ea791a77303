"""The start-up caches' file format (topogen/packfile.py): what is written is read back,
item for item, and a damaged, truncated or foreign file reads as empty (or without the
items it no longer holds), never as other bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from topogen.packfile import Pack, write_pack

MAGIC = b"topogen-test-1\n"
ITEMS = {
    "b": (("meta", 1, True), b"\x00bytes of b"),
    "a": (None, b""),
    "c": (7, bytes(range(256)) * 40),
}


def test_what_is_written_is_read_back(tmp_path: Path) -> None:
    file = tmp_path / "f.marshal"
    write_pack(file, MAGIC, ITEMS)
    pack = Pack(file, MAGIC)
    assert set(pack.index) == set(ITEMS)
    for name, (meta, data) in ITEMS.items():
        assert pack.meta(name) == meta
        assert pack.bytes(name) == data
    assert pack.meta("missing") is None and pack.bytes("missing") == b""
    assert not list(tmp_path.glob(".tmp-*"))


def test_no_file_and_another_format_read_as_empty(tmp_path: Path) -> None:
    assert not Pack(tmp_path / "none", MAGIC).index
    assert not Pack(None, MAGIC).index
    file = tmp_path / "f.marshal"
    write_pack(file, MAGIC, ITEMS)
    assert not Pack(file, b"topogen-other-1\n").index


@pytest.mark.parametrize("keep", [0, 5, len(MAGIC) + 3, len(MAGIC) + 20, -10])
def test_a_truncated_file_loses_what_it_no_longer_holds(tmp_path: Path, keep: int) -> None:
    file = tmp_path / "f.marshal"
    write_pack(file, MAGIC, ITEMS)
    data = file.read_bytes()
    file.write_bytes(data[:keep])
    pack = Pack(file, MAGIC)
    for name in pack.index:  # what is still listed reads back whole
        assert pack.bytes(name) == ITEMS[name][1]
    if keep == -10:  # the index is whole: only the last item's end is gone
        assert set(pack.index) == {"a", "b"}


def test_a_damaged_index_reads_as_empty(tmp_path: Path) -> None:
    file = tmp_path / "f.marshal"
    write_pack(file, MAGIC, ITEMS)
    data = bytearray(file.read_bytes())
    data[len(MAGIC) + 8 : len(MAGIC) + 16] = b"\xff" * 8
    file.write_bytes(bytes(data))
    assert not Pack(file, MAGIC).index
