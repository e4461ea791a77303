"""(3) and (4) of test_live_kyverno.py under Enforce: the ValidatingPolicy has Kyverno
generate a ValidatingAdmissionPolicy, and the API server validates the zone-split group's
pods itself, also while Kyverno is down.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from kyverno_harness import (
    VAP,
    VAP_BINDING,
    Kyverno,
    vap_names,
)
from kyverno_kit import (
    BEFORE,
    NAME,
    admission_reports,
    bound_zones,
    denied_by,
    install,
    render_group,
    schedule,
)
from live_harness import ControlPlane, KubeError
from live_kit import NS, create_pod_raw, docs, example_snapshot, pods_of, project, write_config
from webhook_harness import wait_admitted, wait_answered

pytestmark = [pytest.mark.slow, pytest.mark.tools]


# --- (3) and (4) under Enforce: Kyverno's generated ValidatingAdmissionPolicy ----------------


def _relabel(cp: ControlPlane, pod: Mapping[str, Any], labels: Mapping[str, str]) -> int:
    """PATCH a stored pod's labels (an UPDATE the ValidatingPolicy judges, no mutation does)."""
    ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    try:
        cp.kube().merge_patch(
            f"/api/v1/namespaces/{ns}/pods/{name}", {"metadata": {"labels": dict(labels)}}
        )
    except KubeError as exc:
        return exc.status
    return 200


def test_kyverno_enforce_validation_runs_in_the_api_server_and_holds_while_kyverno_is_down(
    kyverno_plane: tuple[ControlPlane, Kyverno], tmp_path: Path
) -> None:
    """validationAction Enforce: the ValidatingPolicy asks Kyverno to generate a
    ValidatingAdmissionPolicy (spec.autogen.validatingAdmissionPolicy.enabled). Kyverno
    v1.19.1 creates `vpol-<name>` and its binding with the policy's matchConstraints,
    matchConditions, variables and validations and the Deny action, and registers no
    webhook for the policy (its MutatingPolicies keep theirs). The zone-split group's pods
    are mutated by Kyverno and validated by the API server, land in one zone, and no
    admission report is written for the ValidatingPolicy; a mis-placed coordinator is
    rejected by the API server with the policy's message. With Kyverno gone, creating a
    group pod still fails at the MutatingPolicies' webhooks (failurePolicy Fail, as
    rendered), while the validation holds: a relabel claiming another zone is rejected by
    the API server, a harmless one is admitted, other pods are admitted as they are."""
    cp, k = kyverno_plane
    snap = example_snapshot(cp, tmp_path)
    # no garbage collector here: earlier pods' reports outlive them
    cp.kube().delete(f"/apis/reports.kyverno.io/v1/namespaces/{NS}/ephemeralreports")
    config = write_config(tmp_path, nodes=[snap], workloads=[BEFORE])
    policies = render_group(config, tmp_path / "out", "Enforce")
    (policy,) = [p for p in policies if p["kind"] == "ValidatingPolicy"]
    assert policy["spec"]["validationActions"] == ["Deny"]
    assert policy["spec"]["autogen"]["validatingAdmissionPolicy"] == {"enabled": True}
    pods = pods_of(docs(BEFORE))
    misplaced = copy.deepcopy(pods[0])
    misplaced["spec"]["nodeSelector"] = {"topology.kubernetes.io/zone": "zone-b"}
    install(k, policies, pods[0])

    vap, binding = vap_names(policy)
    generated = cp.kube().get(f"{VAP}/{vap}")["spec"]
    spec = policy["spec"]
    constraints = generated["matchConstraints"]
    for key in ("namespaceSelector", "objectSelector"):
        assert constraints[key] == spec["matchConstraints"][key], key
    assert constraints["resourceRules"] == [
        r | {"scope": "*"} for r in spec["matchConstraints"]["resourceRules"]
    ]
    for key in ("matchConditions", "variables", "validations"):
        assert generated[key] == spec[key], key
    assert generated["failurePolicy"] == "Fail"  # the API server's default; not copied
    bound = cp.kube().get(f"{VAP_BINDING}/{binding}")["spec"]
    assert bound == {"policyName": vap, "validationActions": ["Deny"]}
    assert not k.webhooks_for("validating", policy["metadata"]["name"])
    (hook,) = k.webhooks_for("mutating", f"{NAME}-mutate")
    assert hook["failurePolicy"] == "Fail"

    wait_answered(  # the webhook is gone once the status is written; the VAP is loaded anew
        cp, misplaced, denied_by(policy["metadata"]["name"], 403), "the VAP at admission"
    )
    status, body, _ = create_pod_raw(cp, misplaced, dry_run=False)
    assert status == 403, body
    assert body["message"].startswith(
        f"pods \"trainer-coordinator-0\" is forbidden: ValidatingAdmissionPolicy '{vap}' "
        f"with binding '{binding}' denied request: pod trainer-coordinator-0: the "
        "coordinator of group ml-training must be pinned to topology.kubernetes.io/zone in "
        "[zone-a]"
    ), body["message"]

    stored = schedule(cp, pods)
    assert set(bound_zones(cp, stored).values()) == {"zone-a"}

    def results() -> dict[str, set[tuple[str, str]]]:
        return {
            p: {(r["policy"], r["result"]) for r in rs}
            for p, rs in admission_reports(cp, NS).items()
        }

    mutated = {name: {(f"{NAME}-mutate", "pass")} for name in stored}
    wait_admitted("the MutatingPolicies' admission reports", lambda: results() == mutated)

    # Kyverno down
    coordinator = stored["trainer-coordinator-0"]
    outsider = copy.deepcopy(pods[0])
    outsider["metadata"] |= {"name": "web-0", "labels": {"app.kubernetes.io/name": "web"}}
    k.kill()
    again = copy.deepcopy(pods[-1])
    again["metadata"]["name"] += "-again"
    status, body, _ = create_pod_raw(cp, again, dry_run=False)
    assert status == 500 and body["reason"] == "InternalError", body
    assert (
        'failed calling webhook "mpol.validate.kyverno.svc-fail-finegrained-' in (body["message"])
    )
    assert _relabel(cp, coordinator, {"zone": "zone-b"}) == 403
    assert _relabel(cp, coordinator, {"owner": "research"}) == 200
    assert cp.pod(NS, "trainer-coordinator-0")["metadata"]["labels"]["zone"] == "zone-a"
    status, body, _ = create_pod_raw(cp, outsider, dry_run=False)
    assert status == 201 and project(body) == project(outsider), body
    k.start()
