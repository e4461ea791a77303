"""sources/yamlio.py: within one command a file read again (a snapshot: its nodes, then
its running pods) comes from the first read while its stat is the same; a changed file,
or a new command (new_run), reads it again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from topogen.cli import main
from topogen.sources import yamlio


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files whose bytes are read."""
    seen: list[str] = []
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        seen.append(self.name)
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    yamlio.new_run()
    return seen


def _docs(path: Path) -> list[object]:
    return [d.data for d in yamlio.iter_documents([path])]


def test_a_file_read_again_in_a_run_is_not_read_again(tmp_path: Path, reads: list[str]) -> None:
    f = tmp_path / "a.yaml"
    f.write_text("kind: A\n---\nkind: B\n")
    assert _docs(f) == _docs(f) == [{"kind": "A"}, {"kind": "B"}]
    assert reads == ["a.yaml"]


def test_a_changed_file_is_read_again(tmp_path: Path, reads: list[str]) -> None:
    f = tmp_path / "a.yaml"
    f.write_text("kind: A\n")
    assert _docs(f) == [{"kind": "A"}]
    f.write_text("kind: B\n")  # the same size; its times moved on (set, not left to the clock)
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert _docs(f) == [{"kind": "B"}]
    assert reads == ["a.yaml", "a.yaml"]


def test_a_new_run_reads_every_file_again(tmp_path: Path, reads: list[str]) -> None:
    f = tmp_path / "a.yaml"
    f.write_text("kind: A\n")
    _docs(f)
    yamlio.new_run()
    _docs(f)
    assert reads == ["a.yaml", "a.yaml"]


def test_every_command_is_a_new_run(tmp_path: Path, reads: list[str]) -> None:
    f = tmp_path / "a.yaml"
    f.write_text("kind: A\n")
    _docs(f)
    assert CliRunner().invoke(main, ["completion", "bash"]).exit_code == 0  # reads no file
    _docs(f)
    assert reads == ["a.yaml", "a.yaml"]
