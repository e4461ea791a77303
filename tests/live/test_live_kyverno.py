"""The seed's states through Kyverno's admission controller (v1.19.1, out of cluster, see
kyverno_harness.py) with the real kube-scheduler: pods reach the policies as they do in a
cluster, through the API server's webhooks.

(1) no policies: the scheduler splits the zone-split group across zones;
(2) `topogen analyze` over the live snapshot calls that a HARD_BLOCK;
(3) the generated policies installed as objects: the pods the Deployment and Job
    controllers (and, for examples/pytorch-three-zone, the Kubeflow Training Operator)
    create are mutated at admission exactly as the Kyverno CLI mutates them, and land
    in one allowed zone; Audit reports and Enforce rejections are the generated
    `kyverno test` folders' expectations; pods of other namespaces and system pods are
    untouched;
(4) Kyverno down: the webhooks' failurePolicy is the rendered Fail, and a user creating
    a group pod gets the API server's error, while other pods are admitted.
Under Enforce through the API server: test_live_kyverno_enforce.py; the engine-neutral
cases and what Kyverno registers: test_live_kyverno_engines.py; PolicyReports from the
reports controller: test_live_kyverno_reports.py. One control plane and one Kyverno
(conftest.py `kyverno_plane`) serve every one of these files a test process runs.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from kyverno_harness import (
    Kyverno,
    vap_names,
)
from kyverno_kit import (
    BEFORE,
    GENERATED,
    NAME,
    PYTORCH,
    admission_reports,
    bound_zones,
    denied_by,
    expectations,
    generated_resources,
    install,
    install_audit,
    pod_key,
    policy_docs,
    pytorchjob_pods,
    render_group,
    schedule,
    validate_only,
)
from live_harness import ADMIN_TOKEN, ControlPlane
from live_kit import (
    NS,
    cli,
    create_pod_raw,
    docs,
    example_snapshot,
    kyverno_apply,
    pods_of,
    project,
    write_config,
)
from webhook_harness import wait_admitted

from tooling import require_tool
from topogen.config import load_config
from topogen.pipeline.analyze import analyze

pytestmark = [pytest.mark.slow, pytest.mark.tools]


# --- (1) and (2): no policies -------------------------------------------------------------


def test_kyverno_state1_without_policies_the_scheduler_splits_the_group(
    kyverno_plane: tuple[ControlPlane, Kyverno], tmp_path: Path
) -> None:
    cp, _ = kyverno_plane
    example_snapshot(cp, tmp_path)
    pods = pods_of(docs(BEFORE))
    admitted: dict[str, Any] = {}
    zones = bound_zones(cp, schedule(cp, pods, admitted))
    assert {z for p, z in zones.items() if "coordinator" in p} == {"zone-b"}
    assert {z for p, z in zones.items() if "workers" in p} == {"zone-a"}
    for p in pods:  # Kyverno is on the path and changes nothing without policies
        assert project(admitted[p["metadata"]["name"]]) == project(p)


def test_kyverno_state2_analyze_over_the_live_snapshot_flags_hard_block(
    kyverno_plane: tuple[ControlPlane, Kyverno], tmp_path: Path
) -> None:
    cp, _ = kyverno_plane
    snap = example_snapshot(cp, tmp_path)
    zones = bound_zones(cp, schedule(cp, pods_of(docs(BEFORE))))
    config = write_config(tmp_path, nodes=[snap], workloads=[BEFORE])
    result = cli("analyze", "-c", config, "-o", "json")
    assert result.exit_code == 1, result.output
    assert "HARD_BLOCK" in {f["kind"] for f in json.loads(result.stdout)["findings"]}
    (job,) = analyze(load_config(config)).clusters[0].jobs
    blocked = {(b.src_role, b.src_zone, b.dst_role, b.dst_zone) for b in job.blocked}
    coord = zones["trainer-coordinator-0"]
    assert {("coordinator", coord, "worker", zones[p]) for p in zones if "workers" in p} <= blocked


# --- (3): the generated policies at admission ----------------------------------------------


def test_kyverno_state3_zone_split_pods_mutated_at_admission_land_in_one_zone(
    kyverno_plane: tuple[ControlPlane, Kyverno], tmp_path: Path
) -> None:
    cp, k = kyverno_plane
    kyverno_cli = require_tool("kyverno")
    snap = example_snapshot(cp, tmp_path)
    config = write_config(tmp_path, nodes=[snap], workloads=[BEFORE])
    # Audit at admission, for its admission reports (as rendered: test_..._policy_reports)
    policies = render_group(config, tmp_path / "out", audit_at_admission=True)
    assert sorted(p["kind"] for p in policies) == ["MutatingPolicy", "ValidatingPolicy"]
    pods = pods_of(docs(BEFORE))
    install(k, policies, pods[0])

    admitted: dict[str, Any] = {}
    stored = schedule(cp, pods, admitted)
    files = sorted((tmp_path / "out" / "policies" / "lab" / "kyverno").glob("topogen-*.yaml"))
    by_cli = {p["metadata"]["name"]: p for p in kyverno_apply(kyverno_cli, files, pods, tmp_path)}
    assert set(by_cli) == set(admitted) == set(stored)
    for name, pod in admitted.items():
        assert project(pod) == project(by_cli[name]), name
        assert pod["metadata"]["labels"]["zone"] == "zone-a"
    (plan,) = analyze(load_config(config)).plans
    assert set(bound_zones(cp, stored).values()) == set(plan.zones) == {"zone-a"}

    # Audit at admission: admission reports per pod, its mutation and every check passed
    def results() -> dict[str, set[tuple[str, str]]]:
        return {
            p: {(r["policy"], r["result"]) for r in rs}
            for p, rs in admission_reports(cp, NS).items()
        }

    want = {
        name: {(f"{NAME}-mutate", "pass"),
               (f"{NAME}-validate", "pass")}
        for name in stored
    }  # fmt: skip
    wait_admitted("admission reports", lambda: results() == want)

    # the network policies are unchanged: the live snapshot is byte for byte the same
    again = tmp_path / "snapshot-after.yaml"
    kubeconfig = cp.kubeconfig("admin", ADMIN_TOKEN)
    assert cli("snapshot", "--kubeconfig", kubeconfig, "-o", again).exit_code == 0
    assert again.read_bytes() == snap.read_bytes()


def test_kyverno_state3_pytorchjob_pods_land_in_one_zone(
    kyverno_plane: tuple[ControlPlane, Kyverno], tmp_path: Path
) -> None:
    cp, k = kyverno_plane
    cp.create_nodes(docs(PYTORCH / "cluster" / "nodes.yaml"))
    cp.apply(docs(PYTORCH / "cilium"))
    pods = pytorchjob_pods(PYTORCH / "workloads" / "resnet.yaml")
    assert [p["metadata"]["name"] for p in pods] == [
        "resnet-master-0",
        *(f"resnet-worker-{i}" for i in range(3)),
    ]
    policies = render_group(PYTORCH / "topogen.yaml", tmp_path / "out")
    install(k, policies, pods[0])
    stored = schedule(cp, pods)
    (plan,) = analyze(load_config(PYTORCH / "topogen.yaml")).plans
    (job,) = plan.job_domains  # spread over two zones: the job pinned to its own
    assert job.job == "research/resnet" and len(plan.zones) == 2
    assert set(bound_zones(cp, stored).values()) == set(job.zones) == {"us-east-1a"}
    master = stored["resnet-master-0"]["spec"]
    assert {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present"} | {
        "effect": "NoSchedule"
    } in master["tolerations"]
    for i in range(3):
        (term,) = stored[f"resnet-worker-{i}"]["spec"]["affinity"]["podAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]
        assert term["labelSelector"]["matchLabels"]["training.kubeflow.org/job-name"] == "resnet"


@pytest.mark.parametrize("action", ["Audit", "Deny", "Deny, API server"])
def test_kyverno_validation_as_the_generated_tests_expect(
    kyverno_plane: tuple[ControlPlane, Kyverno], action: str
) -> None:
    """The generated validate test's pods, created through the API server with the
    ValidatingPolicy alone (as the test evaluates it): Audit admits every pod and reports
    pass/fail as the test expects (skipped pods never reach Kyverno); Deny (Enforce)
    rejects exactly the failing ones, with the check's message, on Kyverno's webhook and
    through the ValidatingAdmissionPolicy Kyverno generates (the enforce Component's
    spec.autogen.validatingAdmissionPolicy.enabled), which the API server runs itself."""
    cp, k = kyverno_plane
    test = "topogen-ml-training-validate"
    want = expectations(GENERATED / "tests" / test / "kyverno-test.yaml")
    pods = generated_resources(test)
    bad = next(p for p in pods if want[pod_key(p)] == "fail")
    api_server = action == "Deny, API server"
    if action != "Audit":  # with api_server, the API server's policy denies, not the webhook
        answer = denied_by(f"{NAME}-validate", 403 if api_server else 400)
        install(k, validate_only("Deny", api_server), bad, answer)
    else:
        install_audit(k, validate_only(action), bad)
    got: dict[str, tuple[int, str]] = {}
    for pod in pods:
        cp.ensure_namespace(pod["metadata"]["namespace"])
        status, body, _ = create_pod_raw(cp, pod, dry_run=False)
        got[pod_key(pod)] = (status, body.get("message", ""))
    vap, binding = vap_names({"metadata": {"name": f"{NAME}-validate"}})
    if action != "Audit":
        for key, result in want.items():
            status, message = got[key]
            if result != "fail":
                assert status == 201, (key, status, message)
            elif api_server:
                assert status == 403, (key, status, message)
                assert message.startswith(
                    f'pods "{key.split("/")[1]}" is forbidden: ValidatingAdmissionPolicy '
                    f"'{vap}' with binding '{binding}' denied request: pod {key.split('/')[1]}: "
                ), message
            else:
                assert status == 400, (key, status, message)
                assert f"Policy {NAME}-validate failed: pod {key.split('/')[1]}: " in message
                assert message.startswith('admission webhook "vpol.validate.kyverno.svc-fail-')
        return
    assert {s for s, _ in got.values()} == {201}
    reported = {key for key, r in want.items() if r != "skip"}
    namespaces = {k.split("/")[0] for k in want}

    def results() -> dict[str, str]:
        out = {}
        for ns in namespaces:
            for pod, rs in admission_reports(cp, ns).items():
                if f"{ns}/{pod}" not in want:
                    continue  # a probe
                (r,) = rs
                assert r["policy"] == f"{NAME}-validate", r
                out[f"{ns}/{pod}"] = r["result"]
        return out

    wait_admitted("admission reports", lambda: set(results()) >= reported)
    assert results() == {key: r for key, r in want.items() if r != "skip"}


def test_kyverno_mutation_as_the_generated_tests_expect(
    kyverno_plane: tuple[ControlPlane, Kyverno],
) -> None:
    """The generated mutate test's pods through the API server with the MutatingPolicy
    installed: each pod comes back as the test's patched.yaml says, or unchanged where the
    test expects it skipped or passed as is."""
    _, k = kyverno_plane
    mutating = [p for p in policy_docs(GENERATED) if p["kind"] == "MutatingPolicy"]
    pods: dict[str, dict[str, Any]] = {}
    patched: dict[str, dict[str, Any]] = {}
    folder = GENERATED / "tests" / f"{NAME}-mutate"
    want = expectations(folder / "kyverno-test.yaml")
    for pod in docs(folder / "resources.yaml"):
        pods[pod_key(pod)] = pod
    for pod in docs(folder / "patched.yaml"):
        assert want[pod_key(pod)] == "pass" and pod_key(pod) not in patched
        patched[pod_key(pod)] = pod
    assert {want[key] for key in pods} == {"pass", "skip"} and patched
    install(k, mutating, next(p for key, p in pods.items() if key in patched))
    wrong = []
    for key, pod in pods.items():
        k.cp.ensure_namespace(pod["metadata"]["namespace"])
        status, body, _ = create_pod_raw(k.cp, pod)
        assert status == 201, body
        if project(body) != project(patched.get(key, pod)):
            wrong.append(f"{key}: {project(body)}\n  want {project(patched.get(key, pod))}")
    assert not wrong, "\n".join(wrong)


def test_kyverno_leaves_other_namespaces_and_system_pods_untouched(
    kyverno_plane: tuple[ControlPlane, Kyverno],
) -> None:
    """With the policies enforced, a pod labelled as the group's in another namespace and
    one in kube-system are admitted as they are."""
    cp, k = kyverno_plane
    policies = policy_docs(GENERATED)
    for p in policies:
        if p["kind"] == "ValidatingPolicy":  # as the enforce Component makes it
            p["spec"]["validationActions"] = ["Deny"]
            p["spec"]["evaluation"]["admission"]["enabled"] = True
    coordinator = pods_of(docs(BEFORE))[0]
    install(k, policies, coordinator)
    assert create_pod_raw(cp, coordinator)[1]["metadata"]["labels"]["zone"] == "zone-a"
    for ns in ("other-team", "kube-system"):
        cp.ensure_namespace(ns)
        pod = copy.deepcopy(coordinator)
        pod["metadata"]["namespace"] = ns
        status, body, warnings = create_pod_raw(cp, pod, dry_run=False)
        assert status == 201 and not warnings, body
        assert project(body) == project(pod), ns
        assert not admission_reports(cp, ns)


# --- (4): Kyverno down --------------------------------------------------------------------


def test_kyverno_down_the_rendered_fail_rejects_group_pods_only(
    kyverno_plane: tuple[ControlPlane, Kyverno],
) -> None:
    """The generated policies render failurePolicy Fail, and Kyverno registers each
    MutatingPolicy as a Fail webhook whose matchConditions the API server evaluates itself
    (the ValidatingPolicy, Audit as rendered, runs in background scans: no webhook): with Kyverno
    gone, creating a group pod fails with the API server's error (a Deployment or Job
    controller retries and records FailedCreate), other pods are admitted as they are."""
    cp, k = kyverno_plane
    policies = policy_docs(GENERATED)
    assert {p["spec"]["failurePolicy"] for p in policies} == {"Fail"}
    pods = pods_of(docs(BEFORE))
    coordinator, worker = pods[0], pods[-1]
    install(k, policies, coordinator)
    (hook,) = k.webhooks_for("mutating", f"{NAME}-mutate")
    assert hook["failurePolicy"] == "Fail", hook
    assert not k.webhooks_for("validating", f"{NAME}-validate")
    outsider = copy.deepcopy(coordinator)
    outsider["metadata"] |= {"name": "web-0", "labels": {"app.kubernetes.io/name": "web"}}

    k.kill()  # crashed, or its pods gone: nothing listens at the webhook URL
    for pod in (coordinator, worker):
        status, body, _ = create_pod_raw(cp, pod, dry_run=False)
        assert status == 500 and body["reason"] == "InternalError", body
        assert (
            'Internal error occurred: failed calling webhook "mpol.validate.kyverno.svc-fail-'
            in (body["message"])
        )
        # nothing listens: a new connection is refused; a connection the API server kept
        # open to the killed process fails on its first write instead (a loaded machine
        # can leave one pooled while the process dies)
        assert any(
            e in body["message"]
            for e in (
                "connect: connection refused",
                "write: broken pipe",
                "connection reset by peer",
            )
        ), body
    status, body, _ = create_pod_raw(cp, outsider, dry_run=False)
    assert status == 201 and project(body) == project(outsider), body

    k.start()  # back: group pods are mutated again
    wait_admitted(
        "Kyverno back on the path",
        lambda: (
            create_pod_raw(cp, coordinator)[1].get("metadata", {}).get("labels", {}).get("zone")
            == "zone-a"
        ),
    )
