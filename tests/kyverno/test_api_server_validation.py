"""Enforce hands validation to the API server: the ValidatingPolicy asks Kyverno to generate
a ValidatingAdmissionPolicy (config kyverno.generateValidatingAdmissionPolicy); Audit, a
group in a namespace Kyverno leaves out, and the key set to false keep Kyverno's webhook.
What Kyverno and the API server then do: tests/live/test_live_kyverno.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from gitops.gitops_kit import copy_inputs
from tooling import REPO, require_tool
from topogen.cli import main
from topogen.config import load_config
from topogen.pipeline.analyze import analyze
from topogen.render.intent import intent_for
from topogen.render.kyverno import API_SERVER_LABEL, kyverno_policies

EXAMPLE = REPO / "examples" / "zone-split"
LABEL, ALLOWED = API_SERVER_LABEL


def _config(tmp: Path, **keys: Any) -> Path:
    raw = yaml.safe_load((EXAMPLE / "topogen.yaml").read_text())
    copy_inputs(EXAMPLE, tmp, ["cluster/nodes.yaml", "cilium/", "workloads/before/"])
    raw.update(keys)
    config = tmp / "topogen.yaml"
    config.write_text(yaml.safe_dump(raw, sort_keys=False))
    return config


def _validating(config: Path, out: Path) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["render", "-c", str(config), "--out", str(out)])
    assert result.exit_code == 0, result.output
    path = out / "policies" / "lab" / "kyverno" / "topogen-ml-training-validate.yaml"
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    return doc


@pytest.mark.parametrize(
    ("keys", "label", "enabled"),
    [
        ({"validationAction": "Enforce"}, True, True),
        ({"validationAction": "Audit"}, True, False),
        ({}, True, False),  # Audit is the default
        (
            {
                "validationAction": "Enforce",
                "kyverno": {"generateValidatingAdmissionPolicy": False},
            },
            False,
            False,
        ),
        ({"kyverno": {"generateValidatingAdmissionPolicy": True}}, True, False),
    ],
    ids=["enforce", "audit", "default", "enforce-key-off", "audit-key-on"],
)
def test_validating_policy_asks_for_a_vap_under_enforce_only(
    tmp_path: Path, keys: dict[str, Any], label: bool, enabled: bool
) -> None:
    doc = _validating(_config(tmp_path, **keys), tmp_path / "out")
    assert doc["spec"]["autogen"] == {
        "podControllers": {"controllers": []},  # Kyverno generates no VAP with pod autogen
        "validatingAdmissionPolicy": {"enabled": enabled},
    }
    assert (doc["metadata"]["labels"].get(LABEL) == ALLOWED) is label
    assert (LABEL in doc["metadata"]["labels"]) is label


@pytest.mark.parametrize(
    ("keys", "admission", "audit_component"),
    [
        ({}, False, False),  # Audit: the reports controller's background scans only
        ({"validationAction": "Enforce"}, True, False),
        ({"kyverno": {"auditAtAdmission": True}}, True, True),
        ({"validationAction": "Enforce", "kyverno": {"auditAtAdmission": False}}, True, False),
    ],
    ids=["audit", "enforce", "audit-at-admission", "enforce-key-off"],
)
def test_audit_leaves_the_admission_path_unless_asked(
    tmp_path: Path, keys: dict[str, Any], admission: bool, audit_component: bool
) -> None:
    """The policy as rendered, and what the audit and enforce Components set."""
    doc = _validating(_config(tmp_path, **keys), tmp_path / "out")
    assert doc["spec"]["evaluation"] == {
        "admission": {"enabled": admission},
        "background": {"enabled": True},
    }
    components = tmp_path / "out" / "kustomize" / "components"
    for name, expected in (("enforce", True), ("audit", audit_component)):
        text = (components / name / "kustomization.yaml").read_text()
        patches = yaml.safe_load(text)["patches"]
        ops = [op for p in patches for op in yaml.safe_load(p["patch"])]
        assert {"op": "add", "path": "/spec/evaluation/admission/enabled", "value": expected} in ops


@pytest.mark.parametrize("namespace", ["kube-system", "kube-public", "kube-node-lease", "kyverno"])
def test_a_group_where_kyverno_is_left_out_keeps_the_webhook(namespace: str) -> None:
    """Kyverno's install leaves these namespaces out of its webhooks (and its mutations):
    a ValidatingAdmissionPolicy would judge pods there that nothing mutated."""
    cfg = load_config(EXAMPLE / "topogen.yaml")
    (plan,) = analyze(cfg).plans
    intent = replace(
        intent_for(plan, "Enforce", api_server_validation=True),
        namespaces=("ml-demo", namespace),
    )
    (validating,) = [
        o for f in kyverno_policies(intent) for o in f.objects if o["kind"] == "ValidatingPolicy"
    ]
    assert validating["spec"]["autogen"]["validatingAdmissionPolicy"] == {"enabled": False}
    assert LABEL not in validating["metadata"]["labels"]


def test_unknown_kyverno_key_is_an_error(tmp_path: Path) -> None:
    config = _config(tmp_path, kyverno={"generateVAP": True})
    result = CliRunner().invoke(main, ["render", "-c", str(config), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "unknown key kyverno.generateVAP" in result.output


@pytest.mark.tools
def test_generated_kyverno_tests_pass_under_enforce(tmp_path: Path) -> None:
    """The policies as rendered for Enforce (generation on) pass their generated tests with
    the Kyverno CLI, as the Audit ones do (tests/kyverno/test_kyverno_backend.py)."""
    import subprocess

    kyverno = require_tool("kyverno")
    out = tmp_path / "out"
    doc = _validating(_config(tmp_path, validationAction="Enforce"), out)
    assert doc["spec"]["autogen"]["validatingAdmissionPolicy"] == {"enabled": True}
    folder = out / "policies" / "lab" / "kyverno"
    result = subprocess.run(
        [str(kyverno), "test", str(folder), "--remove-color"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert "0 tests failed" in result.stdout and "22 tests passed" in result.stdout
