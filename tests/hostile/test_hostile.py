"""Hostile inputs (cases.py): each one exits with its code, says one line on stderr that
names what is wrong, and leaves the output tree exactly as it was.

In process with click's CliRunner, except the cases that need permissions to mean
something: those run as uid 999 in a subprocess (root reads everything).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from tooling import REPO
from topogen.cli import main
from unprivileged import as_uid_999, launcher_dir

from .cases import CASES, Case
from .fake_apiserver import EMPTY, fake_apiserver, kubeconfig, with_items

EXAMPLE = REPO / "examples" / "zone-split"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example's output tree, rendered once from its good inputs."""
    out = tmp_path_factory.mktemp("rendered") / "out"
    result = CliRunner().invoke(
        main, ["render", "-c", str(EXAMPLE / "topogen.yaml"), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def unprivileged_bin() -> Iterator[Path]:
    folder = launcher_dir()
    yield folder
    if folder.name.startswith("topogen-launcher-"):
        shutil.rmtree(folder, ignore_errors=True)


def stored(out: Path) -> dict[str, bytes | str]:
    """Everything under out as stored: files by content, symlinks by target."""
    found: dict[str, bytes | str] = {}
    if not out.exists():
        return found
    for p in sorted(out.rglob("*")):
        rel = p.relative_to(out).as_posix()
        if p.is_symlink():
            found[rel] = "-> " + os.readlink(p)
        elif p.is_file():
            found[rel] = p.read_bytes()
        elif p.is_dir():
            found[rel] = "dir"
        else:
            found[rel] = "special"
    return found


def _copy(case: Case, base: Path, rendered: Path) -> Path:
    root = base / "repo"
    shutil.copytree(EXAMPLE, root)
    shutil.copytree(rendered, root / "out", symlinks=True)
    for file, anchor, new in case.replace:
        text = (root / file).read_text()
        assert text.count(anchor) >= 1, f"{case.id}: anchor {anchor!r} not in {file}"
        (root / file).write_text(text.replace(anchor, new, 1))
    for file, content in case.write.items():
        path = root / file
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    if case.prepare is not None:
        case.prepare(root)
    return root


def _argv(case: Case, root: Path) -> list[str]:
    return [a.format(root=root, out=root / "out") for a in case.argv]


def _run(case: Case, root: Path, bin_dir: Path | None) -> tuple[int, str]:
    argv = _argv(case, root)
    if bin_dir is None:
        result = CliRunner().invoke(main, argv)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result.exit_code, result.stderr
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}
    proc = subprocess.run(
        as_uid_999(["topogen", *argv]), env=env, capture_output=True, text=True, timeout=120
    )
    return proc.returncode, proc.stderr


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input(
    case: Case, rendered: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    base = tmp_path
    bin_dir = None
    if case.as_user:
        bin_dir = request.getfixturevalue("unprivileged_bin")
        base = Path(tempfile.mkdtemp(prefix="topogen-hostile-", dir="/tmp"))
        base.chmod(0o755)
    try:
        root = _copy(case, base, rendered)
        before = stored(root / "out")
        lock = None
        if case.id == "tree-locked":
            lock = os.open(root / "out", os.O_RDONLY)
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            code, err = _run(case, root, bin_dir)
        finally:
            if lock is not None:
                os.close(lock)
        lines = err.strip().splitlines()
        assert "Traceback" not in err and "internal error" not in err, err
        assert code == case.code, err
        if case.code == 0:
            assert not [ln for ln in lines if "error" in ln], err
            return
        assert len(lines) == 1, f"{case.id}: stderr is not one line:\n{err}"
        assert lines[0].startswith("topogen: error: "), lines[0]
        assert case.says in lines[0], lines[0]
        assert stored(root / "out") == before, f"{case.id}: the output tree changed"
    finally:
        if case.as_user:
            for p in [base, *base.rglob("*")]:
                if p.is_dir() and not p.is_symlink():
                    p.chmod(0o755)
            shutil.rmtree(base, ignore_errors=True)


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 150
    assert len({c.id for c in CASES}) == len(CASES)


# --- a hostile API server: `topogen snapshot` -----------------------------------------------

NODE = "/api/v1/nodes"
SNAPSHOT_CASES = [
    ("items-not-a-list", with_items(NODE, "abc"), "returned no list of objects"),
    ("item-not-an-object", with_items(NODE, [1]), "returned no list of objects"),
    ("metadata-a-list", with_items(NODE, [{"metadata": []}]), "Node without metadata.name"),
    ("label-an-int", with_items(NODE, [{"metadata": {"name": "n", "labels": {"a": 1}}}]),
     "must be a string"),
    ("name-with-nul", with_items(NODE, [{"metadata": {"name": "n\u0000x"}}]),
     "is no Kubernetes name"),
    ("bad-quantity", with_items(NODE, [{"metadata": {"name": "n"},
                                        "status": {"allocatable": {"cpu": "16000K"}}}]),
     "is not a quantity"),
    ("zone-with-colon", with_items(NODE, [{"metadata": {"name": "n", "labels": {
        "topology.kubernetes.io/zone": "a:b"}}}]), "label value 'a:b'"),
    ("not-json", {**EMPTY, NODE: (200, b"{not json")}, "returned no JSON"),
    ("server-error", {**EMPTY, NODE: (500, b'{"kind":"Status","message":"boom"}')}, "500"),
    ("forbidden", {**EMPTY, NODE: (403, b'{"kind":"Status","message":"no"}')}, "403 Forbidden"),
    ("unauthorized", {**EMPTY, NODE: (401, b'{"kind":"Status"}')}, "401"),
    ("no-nodes-api", {k: v for k, v in EMPTY.items() if k != NODE}, "does not serve"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("routes", "says"), [c[1:] for c in SNAPSHOT_CASES], ids=[c[0] for c in SNAPSHOT_CASES]
)
def test_hostile_api_server(
    routes: dict[str, tuple[int, bytes]], says: str, tmp_path: Path
) -> None:
    target = tmp_path / "clusters" / "lab" / "snapshot.yaml"
    target.parent.mkdir(parents=True)
    target.write_text("# the committed snapshot\n")
    with fake_apiserver(routes) as url:
        config = kubeconfig(tmp_path / "kubeconfig", url)
        result = CliRunner().invoke(
            main, ["snapshot", "--kubeconfig", str(config), "-o", str(target), "--timeout", "120"]
        )
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("topogen: error: "), result.stderr
    assert says in lines[0] and "Traceback" not in result.stderr
    assert target.read_text() == "# the committed snapshot\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["snapshot.yaml"]


@pytest.mark.parametrize("where", ["under-a-file", "a-folder", "read-only"])
def test_snapshot_output_that_cannot_be_written(where: str, tmp_path: Path) -> None:
    base = tmp_path
    if where == "read-only":
        if os.geteuid() != 0:
            pytest.skip("needs root to run as uid 999")
        base = Path(tempfile.mkdtemp(prefix="topogen-hostile-", dir="/tmp"))
        base.chmod(0o755)
    try:
        (base / "file").write_text("x")
        (base / "ro").mkdir(mode=0o555)
        output = {
            "under-a-file": base / "file" / "s.yaml",
            "a-folder": base / "ro",
            "read-only": base / "ro" / "s.yaml",
        }[where]
        with fake_apiserver(EMPTY) as url:
            config = kubeconfig(base / "kubeconfig", url)
            (base / "kubeconfig").chmod(0o644)
            argv = ["snapshot", "--kubeconfig", str(config), "-o", str(output)]
            if where == "read-only":
                proc = subprocess.run(
                    as_uid_999(["topogen", *argv]),
                    env={"PATH": f"{launcher_dir()}:/usr/bin:/bin", "HOME": "/tmp"},
                    capture_output=True, text=True, timeout=120,
                )  # fmt: skip
                code, err = proc.returncode, proc.stderr
            else:
                result = CliRunner().invoke(main, argv)
                code, err = result.exit_code, result.stderr
        lines = [ln for ln in err.strip().splitlines() if ln.startswith("topogen: error")]
        assert code == 2, err
        assert len(err.strip().splitlines()) == 1 and lines, err
        assert "Traceback" not in err and (base / "file").read_text() == "x"
        assert list((base / "ro").iterdir()) == []
    finally:
        if where == "read-only":
            (base / "ro").chmod(0o755)
            shutil.rmtree(base, ignore_errors=True)
