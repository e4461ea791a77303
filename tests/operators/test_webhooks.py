"""The webhooks Kyverno registers for a group with a detached pod (a RayJob's submitter).

Kyverno v1.19.1's own webhook builders (tools/kyverno-webhooks, as tests/kyverno/
test_webhook_scope.py runs them) on the rendered RayJob policies: every policy's webhook
stays inside the group's namespaces and selects either pods with the job label or the
submitter by its own label, never every pod of the namespace.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tooling import require_tool

from .kit import NAMESPACE, render, write_config

pytestmark = pytest.mark.tools

CASE = Path(__file__).resolve().parent / "cases" / "rayjob"
NAMESPACES = {
    "matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": [NAMESPACE]}
    ]
}
JOB = {"matchExpressions": [{"key": "ray.io/cluster", "operator": "Exists"}]}
SUBMITTER = {
    "matchExpressions": [
        {"key": "ray.io/cluster", "operator": "DoesNotExist"},
        {"key": "batch.kubernetes.io/job-name", "operator": "In", "values": ["rayjob-sample"]},
    ]
}


def test_the_submitter_gets_webhooks_of_its_own(tmp_path: Path) -> None:
    """With Audit at admission (kyverno.auditAtAdmission), so the ValidatingPolicies have
    webhooks too (as rendered, Audit runs in background scans and has none)."""
    config = write_config(tmp_path, "kuberay", [CASE / "manifest.yaml"])
    raw = yaml.safe_load(config.read_text())
    raw["kyverno"] = {"auditAtAdmission": True}
    config.write_text(yaml.safe_dump(raw, sort_keys=False))
    policies = render(config, tmp_path / "o")
    folder = tmp_path / "policies"
    folder.mkdir()
    for p in policies.glob("topogen-*.yaml"):
        shutil.copy(p, folder / p.name)
    out = tmp_path / "webhooks.json"
    env = {**os.environ, "TOPOGEN_POLICIES": str(folder), "TOPOGEN_WEBHOOKS_OUT": str(out)}
    run = subprocess.run(
        [str(require_tool("kyverno-webhooks")), "-test.run", "^TestTopogenWebhooks$"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    hooks = json.loads(out.read_text())
    got = {
        w["name"].rpartition("-finegrained-")[2]: w
        for h in ("mutating", "validating")
        for w in hooks[h]["webhooks"] or []
        if "topogen-" in w["name"]
    }
    assert sorted(got) == [
        "topogen-training-detached",
        "topogen-training-detached-validate",
        "topogen-training-mutate",
        "topogen-training-validate",
    ]
    for name, w in got.items():
        assert w["failurePolicy"] == "Fail" and w["namespaceSelector"] == NAMESPACES
        assert w["objectSelector"] == (SUBMITTER if "-detached" in name else JOB), name
