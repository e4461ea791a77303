"""bench/measure.py's tree_digest: what the bench's "identical runs" column compares."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from measure import tree_digest  # noqa: E402


def _tree(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def test_equal_trees_have_one_digest(tmp_path: Path) -> None:
    files = {"policies/a.yaml": b"a: 1\n", "kustomize/base/k.yaml": b"k: 2\n"}
    assert tree_digest(_tree(tmp_path / "one", files)) == tree_digest(
        _tree(tmp_path / "two", dict(reversed(files.items())))
    )


def test_a_byte_a_path_or_a_file_more_changes_the_digest(tmp_path: Path) -> None:
    files = {"policies/a.yaml": b"a: 1\n", "policies/b.yaml": b"b: 2\n"}
    base = tree_digest(_tree(tmp_path / "base", files))
    variants = {
        "byte": {**files, "policies/b.yaml": b"b: 3\n"},
        "path": {"policies/a.yaml": b"a: 1\n", "policies/c.yaml": b"b: 2\n"},
        "more": {**files, "policies/c.yaml": b""},
        # the separators keep a path's end from reading as a file's start
        "moved": {"policies/a.yaml": b"a: 1\npolicies/b.yaml", "policies/b.yaml": b"b: 2\n"},
    }
    digests = {name: tree_digest(_tree(tmp_path / name, v)) for name, v in variants.items()}
    assert base not in digests.values()
    assert len(set(digests.values())) == len(variants)


def test_an_empty_tree_is_not_a_written_one(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert tree_digest(tmp_path / "empty") != tree_digest(
        _tree(tmp_path / "written", {"policies/a.yaml": b""})
    )
