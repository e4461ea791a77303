"""argocd/snapshot-cronjob.yaml's script, run against a real git remote: the token never
reaches a URL, a command line or a git config, and nothing is ever force-pushed.

`gh` and `topogen` are stand-ins on PATH (gh records what it is asked; topogen writes
the snapshot the test chooses); git is the real one, behind a shim that logs every
command line it is run with.
"""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from tooling import REPO

TOKEN = "ghp_not-a-real-token-0123456789"
SNAPSHOT = "clusters/lab/snapshot.yaml"


def _script() -> str:
    (job,) = yaml.safe_load_all((REPO / "argocd" / "snapshot-cronjob.yaml").read_text())
    (container,) = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["/bin/sh", "-ec"]
    (script,) = container["args"]
    return str(script)


def _exe(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _git(*args: str, cwd: Path) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return out.stdout.strip()


@pytest.fixture
def setup(tmp_path: Path) -> dict[str, Path]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    origin = tmp_path / "origin.git"
    seed = tmp_path / "seed"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    (seed / "clusters" / "lab").mkdir(parents=True)
    (seed / SNAPSHOT).write_text("nodes: old\n")
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "."],
        ["-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "-m", "seed"],
        ["push", "-q", str(origin), "main"],
    ):
        _git(*args, cwd=seed)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "git-argv.log"
    _exe(
        bin_dir / "git",
        f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\nexec {shutil.which("git")} "$@"\n',
    )
    _exe(
        bin_dir / "gh",
        f"#!/bin/sh\nprintf '%s\\n' \"$*\" >> {tmp_path / 'gh.log'}\n"
        f'case "$*" in "pr list"*) [ -f {tmp_path / "pr"} ] && echo 7 ;; '
        f'"pr create"*) touch {tmp_path / "pr"} ;; esac\nexit 0\n',
    )
    _exe(
        bin_dir / "topogen",
        # --out FILE, or the old spelling -o FILE
        '#!/bin/sh\n[ "$1" = snapshot ] && { [ "$2" = --out ] || [ "$2" = -o ]; } || exit 9\n'
        f'mkdir -p "$(dirname "$3")"; cat {tmp_path / "next-snapshot"} > "$3"\n',
    )
    return {"tmp": tmp_path, "origin": origin, "bin": bin_dir, "log": log}


def _run(setup: dict[str, Path], snapshot: str) -> subprocess.CompletedProcess[str]:
    tmp = setup["tmp"]
    work = tmp / "work"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir()
    (tmp / "next-snapshot").write_text(snapshot)
    env = {
        "PATH": f"{setup['bin']}:/usr/bin:/bin",
        "HOME": str(work),
        "GH_TOKEN": TOKEN,
        "REPOSITORY": "example-org/gitops",
        "REMOTE": f"file://{setup['origin']}",
        "BASE": "main",
        "CLUSTER": "lab",
        "SNAPSHOT_PATH": SNAPSHOT,
    }
    script = _script().replace("cd /work\n", f"cd {work}\n").replace("/work/", f"{work}/")
    return subprocess.run(
        ["/bin/sh", "-ec", script], env=env, capture_output=True, text=True, timeout=120
    )


def _branch(setup: dict[str, Path]) -> str:
    return _git("rev-parse", "refs/heads/topogen/snapshot-lab", cwd=setup["origin"])


def _token_nowhere(setup: dict[str, Path]) -> None:
    work = setup["tmp"] / "work"
    assert TOKEN not in setup["log"].read_text()
    for config in (work / "repo" / ".git" / "config", work / ".gitconfig"):
        if config.exists():
            assert TOKEN not in config.read_text()
    pushes = [ln for ln in setup["log"].read_text().splitlines() if ln.startswith("push")]
    assert pushes and not [p for p in pushes if "--force" in p or " -f" in p or " +" in p]


def test_a_changed_snapshot_opens_one_pull_request_and_later_adds_to_it(
    setup: dict[str, Path],
) -> None:
    first = _run(setup, "nodes: new\n")
    assert first.returncode == 0, first.stderr
    tip = _branch(setup)
    assert _git("show", f"{tip}:{SNAPSHOT}", cwd=setup["origin"]) == "nodes: new"
    gh = (setup["tmp"] / "gh.log").read_text()
    assert "auth setup-git --hostname github.com" in gh and gh.count("pr create") == 1
    _token_nowhere(setup)

    second = _run(setup, "nodes: newer\n")
    assert second.returncode == 0, second.stderr
    assert "pull request for topogen/snapshot-lab updated" in second.stdout
    new_tip = _branch(setup)
    assert _git("rev-parse", f"{new_tip}^", cwd=setup["origin"]) == tip  # fast-forward
    assert (setup["tmp"] / "gh.log").read_text().count("pr create") == 1
    _token_nowhere(setup)

    third = _run(setup, "nodes: newer\n")
    assert third.returncode == 0 and "is up to date" in third.stdout
    assert _branch(setup) == new_tip


def test_an_unchanged_snapshot_opens_nothing(setup: dict[str, Path]) -> None:
    result = _run(setup, "nodes: old\n")
    assert result.returncode == 0 and "snapshot unchanged: no pull request" in result.stdout
    with pytest.raises(subprocess.CalledProcessError):
        _branch(setup)
    assert "pr create" not in (setup["tmp"] / "gh.log").read_text()


def test_the_job_has_no_token_in_its_spec() -> None:
    text = (REPO / "argocd" / "snapshot-cronjob.yaml").read_text()
    assert "x-access-token" not in text and "${GH_TOKEN}@" not in text
    assert "--force" not in _script()
