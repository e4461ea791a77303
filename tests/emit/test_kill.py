"""A render killed (SIGKILL) at a random moment leaves each file old or new, and the next
topogen command (a diff, or the next render) finishes or rolls back the killed one from
its journal: the whole old tree or the whole new one, nothing left behind.

The tree: zone-split's group copied into 30 namespaces (about 400 files). Renders of two
configs that differ in every policy (Audit, Enforce) alternate in one output folder, as
subprocesses; most are killed, some at a uniformly random time, most at a random moment
after the journal's working folder appeared (so the journal, its commit, the renames and
the clean-up are hit, not only the analysis before them). test_journal.py kills a render
at each of its steps.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers import rendered_tree
from tooling import REPO
from unprivileged import VENV_BIN

EXAMPLE = REPO / "examples" / "zone-split"
GROUPS = 33
KILLS = 8


def _inputs(root: Path) -> tuple[Path, Path]:
    docs = [
        d
        for f in sorted((EXAMPLE / "workloads" / "before").glob("*.yaml"))
        for d in yaml.safe_load_all(f.read_text())
        if d
    ]
    policies = [d for d in yaml.safe_load_all((EXAMPLE / "cilium/zone-policies.yaml").read_text())]
    cfg: dict[str, Any] = yaml.safe_load((EXAMPLE / "topogen.yaml").read_text())
    (root / "cluster").mkdir(parents=True)
    (root / "cluster" / "nodes.yaml").write_text((EXAMPLE / "cluster/nodes.yaml").read_text())
    (root / "workloads").mkdir()
    (root / "cilium").mkdir()
    groups = []
    for i in range(GROUPS):
        ns = f"ml-{i:02d}"
        out = []
        for d in docs:
            d = yaml.safe_load(yaml.safe_dump(d))
            if d["kind"] == "Namespace":
                d["metadata"]["name"] = ns
            else:
                d["metadata"]["namespace"] = ns
            out.append(d)
        (root / "workloads" / f"{ns}.yaml").write_text(yaml.safe_dump_all(out))
        for d in policies:
            d["metadata"]["namespace"] = ns
        (root / "cilium" / f"{ns}.yaml").write_text(yaml.safe_dump_all(policies))
        groups.append({**cfg["groups"][0], "name": f"train-{i:02d}", "namespaces": [ns]})
    cfg["groups"], cfg["workloads"] = groups, ["workloads/"]
    (root / "audit.yaml").write_text(yaml.safe_dump(cfg))
    (root / "enforce.yaml").write_text(yaml.safe_dump({**cfg, "validationAction": "Enforce"}))
    return root / "audit.yaml", root / "enforce.yaml"


def _render(config: Path, out: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "TOPOGEN_JOBS": "1"}
    return subprocess.Popen(
        [str(VENV_BIN / "topogen"), "render", "-c", str(config), "--out", str(out)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(config: Path, out: Path) -> str:
    proc = _render(config, out)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return err


def _diff(config: Path, out: Path) -> str:
    proc = subprocess.run(
        [str(VENV_BIN / "topogen"), "diff", "-c", str(config), "--out", str(out), "--check"],
        env={**os.environ, "TOPOGEN_JOBS": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.stderr


def _each_file_old_or_new(seen: dict[str, bytes], a: dict[str, bytes], b: dict[str, bytes]) -> bool:
    return all(seen.get(p) in (a.get(p), b.get(p)) for p in set(seen) | set(a) | set(b))


def _kill_during_write(
    proc: subprocess.Popen[str], out: Path, rng: random.Random, committed: bool
) -> bool:
    """SIGKILL once the journal is being written (or, `committed`, once it is committed and
    being carried out), after a random delay, or when the run ends by itself; True when
    the kill came while it was writing."""
    control = out / ".topogen"
    wanted = (lambda n: n == "journal") if committed else (lambda n: n.startswith("journal"))
    while proc.poll() is None:
        if control.is_dir() and any(wanted(n) for n in os.listdir(control)):
            time.sleep(rng.uniform(0, 0.02 if committed else 0.15))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return True
        time.sleep(0.0005)
    return False


@pytest.mark.slow
def test_a_killed_render_leaves_the_old_tree_or_the_new_one(tmp_path: Path) -> None:
    audit, enforce = _inputs(tmp_path)
    views = {}
    for config in (audit, enforce):
        folder = tmp_path / f"view-{config.stem}"
        _finish(config, folder)
        views[config] = rendered_tree(folder)
    assert len(views[audit]) > 300 and views[audit].keys() == views[enforce].keys()
    assert views[audit] != views[enforce]

    out = tmp_path / "out"
    _finish(audit, out)
    current, rng = audit, random.Random(20261201)
    outcomes: dict[str, int] = {"old": 0, "new": 0, "mid-write": 0, "journal": 0}
    for i in range(KILLS):
        target = enforce if current == audit else audit
        proc = _render(target, out)
        if i % 3 == 2:  # at a uniformly random time of the whole run
            timer = threading.Timer(rng.uniform(0, 4.0), proc.kill)
            timer.start()
            proc.wait(timeout=300)
            timer.cancel()
        elif _kill_during_write(proc, out, rng, committed=i % 3 == 1):
            outcomes["mid-write"] += 1
        seen = rendered_tree(out)
        assert _each_file_old_or_new(seen, views[current], views[target]), f"kill {i}: a half file"
        journalled = (out / ".topogen" / "journal").is_dir()
        outcomes["journal"] += journalled
        # the next command finishes or rolls back the killed render before anything else
        err = _diff(target, out) if i % 2 else _finish(target, out)
        if journalled:
            assert "finished a render that was interrupted" in err
        seen = rendered_tree(out)
        assert seen in (views[current], views[target]), f"kill {i}: a mix of two trees"
        outcomes["old" if seen == views[current] else "new"] += 1
        assert sorted(os.listdir(out / ".topogen")) == ["MANIFEST"]
        # and the next render (of either config) succeeds and leaves nothing behind
        target = enforce if seen == views[audit] else audit
        _finish(target, out)
        assert rendered_tree(out) == views[target]
        assert sorted(os.listdir(out / ".topogen")) == ["MANIFEST"]
        current = target
    # the kills did land inside the write (else the check above proves little)
    assert outcomes["mid-write"] >= KILLS // 2 and outcomes["journal"] >= 1, outcomes
