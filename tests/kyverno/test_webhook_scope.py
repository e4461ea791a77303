"""The webhooks Kyverno registers for the generated CEL policies are as narrow as the group.

Two real-Kyverno checks, no cluster needed:
- registration: `kyverno-webhooks` (tools/kyverno-webhooks) runs Kyverno v1.19.1's own
  webhook-configuration builders (the code its admission controller reconciles
  Mutating/ValidatingWebhookConfigurations with) on the rendered policies. Each policy
  gets its own `...-fail-finegrained-<policy>` webhook carrying the policy's
  matchConstraints.namespaceSelector/objectSelector (merged with Kyverno's config) and
  its matchConditions: the API server never calls Kyverno for a pod outside the group's
  namespaces or without the job label, so an outage blocks no other pod.
- evaluation: the Kyverno CLI applies the selectors too (a policy whose selectors exclude a
  pod that its matchConditions would take does nothing to it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from gitops.gitops_kit import copy_inputs
from tooling import REPO, require_tool
from topogen.cli import main

EXAMPLE = REPO / "examples" / "zone-split"
NAME_LABEL = "kubernetes.io/metadata.name"
GROUP_NAMESPACES = {
    "matchExpressions": [{"key": NAME_LABEL, "operator": "In", "values": ["ml-demo"]}]
}
JOB_LABEL = {"matchExpressions": [{"key": "app", "operator": "Exists"}]}
# what the Helm chart's defaults put in Kyverno's ConfigMap (values.yaml config.webhooks,
# excludeKyvernoNamespace: true; templates/config/_helpers.tpl kyverno.config.webhooks)
CHART_WEBHOOKS = json.dumps(
    {
        "namespaceSelector": {
            "matchExpressions": [
                {"key": NAME_LABEL, "operator": "NotIn", "values": ["kube-system"]},
                {"key": NAME_LABEL, "operator": "NotIn", "values": ["kyverno"]},
            ]
        }
    }
)


@pytest.fixture(scope="module")
def policies(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example's policies with Audit at admission (kyverno.auditAtAdmission), so the
    ValidatingPolicy has a webhook too (as rendered by default it has none: Audit runs in
    background scans, test_live_kyverno_reports.py)."""
    out = tmp_path_factory.mktemp("render")
    inputs = tmp_path_factory.mktemp("inputs")
    copy_inputs(EXAMPLE, inputs, ["cluster/nodes.yaml", "cilium/", "workloads/before/"])
    raw = yaml.safe_load((EXAMPLE / "topogen.yaml").read_text())
    raw["kyverno"] = {"auditAtAdmission": True}
    (inputs / "topogen.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    result = CliRunner().invoke(
        main, ["render", "-c", str(inputs / "topogen.yaml"), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    folder = out / "policies" / "lab" / "kyverno"
    assert len(list(folder.glob("topogen-*.yaml"))) == 2
    return folder


def _webhooks(policies: Path, tmp: Path, config: dict[str, str] | None = None) -> dict[str, Any]:
    tool = require_tool("kyverno-webhooks")
    folder = tmp / "policies"
    folder.mkdir()
    for p in policies.glob("topogen-*.yaml"):
        shutil.copy(p, folder / p.name)
    out = tmp / "webhooks.json"
    env = {**os.environ, "TOPOGEN_POLICIES": str(folder), "TOPOGEN_WEBHOOKS_OUT": str(out)}
    if config is not None:
        env["TOPOGEN_KYVERNO_CONFIG"] = json.dumps(config)
    run = subprocess.run(
        [str(tool), "-test.run", "^TestTopogenWebhooks$"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def _ours(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {w["name"]: w for w in config["webhooks"] or [] if "topogen-" in w["name"]}


def test_each_policy_gets_a_webhook_scoped_to_the_group(policies: Path, tmp_path: Path) -> None:
    hooks = _webhooks(policies, tmp_path)
    mutating, validating = _ours(hooks["mutating"]), _ours(hooks["validating"])
    assert sorted(mutating) == [
        "mpol.validate.kyverno.svc-fail-finegrained-topogen-ml-training-mutate",
    ]
    assert sorted(validating) == [
        "vpol.validate.kyverno.svc-fail-finegrained-topogen-ml-training-validate"
    ]
    for w in [*mutating.values(), *validating.values()]:
        assert w["failurePolicy"] == "Fail"
        assert w["namespaceSelector"] == GROUP_NAMESPACES
        assert w["objectSelector"] == JOB_LABEL
        assert {r["resources"][0] for r in w["rules"]} == {"pods"}
        names = [c["name"] for c in w["matchConditions"]]
        assert "in-group-namespaces" in names and "is-training-pod" in names
    # nothing else of Kyverno's is registered for these policies
    others = [w["name"] for h in hooks.values() for w in h["webhooks"] or [] if w not in
              [*mutating.values(), *validating.values()]]  # fmt: skip
    assert not [n for n in others if "pol.validate" in n]


def test_kyvernos_own_selector_is_merged_in(policies: Path, tmp_path: Path) -> None:
    """With the Helm chart's config, the webhooks also leave kube-system (and Kyverno's own
    namespace) out: a group there is never enforced (render warns about system namespaces)."""
    hooks = _webhooks(policies, tmp_path, {"webhooks": CHART_WEBHOOKS})
    for w in [*_ours(hooks["mutating"]).values(), *_ours(hooks["validating"]).values()]:
        exprs = w["namespaceSelector"]["matchExpressions"]
        assert GROUP_NAMESPACES["matchExpressions"][0] in exprs
        assert {"key": NAME_LABEL, "operator": "NotIn", "values": ["kube-system"]} in exprs
        assert w["objectSelector"] == JOB_LABEL


POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "coordinator",
        "namespace": "ml-demo",
        "labels": {"app": "job-1", "role": "coordinator"},
    },
    "spec": {"containers": [{"name": "c", "image": "x"}]},
}


def _applied(kyverno: Path, policy: dict[str, Any], tmp: Path) -> bool:
    (tmp / "policy.yaml").write_text(yaml.safe_dump(policy))
    (tmp / "pod.yaml").write_text(yaml.safe_dump(POD))
    run = subprocess.run(
        [str(kyverno), "apply", str(tmp / "policy.yaml"), "--resource", str(tmp / "pod.yaml"),
         "-o", str(tmp / "out")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    return "pass: 0," not in run.stdout


@pytest.mark.parametrize(
    ("where", "value"),
    [(None, None), ("namespaceSelector", "not-ml-demo"), ("objectSelector", "no-such-label")],
    ids=["as-rendered", "other-namespace-selector", "other-object-selector"],
)
def test_the_cli_evaluates_the_selectors(
    policies: Path, tmp_path: Path, where: str | None, value: str | None
) -> None:
    kyverno = require_tool("kyverno")
    policy = yaml.safe_load((policies / "topogen-ml-training-mutate.yaml").read_text())
    constraints = policy["spec"]["matchConstraints"]
    if where == "namespaceSelector":
        constraints[where]["matchExpressions"][0]["values"] = [value]
    elif where == "objectSelector":
        constraints[where]["matchExpressions"][0]["key"] = value
    # the matchConditions still take the pod: only the selector can leave it out
    assert _applied(kyverno, policy, tmp_path) is (where is None)
