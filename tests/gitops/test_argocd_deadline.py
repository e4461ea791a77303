"""Time as Argo CD v3.6.2 limits a plugin: the request's deadline (the application
controller's --repo-server-timeout-seconds, 60 s by default) and nothing else. At the
deadline the CMP server sends SIGTERM to the command's process group (SIGKILL 5 s later);
topogen-cmp's own budget (TOPOGEN_CMP_TIMEOUT, 45 s in repo-server-sidecar.yaml) runs out
first and says so.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tooling import REPO

from .argocd_kit import (
    DEADLINE,
    FAILED,
    Sidecar,
    generate,
    plugin_application,
    sidecar,
    untracked,
    wait_gone,
)
from .gitops_kit import ZONE_SPLIT, ident, kustomize, render

KILL_GRACE = 5  # Argo CD's SIGTERM -> SIGKILL delay (cmpserver/plugin runCommand)


pytestmark = pytest.mark.tools  # tools/argocd-cmp


@pytest.fixture(scope="module")
def side() -> Iterator[Sidecar]:
    with sidecar() as running:
        yield running


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shutil.copytree(ZONE_SPLIT, tmp_path_factory.mktemp("deadline") / "repo")


def _command_started(side: Sidecar, since: int) -> bool:
    """The CMP server logged the start of topogen-cmp (runCommand logs its arguments)."""
    side.calls_until_ping()  # reads the log past everything logged before it
    return any(e.get("msg") == "topogen-cmp" and "dir" in e for e in side.log[since:])


def _escaped(side: Sidecar) -> list[int]:
    """Processes of the plugin left in a process group of their own, out of reach of the
    group kill: a live group leader in the sidecar's session that the server did not
    start. The command the server started leads its group by design: it may still run
    when the client's deadline comes first on a loaded machine, or be a zombie not yet
    reaped; neither has escaped."""
    out = []
    for pid in side.session():
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{pid}/stat").read_text()
            state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
            if state != "Z" and int(ppid) != side.process.pid and os.getpgid(pid) == pid:
                out.append(pid)
    return out


def test_argocd_kills_a_render_past_the_deadline(side: Sidecar, medium_fleet: Path) -> None:
    """A deadline that runs out while the render runs (found by halving or growing it: the
    command must have started and must not have finished): Argo CD kills the command and
    reports it, every process of the render is in the group it kills, and none is left."""
    app = plugin_application(env={"TOPOGEN_CLUSTER": _cluster(medium_fleet)})
    deadline = 2.0
    for _ in range(12):
        since = len(side.log)
        rendered = generate(side, app, medium_fleet, deadline=deadline)
        escaped = _escaped(side)
        if rendered.error == "":
            deadline /= 2  # rendered in time: a shorter deadline
        elif not _command_started(side, since):
            deadline *= 1.5  # ran out before the command started: a longer one
        else:
            break
    else:
        pytest.fail(f"no deadline ran out during the render (last: {deadline} s)")
    assert rendered.objects == []
    # Argo CD's report: the command killed at the server's deadline (100 ms before the
    # client's), or the client's own deadline when the answer came too late (gRPC's
    # DeadlineExceeded, whose text on a loaded machine may be the stream's reset instead:
    # "stream terminated by RST_STREAM with error code: CANCEL")
    assert any(
        s in rendered.error
        for s in (
            "`topogen-cmp` failed signal: killed",
            "context deadline exceeded",
            "code = DeadlineExceeded",
        )
    ), rendered.error
    assert escaped == []
    assert wait_gone(side.session(), KILL_GRACE + 10) == []


def test_argocd_render_budget_runs_out_first_with_its_reason(repo: Path) -> None:
    """The budget below the deadline: topogen-cmp stops the render and says why, in the
    error Argo CD returns (a budget of 0.05 s: no render can finish in it)."""
    with sidecar(env={"TOPOGEN_CMP_TIMEOUT": "0.05"}) as side:
        rendered = generate(side, plugin_application(), repo)
        assert rendered.objects == []
        found = FAILED.search(rendered.error)
        assert found, rendered.error
        assert found[1] == "124"
        assert found[2].startswith(
            "topogen: error: the render of cluster lab took longer than its budget of 0.05 s "
            "(TOPOGEN_CMP_TIMEOUT, kept below Argo CD's request deadline"
        )
        assert wait_gone(side.session(), 30) == []


def test_argocd_budget_stays_below_the_deadline() -> None:
    patch = yaml.safe_load((REPO / "argocd" / "repo-server-sidecar.yaml").read_text())
    (container,) = patch["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert 0 < float(env["TOPOGEN_CMP_TIMEOUT"]) <= DEADLINE - 10
    assert (
        f'budget="${{TOPOGEN_CMP_TIMEOUT:-{env["TOPOGEN_CMP_TIMEOUT"]}}}"'
        in (REPO / "argocd" / "topogen-cmp").read_text()
    )


@pytest.fixture(scope="module")
def medium_fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bench's medium fleet (1000 nodes, 500 policies, 100 jobs) in `kubectl get -o yaml`
    form, with its rendered tree: the larger of its two inputs."""
    out = tmp_path_factory.mktemp("medium")
    subprocess.run(
        [sys.executable, str(REPO / "bench" / "fleet.py"), "--size", "medium", "--out", str(out)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    repo = out / "kubectl"
    render(repo / "topogen.yaml", repo)
    return repo


def _cluster(fleet: Path) -> str:
    config = yaml.safe_load((fleet / "topogen.yaml").read_text())
    (cluster,) = [c["name"] for c in config["clusters"]]
    return str(cluster)


def test_argocd_renders_the_medium_fleet_inside_the_default_deadline(
    side: Sidecar, medium_fleet: Path
) -> None:
    """Through Argo CD's code with its default deadline (60 s, the budget 45 s): the time it
    took is in docs/guides/argocd.md, measured, not asserted here."""
    cluster = _cluster(medium_fleet)
    app = plugin_application(env={"TOPOGEN_CLUSTER": cluster})
    rendered = generate(side, app, medium_fleet)
    assert rendered.error == ""
    built = sorted(kustomize(medium_fleet / "kustomize" / "overlays" / cluster), key=ident)
    assert untracked(rendered) == built
    print(f"medium fleet through Argo CD: {rendered.seconds:.2f} s of {DEADLINE:.0f} s")
