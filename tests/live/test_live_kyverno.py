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
Under Enforce the ValidatingPolicy has Kyverno generate a ValidatingAdmissionPolicy: (3)
and (4) again with the API server validating, and the generated validate test's
expectations through it.
The engine-neutral cases of tests/engines run through it too, held to the expectations
the CLI is held to. One control plane and one Kyverno serve the whole module.
"""

from __future__ import annotations

import copy
import json
import re
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from kyverno_harness import (
    PLUGINS,
    VAP,
    VAP_BINDING,
    Kyverno,
    ReportsController,
    start_kyverno,
    start_reports_controller,
    vap_names,
)
from live_harness import (
    ADMIN_TOKEN,
    ControlPlane,
    KubeError,
    collection_path,
    start_control_plane,
)
from live_kit import (
    EXAMPLE,
    NS,
    cli,
    create_pod_raw,
    docs,
    example_nodes,
    example_policies,
    kyverno_apply,
    pods_of,
    project,
    write_config,
)
from webhook_harness import wait_admitted, wait_bound

from engines.cases import Suite, expected, suites
from engines.engines import Checks, check_ids
from tooling import REPO, TOOLS_BIN, require_tool
from topogen.config import load_config
from topogen.pipeline import analyze
from topogen.render.kyverno import kyverno_policies
from topogen.render.kyverno_legacy import kyverno_legacy_policies

ZONE = {"gpu-a1": "zone-a", "gpu-a2": "zone-a", "cpu-b1": "zone-b", "cpu-b2": "zone-b"}
BEFORE = EXAMPLE / "workloads" / "before"
PYTORCH = REPO / "examples" / "pytorch-three-zone"
GENERATED = REPO / "policies" / "lab" / "kyverno"
NAME = "topogen-ml-training"

pytestmark = [pytest.mark.slow, pytest.mark.tools]


@pytest.fixture(scope="module")
def kyverno_plane(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ControlPlane, Kyverno]]:
    for tool in ("etcd", "kube-apiserver", "kube-scheduler"):
        require_tool(tool)
    binary = require_tool("kyverno-admission-controller")
    work = tmp_path_factory.mktemp("kyverno-plane")
    cp = start_control_plane(TOOLS_BIN, work, admission=PLUGINS)
    try:
        k = start_kyverno(cp, binary, work / "kyverno")
    except BaseException:
        cp.stop()
        raise
    try:
        yield cp, k
    finally:
        k.stop()
        cp.stop()


@pytest.fixture
def plane(kyverno_plane: tuple[ControlPlane, Kyverno]) -> Iterator[tuple[ControlPlane, Kyverno]]:
    """The module's plane, emptied of nodes, pods, policies; Kyverno running."""
    cp, k = kyverno_plane
    if not k.alive():
        k.start()
    cp.reset()
    yield cp, k
    for kind in ("mutatingpolicies", "validatingpolicies"):
        cp.kube().delete(f"/apis/policies.kyverno.io/v1/{kind}")
    k.delete_generated()
    k.wait_unregistered([NAME + s for s in ("-coordinator", "-worker", "-validate")])


# --- helpers ------------------------------------------------------------------------------


def _policy_docs(folder: Path) -> list[dict[str, Any]]:
    return [
        d
        for f in sorted(folder.glob("topogen-*.yaml"))
        for d in yaml.safe_load_all(f.read_text(encoding="utf-8"))
        if d
    ]


def _with_example(cp: ControlPlane, tmp: Path) -> Path:
    """examples/zone-split's nodes and policies in the API server; its live snapshot."""
    kubeconfig = cp.kubeconfig("admin", ADMIN_TOKEN)
    cp.ensure_namespace(NS)
    cp.create_nodes(example_nodes())
    cp.apply(example_policies())
    snap = tmp / "snapshot.yaml"
    result = cli("snapshot", "--kubeconfig", kubeconfig, "-o", snap)
    assert result.exit_code == 0, result.output
    return snap


def _render(
    config: Path, out: Path, action: str | None = None, audit_at_admission: bool = False
) -> list[dict[str, Any]]:
    if action is not None or audit_at_admission:  # a config the test wrote, never an example's
        raw = yaml.safe_load(config.read_text())
        raw["validationAction"] = action or raw.get("validationAction", "Audit")
        if audit_at_admission:
            raw["kyverno"] = {"auditAtAdmission": True}
        config.write_text(yaml.safe_dump(raw, sort_keys=False))
    rendered = cli("render", "-c", config, "--out", out)
    assert rendered.exit_code == 0, rendered.output
    (folder,) = (out / "policies").glob("*/kyverno")
    return _policy_docs(folder)


def _install(k: Kyverno, policies: Sequence[dict[str, Any]], probe: Mapping[str, Any]) -> None:
    """Create the policies; wait until Kyverno registered them and the API server calls
    it for `probe` (a pod the policies change or judge)."""
    k.cp.ensure_namespace(probe["metadata"]["namespace"])
    k.apply(policies)
    k.wait_registered(policies)
    before = project(probe)
    wait_admitted(
        "the policies at admission",
        lambda: (lambda r: r[0] != 201 or r[2] or project(r[1]) != before)(
            create_pod_raw(k.cp, probe)
        ),
    )


def _install_audit(
    k: Kyverno, policies: Sequence[dict[str, Any]], probe: Mapping[str, Any]
) -> None:
    """Audit changes nothing a dry run shows: probe with stored pods until Kyverno
    reports on one (its validating handler writes the report before it answers)."""
    ns = probe["metadata"]["namespace"]
    k.cp.ensure_namespace(ns)
    k.apply(policies)
    k.wait_registered(policies)
    n = 0

    def reported() -> bool:
        nonlocal n
        n += 1
        pod = copy.deepcopy(dict(probe))
        pod["metadata"]["name"] = f"audit-probe-{n}"
        assert create_pod_raw(k.cp, pod, dry_run=False)[0] == 201
        return pod["metadata"]["name"] in _reports(k.cp, ns)

    wait_admitted("the policies at admission", reported)


def _schedule(
    cp: ControlPlane, pods: Sequence[dict[str, Any]], admitted: dict[str, Any] | None = None
) -> dict[str, dict[str, Any]]:
    """Create the coordinators first (workers may need them placed), then the rest; the
    stored pods once the scheduler bound them. `admitted`
    gets each pod as admission returned it (before binding stamps the zone label)."""
    first = [p for p in pods if _is_coordinator(p)]
    stored: dict[str, dict[str, Any]] = {}
    for batch in (first, [p for p in pods if p not in first]):
        for p in batch:
            cp.ensure_namespace(p["metadata"]["namespace"])
            status, body, _ = create_pod_raw(cp, p, dry_run=False)
            assert status == 201, body
            if admitted is not None:
                admitted[p["metadata"]["name"]] = body
        for p in batch:
            ns, name = p["metadata"]["namespace"], p["metadata"]["name"]
            wait_bound(cp, ns, [name])
            stored[name] = cp.pod(ns, name)
    return stored


def _is_coordinator(pod: Mapping[str, Any]) -> bool:
    labels = pod["metadata"].get("labels", {})
    return bool(labels.get("role") == "coordinator" or labels.get("training.kubeflow.org/job-role"))


def _zones(cp: ControlPlane, stored: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    zones = {}
    for name, pod in stored.items():
        node = pod["spec"].get("nodeName")
        assert node, f"{name} is not bound: {pod.get('status')}"
        labels = cp.kube().get(f"/api/v1/nodes/{node}")["metadata"]["labels"]
        zones[name] = labels["topology.kubernetes.io/zone"]
    return zones


def pytorchjob_pods(manifest: Path) -> list[dict[str, Any]]:
    """The pods the Kubeflow Training Operator (v1.8.1, pkg/controller.v1/common/pod.go
    createNewPod) creates for a PyTorchJob: `<job>-<replica type>-<index>`, its template
    with the operator's labels (job-role=master on the master)."""
    out = []
    for job in (d for d in docs(manifest) if d["kind"] == "PyTorchJob"):
        name, ns = job["metadata"]["name"], job["metadata"]["namespace"]
        for rtype, spec in job["spec"]["pytorchReplicaSpecs"].items():
            rt = rtype.lower()
            for i in range(spec.get("replicas", 1)):
                tmpl = copy.deepcopy(spec["template"])
                labels = {
                    **tmpl.get("metadata", {}).get("labels", {}),
                    "training.kubeflow.org/operator-name": "pytorchjob-controller",
                    "training.kubeflow.org/job-name": name,
                    "training.kubeflow.org/replica-type": rt,
                    "training.kubeflow.org/replica-index": str(i),
                    **({"training.kubeflow.org/job-role": "master"} if rt == "master" else {}),
                }
                pod_spec = tmpl["spec"]
                pod_spec["restartPolicy"] = spec.get("restartPolicy", "OnFailure")
                meta = {"name": f"{name}-{rt}-{i}", "namespace": ns, "labels": labels}
                out.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec})
    return out


def _reports(cp: ControlPlane, namespace: str) -> dict[str, list[dict[str, Any]]]:
    """Kyverno's admission reports (EphemeralReports) in a namespace: pod -> results."""
    got = cp.kube().get(f"/apis/reports.kyverno.io/v1/namespaces/{namespace}/ephemeralreports")
    out: dict[str, list[dict[str, Any]]] = {}
    for report in got["items"]:
        meta = report["metadata"].get("annotations", {})
        pod = meta.get("audit.kyverno.io/resource.name")
        if pod:
            out.setdefault(pod, []).extend(report["spec"].get("results") or [])
    return out


def _expectations(test: Path) -> dict[str, str]:
    """namespace/pod -> pass | fail | skip, from a generated kyverno-test.yaml."""
    spec = yaml.safe_load(test.read_text(encoding="utf-8"))
    return {r: res["result"] for res in spec["results"] for r in res["resources"]}


# --- (1) and (2): no policies -------------------------------------------------------------


def test_kyverno_state1_without_policies_the_scheduler_splits_the_group(
    plane: tuple[ControlPlane, Kyverno], tmp_path: Path
) -> None:
    cp, _ = plane
    _with_example(cp, tmp_path)
    pods = pods_of(docs(BEFORE))
    admitted: dict[str, Any] = {}
    zones = _zones(cp, _schedule(cp, pods, admitted))
    assert {z for p, z in zones.items() if "coordinator" in p} == {"zone-b"}
    assert {z for p, z in zones.items() if "workers" in p} == {"zone-a"}
    for p in pods:  # Kyverno is on the path and changes nothing without policies
        assert project(admitted[p["metadata"]["name"]]) == project(p)


def test_kyverno_state2_analyze_over_the_live_snapshot_flags_hard_block(
    plane: tuple[ControlPlane, Kyverno], tmp_path: Path
) -> None:
    cp, _ = plane
    snap = _with_example(cp, tmp_path)
    zones = _zones(cp, _schedule(cp, pods_of(docs(BEFORE))))
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
    plane: tuple[ControlPlane, Kyverno], tmp_path: Path
) -> None:
    cp, k = plane
    kyverno_cli = require_tool("kyverno")
    snap = _with_example(cp, tmp_path)
    config = write_config(tmp_path, nodes=[snap], workloads=[BEFORE])
    # Audit at admission, for its admission reports (as rendered: test_..._policy_reports)
    policies = _render(config, tmp_path / "out", audit_at_admission=True)
    assert sorted(p["kind"] for p in policies) == ["MutatingPolicy"] * 2 + ["ValidatingPolicy"]
    pods = pods_of(docs(BEFORE))
    _install(k, policies, pods[0])

    admitted: dict[str, Any] = {}
    stored = _schedule(cp, pods, admitted)
    files = sorted((tmp_path / "out" / "policies" / "lab" / "kyverno").glob("topogen-*.yaml"))
    by_cli = {p["metadata"]["name"]: p for p in kyverno_apply(kyverno_cli, files, pods, tmp_path)}
    assert set(by_cli) == set(admitted) == set(stored)
    for name, pod in admitted.items():
        assert project(pod) == project(by_cli[name]), name
        assert pod["metadata"]["labels"]["zone"] == "zone-a"
    (plan,) = analyze(load_config(config)).plans
    assert set(_zones(cp, stored).values()) == set(plan.zones) == {"zone-a"}

    # Audit at admission: admission reports per pod, its mutation and every check passed
    def results() -> dict[str, set[tuple[str, str]]]:
        return {p: {(r["policy"], r["result"]) for r in rs} for p, rs in _reports(cp, NS).items()}

    want = {
        name: {(f"{NAME}-{'coordinator' if 'coordinator' in name else 'worker'}", "pass"),
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
    plane: tuple[ControlPlane, Kyverno], tmp_path: Path
) -> None:
    cp, k = plane
    cp.create_nodes(docs(PYTORCH / "cluster" / "nodes.yaml"))
    cp.apply(docs(PYTORCH / "cilium"))
    pods = pytorchjob_pods(PYTORCH / "workloads" / "resnet.yaml")
    assert [p["metadata"]["name"] for p in pods] == [
        "resnet-master-0",
        *(f"resnet-worker-{i}" for i in range(3)),
    ]
    policies = _render(PYTORCH / "topogen.yaml", tmp_path / "out")
    _install(k, policies, pods[0])
    stored = _schedule(cp, pods)
    (plan,) = analyze(load_config(PYTORCH / "topogen.yaml")).plans
    (job,) = plan.job_domains  # spread over two zones: the job pinned to its own
    assert job.job == "research/resnet" and len(plan.zones) == 2
    assert set(_zones(cp, stored).values()) == set(job.zones) == {"us-east-1a"}
    master = stored["resnet-master-0"]["spec"]
    assert {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present"} | {
        "effect": "NoSchedule"
    } in master["tolerations"]
    for i in range(3):
        (term,) = stored[f"resnet-worker-{i}"]["spec"]["affinity"]["podAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]
        assert term["labelSelector"]["matchLabels"]["training.kubeflow.org/job-name"] == "resnet"


def _validate_only(
    action: str, api_server: bool = False, admission: bool = True
) -> list[dict[str, Any]]:
    """The rendered ValidatingPolicy with `action`; on the admission path as the enforce
    Component (and, for Audit, kyverno.auditAtAdmission) puts it, unless not `admission`."""
    (policy,) = [p for p in _policy_docs(GENERATED) if p["kind"] == "ValidatingPolicy"]
    policy["spec"]["validationActions"] = [action]
    policy["spec"]["autogen"]["validatingAdmissionPolicy"] = {"enabled": api_server}
    policy["spec"]["evaluation"]["admission"]["enabled"] = admission
    return [policy]


def _generated_resources(test: str) -> list[dict[str, Any]]:
    return docs(GENERATED / "tests" / test / "resources.yaml")


@pytest.mark.parametrize("action", ["Audit", "Deny", "Deny, API server"])
def test_kyverno_validation_as_the_generated_tests_expect(
    plane: tuple[ControlPlane, Kyverno], action: str
) -> None:
    """The generated validate test's pods, created through the API server with the
    ValidatingPolicy alone (as the test evaluates it): Audit admits every pod and reports
    pass/fail as the test expects (skipped pods never reach Kyverno); Deny (Enforce)
    rejects exactly the failing ones, with the check's message, on Kyverno's webhook and
    through the ValidatingAdmissionPolicy Kyverno generates (the enforce Component's
    spec.autogen.validatingAdmissionPolicy.enabled), which the API server runs itself."""
    cp, k = plane
    test = "topogen-ml-training-validate"
    want = _expectations(GENERATED / "tests" / test / "kyverno-test.yaml")
    pods = _generated_resources(test)
    bad = next(p for p in pods if want[_key(p)] == "fail")
    api_server = action == "Deny, API server"
    if action != "Audit":
        _install(k, _validate_only("Deny", api_server), bad)
        wait_admitted(  # not Kyverno's webhook: the API server's policy
            "the ValidatingAdmissionPolicy at admission",
            lambda: not api_server or create_pod_raw(cp, bad)[0] == 403,
        )
    else:
        _install_audit(k, _validate_only(action), bad)
    got: dict[str, tuple[int, str]] = {}
    for pod in pods:
        cp.ensure_namespace(pod["metadata"]["namespace"])
        status, body, _ = create_pod_raw(cp, pod, dry_run=False)
        got[_key(pod)] = (status, body.get("message", ""))
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
            for pod, rs in _reports(cp, ns).items():
                if f"{ns}/{pod}" not in want:
                    continue  # a probe
                (r,) = rs
                assert r["policy"] == f"{NAME}-validate", r
                out[f"{ns}/{pod}"] = r["result"]
        return out

    wait_admitted("admission reports", lambda: set(results()) >= reported)
    assert results() == {key: r for key, r in want.items() if r != "skip"}


def _key(pod: Mapping[str, Any]) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def test_kyverno_mutation_as_the_generated_tests_expect(
    plane: tuple[ControlPlane, Kyverno],
) -> None:
    """Both generated mutate tests' pods through the API server with both MutatingPolicies
    installed: each pod comes back as one test's patched.yaml says, or unchanged where
    both tests expect it skipped or passed as is."""
    _, k = plane
    mutating = [p for p in _policy_docs(GENERATED) if p["kind"] == "MutatingPolicy"]
    pods: dict[str, dict[str, Any]] = {}
    patched: dict[str, dict[str, Any]] = {}
    for role in ("coordinator", "worker"):
        folder = GENERATED / "tests" / f"{NAME}-{role}"
        want = _expectations(folder / "kyverno-test.yaml")
        for pod in docs(folder / "resources.yaml"):
            assert pods.setdefault(_key(pod), pod) == pod  # the same sample pods
        for pod in docs(folder / "patched.yaml"):
            assert want[_key(pod)] == "pass" and _key(pod) not in patched
            patched[_key(pod)] = pod
    _install(k, mutating, next(p for key, p in pods.items() if key in patched))
    wrong = []
    for key, pod in pods.items():
        k.cp.ensure_namespace(pod["metadata"]["namespace"])
        status, body, _ = create_pod_raw(k.cp, pod)
        assert status == 201, body
        if project(body) != project(patched.get(key, pod)):
            wrong.append(f"{key}: {project(body)}\n  want {project(patched.get(key, pod))}")
    assert not wrong, "\n".join(wrong)


def test_kyverno_leaves_other_namespaces_and_system_pods_untouched(
    plane: tuple[ControlPlane, Kyverno],
) -> None:
    """With the policies enforced, a pod labelled as the group's in another namespace and
    one in kube-system are admitted as they are."""
    cp, k = plane
    policies = _policy_docs(GENERATED)
    for p in policies:
        if p["kind"] == "ValidatingPolicy":  # as the enforce Component makes it
            p["spec"]["validationActions"] = ["Deny"]
            p["spec"]["evaluation"]["admission"]["enabled"] = True
    coordinator = pods_of(docs(BEFORE))[0]
    _install(k, policies, coordinator)
    assert create_pod_raw(cp, coordinator)[1]["metadata"]["labels"]["zone"] == "zone-a"
    for ns in ("other-team", "kube-system"):
        cp.ensure_namespace(ns)
        pod = copy.deepcopy(coordinator)
        pod["metadata"]["namespace"] = ns
        status, body, warnings = create_pod_raw(cp, pod, dry_run=False)
        assert status == 201 and not warnings, body
        assert project(body) == project(pod), ns
        assert not _reports(cp, ns)


# --- (4): Kyverno down --------------------------------------------------------------------


def test_kyverno_down_the_rendered_fail_rejects_group_pods_only(
    plane: tuple[ControlPlane, Kyverno],
) -> None:
    """The generated policies render failurePolicy Fail, and Kyverno registers each
    MutatingPolicy as a Fail webhook whose matchConditions the API server evaluates itself
    (the ValidatingPolicy, Audit as rendered, runs in background scans: no webhook): with Kyverno
    gone, creating a group pod fails with the API server's error (a Deployment or Job
    controller retries and records FailedCreate), other pods are admitted as they are."""
    cp, k = plane
    policies = _policy_docs(GENERATED)
    assert {p["spec"]["failurePolicy"] for p in policies} == {"Fail"}
    pods = pods_of(docs(BEFORE))
    coordinator, worker = pods[0], pods[-1]
    _install(k, policies, coordinator)
    for role in ("coordinator", "worker"):
        (hook,) = k.webhooks_for("mutating", f"{NAME}-{role}")
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
        assert "connect: connection refused" in body["message"], body
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


# --- (3) and (4) under Enforce: Kyverno's generated ValidatingAdmissionPolicy ----------------


def _relabel(cp: ControlPlane, pod: Mapping[str, Any], labels: Mapping[str, str]) -> int:
    """PATCH a stored pod's labels (an UPDATE the ValidatingPolicy judges, no mutation does)."""
    ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    try:
        cp.kube().request(
            "PATCH",
            f"/api/v1/namespaces/{ns}/pods/{name}",
            {"metadata": {"labels": dict(labels)}},
            content_type="application/merge-patch+json",
        )
    except KubeError as exc:
        return exc.status
    return 200


def test_kyverno_enforce_validation_runs_in_the_api_server_and_holds_while_kyverno_is_down(
    plane: tuple[ControlPlane, Kyverno], tmp_path: Path
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
    cp, k = plane
    snap = _with_example(cp, tmp_path)
    # no garbage collector here: earlier pods' reports outlive them
    cp.kube().delete(f"/apis/reports.kyverno.io/v1/namespaces/{NS}/ephemeralreports")
    config = write_config(tmp_path, nodes=[snap], workloads=[BEFORE])
    policies = _render(config, tmp_path / "out", "Enforce")
    (policy,) = [p for p in policies if p["kind"] == "ValidatingPolicy"]
    assert policy["spec"]["validationActions"] == ["Deny"]
    assert policy["spec"]["autogen"]["validatingAdmissionPolicy"] == {"enabled": True}
    pods = pods_of(docs(BEFORE))
    misplaced = copy.deepcopy(pods[0])
    misplaced["spec"]["nodeSelector"] = {"topology.kubernetes.io/zone": "zone-b"}
    _install(k, policies, misplaced)

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
    for role in ("coordinator", "worker"):
        (hook,) = k.webhooks_for("mutating", f"{NAME}-{role}")
        assert hook["failurePolicy"] == "Fail"

    wait_admitted(  # the webhook is gone once the status is written; the VAP is loaded anew
        "the ValidatingAdmissionPolicy at admission",
        lambda: "ValidatingAdmissionPolicy" in create_pod_raw(cp, misplaced)[1].get("message", ""),
    )
    status, body, _ = create_pod_raw(cp, misplaced, dry_run=False)
    assert status == 403, body
    assert body["message"].startswith(
        f"pods \"trainer-coordinator-0\" is forbidden: ValidatingAdmissionPolicy '{vap}' "
        f"with binding '{binding}' denied request: pod trainer-coordinator-0: the "
        "coordinator of group ml-training must be pinned to topology.kubernetes.io/zone in "
        "[zone-a]"
    ), body["message"]

    stored = _schedule(cp, pods)
    assert set(_zones(cp, stored).values()) == {"zone-a"}

    def results() -> dict[str, set[tuple[str, str]]]:
        return {p: {(r["policy"], r["result"]) for r in rs} for p, rs in _reports(cp, NS).items()}

    mutated = {
        name: {(f"{NAME}-{'coordinator' if 'coordinator' in name else 'worker'}", "pass")}
        for name in stored
    }
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


# --- the engine-neutral cases through admission --------------------------------------------

SUITES = suites()


def _checks_of(warnings: Sequence[str], check_of: Mapping[str, str]) -> Checks:
    """(check, message) of each failed check, from the Warn policies' warnings."""
    out = []
    for w in warnings:
        m = re.match(r"^Policy (\S+) (failed|error): (.*)$", w, re.DOTALL)
        assert m is not None and m[2] == "failed", w
        out.append((check_of[m[1]], m[3]))
    return tuple(sorted(out))


@pytest.mark.parametrize("suite", SUITES, ids=[s.key for s in SUITES])
def test_kyverno_admission_controller_behaves_as_the_cli(
    plane: tuple[ControlPlane, Kyverno], suite: Suite
) -> None:
    """tests/engines' cases created (dryRun=All) through the API server: the pods Kyverno's
    admission controller returns and the checks it fails are what the Kyverno CLI is held
    to (expected(case, "kyverno")). Each check is its own ValidatingPolicy with
    validationActions [Warn] (Kyverno reports a policy's first failing validation only,
    and a warning per failing policy)."""
    cp, k = plane
    for ns in sorted({c.pod["metadata"]["namespace"] for c in suite.cases}):
        cp.ensure_namespace(ns)
    objs = [o for f in kyverno_policies(suite.intent) for o in f.objects]
    mutating = [o for o in objs if o["kind"] == "MutatingPolicy"]
    # the group's ValidatingPolicy, and one per detached selector (its own webhook)
    checks, check_of = [], {}
    for validating in (o for o in objs if o["kind"] == "ValidatingPolicy"):
        for n, (v, check) in enumerate(
            zip(validating["spec"]["validations"], check_ids(suite.intent), strict=True)
        ):
            one = copy.deepcopy(validating)
            one["metadata"]["name"] = f"{validating['metadata']['name']}-check-{n}"
            one["spec"]["validations"] = [v]
            one["spec"]["validationActions"] = ["Warn"]
            one["spec"]["evaluation"]["admission"]["enabled"] = True
            checks.append(one)
            check_of[one["metadata"]["name"]] = check
    only = [c for c in suite.cases if not c.admission]
    admission = [c for c in suite.cases if c.admission]
    wrong = []
    try:
        _install(k, checks, suite.case("unpinned-coordinator").pod)
        for case in only:
            status, body, warnings = create_pod_raw(cp, case.pod)
            assert status == 201, body
            want = expected(case, "kyverno", suite.intent).checks
            if _checks_of(warnings, check_of) != want:
                wrong.append(f"{case.name}: expected {want}, got {_checks_of(warnings, check_of)}")
        _install(k, mutating, admission[0].pod)
        for case in admission:
            status, body, warnings = create_pod_raw(cp, case.pod)
            assert status == 201, body
            want_ = expected(case, "kyverno", suite.intent)
            if project(body) != project(want_.pod):
                wrong.append(f"{case.name}: mutated {project(body)}\n  want {project(want_.pod)}")
            if _checks_of(warnings, check_of) != want_.checks:
                wrong.append(f"{case.name}: expected {want_.checks}, got {warnings}")
    finally:
        k.delete([*checks, *mutating])
        k.wait_unregistered([o["metadata"]["name"] for o in (*checks, *mutating)])
    assert not wrong, "\n".join(wrong)


# --- what Kyverno registers for the generated policies --------------------------------------


def _merged(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> dict[str, Any]:
    """Kyverno's mergeLabelSelectors (pkg/controllers/webhook/validating.go): labels of
    both, a's expressions then b's; the API server stores a missing selector as {}."""
    out: dict[str, Any] = {}
    labels = {**((a or {}).get("matchLabels") or {}), **((b or {}).get("matchLabels") or {})}
    exprs = [*((a or {}).get("matchExpressions") or []), *((b or {}).get("matchExpressions") or [])]
    if labels:
        out["matchLabels"] = labels
    if exprs:
        out["matchExpressions"] = exprs
    return out


def test_kyverno_registers_each_generated_policy_as_its_own_webhook(
    plane: tuple[ControlPlane, Kyverno],
) -> None:
    """How Kyverno v1.19.1 turns each generated policy into a webhook of its resource
    configurations: a policy with matchConditions gets a fine-grained webhook of its own
    (pkg/controllers/webhook/validating.go buildWebhookRules) whose rules are the policy's
    matchConstraints.resourceRules, whose namespaceSelector and objectSelector are the
    policy's merged with Kyverno's `webhooks` config (its ConfigMap), and whose
    matchConditions are the policy's as written, for the API server to evaluate before it
    calls Kyverno at all. So the API server calls Kyverno only for pods of the group's
    namespaces with the job label, and of those only for the policy's role (what
    tests/kyverno/test_webhook_scope.py finds with Kyverno's builders, here as the running
    admission controller registers it). The ValidatingPolicy as kyverno.auditAtAdmission
    (or, under Enforce, kyverno.generateValidatingAdmissionPolicy false) puts it on the
    admission path; as rendered, Audit has no webhook."""
    cp, k = plane
    policies = _policy_docs(GENERATED)
    for p in policies:
        if p["kind"] == "ValidatingPolicy":
            p["spec"]["evaluation"]["admission"]["enabled"] = True
    _install(k, policies, pods_of(docs(BEFORE))[0])
    config = cp.kube().get("/api/v1/namespaces/kyverno/configmaps/kyverno")["data"]
    webhooks = json.loads(config["webhooks"])
    assert webhooks["namespaceSelector"]["matchExpressions"] == [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": [ns]}
        for ns in ("kube-system", "kyverno")
    ]
    for policy in policies:
        name, spec = policy["metadata"]["name"], policy["spec"]
        mutating = policy["kind"] == "MutatingPolicy"
        (hook,) = k.webhooks_for("mutating" if mutating else "validating", name)
        prefix = "mpol" if mutating else "vpol"
        assert hook["name"] == f"{prefix}.validate.kyverno.svc-fail-finegrained-{name}"
        assert hook["clientConfig"]["url"] == f"https://127.0.0.1:{k.port}/{prefix}/{name}"
        assert hook["failurePolicy"] == spec["failurePolicy"] == "Fail"
        constraints = spec["matchConstraints"]
        assert hook["rules"] == [r | {"scope": "*"} for r in constraints["resourceRules"]]
        assert hook["namespaceSelector"] == _merged(
            constraints.get("namespaceSelector"), webhooks.get("namespaceSelector")
        )
        assert hook["objectSelector"] == _merged(
            constraints.get("objectSelector"), webhooks.get("objectSelector")
        )
        assert hook["matchConditions"] == spec["matchConditions"]
        assert constraints["namespaceSelector"]["matchExpressions"][0]["operator"] == "In"
        assert constraints["objectSelector"]
        assert hook["matchPolicy"] == "Equivalent" and hook["timeoutSeconds"] == 10
        assert hook["sideEffects"] == "NoneOnDryRun"
        if mutating:
            # the policy's reinvocationPolicy IfNeeded is not carried to its webhook
            assert spec["reinvocationPolicy"] == "IfNeeded"
            assert hook["reinvocationPolicy"] == "Never"


@pytest.mark.parametrize("suite", SUITES, ids=[s.key for s in SUITES])
def test_kyverno_admission_controller_runs_the_legacy_cluster_policies_as_the_cli(
    plane: tuple[ControlPlane, Kyverno], suite: Suite
) -> None:
    """The kyverno-legacy engine (ClusterPolicy) through the same admission controller: the
    engine cases' pods and failed checks are what the CLI is held to. The validate
    ClusterPolicy's rules run in Audit with emitWarning true, so Kyverno admits every pod (an
    Enforce denial would hide the mutated pod) and warns once per rule it evaluated: a
    failed rule's warning is its message."""
    cp, k = plane
    for ns in sorted({c.pod["metadata"]["namespace"] for c in suite.cases}):
        cp.ensure_namespace(ns)
    mutate, validate = [copy.deepcopy(f.objects[0]) for f in kyverno_legacy_policies(suite.intent)]
    validate["spec"]["emitWarning"] = True
    for rule in validate["spec"]["rules"]:  # the action is each rule's (validate.failureAction)
        rule["validate"]["failureAction"] = "Audit"
    check_of = {
        r["name"]: c
        for r, c in zip(validate["spec"]["rules"], check_ids(suite.intent), strict=True)
    }
    name = validate["metadata"]["name"]

    def checks(warnings: Sequence[str]) -> Checks:
        out = []
        for w in warnings:
            m = re.match(rf"^policy {re.escape(name)}\.(\S+): (.*)$", w, re.DOTALL)
            if m is None:
                continue  # another policy's warning (the mutate policy's)
            if not re.fullmatch(r"validation rule '\S+' passed\.", m[2]):
                out.append((check_of[m[1]], m[2]))
        return tuple(sorted(out))

    only = [c for c in suite.cases if not c.admission]
    admission = [c for c in suite.cases if c.admission]
    wrong = []
    try:
        k.apply([validate])
        wait_admitted(
            "the ClusterPolicy at admission",
            lambda: bool(create_pod_raw(cp, suite.case("unpinned-coordinator").pod)[2]),
        )
        for case in only:
            status, body, warnings = create_pod_raw(cp, case.pod)
            assert status == 201, body
            want = expected(case, "kyverno-legacy", suite.intent).checks
            if checks(warnings) != want:
                wrong.append(f"{case.name}: expected {want}, got {warnings}")
        k.apply([mutate])
        probe = admission[0].pod
        wait_admitted(
            "the mutate ClusterPolicy",
            lambda: project(create_pod_raw(cp, probe)[1]) != project(probe),
        )
        for case in admission:
            status, body, warnings = create_pod_raw(cp, case.pod)
            assert status == 201, body
            want_ = expected(case, "kyverno-legacy", suite.intent)
            if project(body) != project(want_.pod):
                wrong.append(f"{case.name}: mutated {project(body)}\n  want {project(want_.pod)}")
            if checks(warnings) != want_.checks:
                wrong.append(f"{case.name}: expected {want_.checks}, got {warnings}")
    finally:
        k.delete([mutate, validate])
    assert not wrong, "\n".join(wrong)


# --- PolicyReports: Kyverno's reports controller ------------------------------------------

REPORT_TIMEOUT = 240.0  # s: a background scan starts 30s after the pod's event
PR = "/apis/wgpolicyk8s.io/v1alpha2/namespaces/{}/policyreports"
EPHR = "/apis/reports.kyverno.io/v1/namespaces/{}/ephemeralreports"
SEEN: dict[str, dict[str, list[tuple[str, str, str]]]] = {}  # path -> the reports it saw


@pytest.fixture
def reports(plane: tuple[ControlPlane, Kyverno], tmp_path: Path) -> Iterator[ReportsController]:
    """Kyverno's reports controller next to the admission controller, for one test (it
    aggregates and deletes the EphemeralReports other tests read); the reports of earlier
    tests' pods removed first, its PolicyReports after."""
    cp, _ = plane
    binary = require_tool("kyverno-reports-controller")
    namespaces = ("ml-demo", "other-namespace")

    def clean() -> None:
        for ns in namespaces:
            cp.ensure_namespace(ns)
            cp.kube().delete(EPHR.format(ns))
            cp.kube().delete(PR.format(ns))

    clean()
    r = start_reports_controller(cp, binary, tmp_path / "reports-controller")
    try:
        yield r
    finally:
        r.stop()
        clean()


def _webhook_calls(cp: ControlPlane) -> float:
    """Calls the API server made to Kyverno's validating webhooks (its /metrics)."""
    kube = cp.kube()
    req = urllib.request.Request(
        kube.server + "/metrics", headers={"Authorization": f"Bearer {kube.token}"}
    )
    with urllib.request.urlopen(req, context=kube.ctx, timeout=10) as resp:
        text = resp.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith("apiserver_admission_webhook_admission_duration_seconds_count{"):
            labels, value = line.rsplit(" ", 1)
            if 'type="validating"' in labels and "kyverno" in labels:
                total += float(value)
    return total


def _policy_reports(
    cp: ControlPlane, namespaces: Sequence[str], uids: Mapping[str, str]
) -> dict[str, list[dict[str, Any]]]:
    """namespace/pod -> the results of the PolicyReport whose scope is that pod (by uid)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for ns in namespaces:
        for report in cp.kube().get(PR.format(ns))["items"]:
            scope = report.get("scope") or {}
            key = f"{ns}/{scope.get('name')}"
            if scope.get("kind") == "Pod" and uids.get(key) == scope.get("uid"):
                out[key] = report.get("results") or []
    return out


@pytest.mark.parametrize("path", ["background", "admission"])
def test_kyverno_reports_controller_policy_reports(
    plane: tuple[ControlPlane, Kyverno], reports: ReportsController, path: str
) -> None:
    """The generated validate test's pods, created through the API server with the rendered
    ValidatingPolicy (Audit) and Kyverno's reports controller running as its Deployment
    configures it. `background`: as rendered (kyverno.auditAtAdmission false: the
    policy's spec.evaluation.admission.enabled false): Kyverno registers no webhook for the policy and the API server calls
    none of Kyverno's validating webhooks for the pods; every pod is admitted, and the
    background scan's results reach a PolicyReport per pod (scope: the pod): fail for the
    test's failing pods, pass for its passing ones, none for its skipped ones.
    `admission`: as kyverno.auditAtAdmission renders it (admission on too): its webhook is
    called and the admission reports are aggregated into the same PolicyReports."""
    cp, k = plane
    test = "topogen-ml-training-validate"
    want = _expectations(GENERATED / "tests" / test / "kyverno-test.yaml")
    pods = _generated_resources(test)
    (rendered,) = [p for p in _policy_docs(GENERATED) if p["kind"] == "ValidatingPolicy"]
    assert rendered["spec"]["validationActions"] == ["Audit"]
    assert rendered["spec"]["evaluation"] == {"admission": {"enabled": False},
                                              "background": {"enabled": True}}  # fmt: skip
    (policy,) = _validate_only("Audit", admission=path == "admission")
    name = policy["metadata"]["name"]
    namespaces = sorted({p["metadata"]["namespace"] for p in pods})
    bad = next(p for p in pods if want[_key(p)] == "fail")
    if path == "background":
        k.apply([policy])
        # the admission controller has seen it: its status controller wrote conditions
        wait_admitted(
            "the policy's status",
            lambda: bool(
                ((cp.kube().get(f"{collection_path(policy)}/{name}").get("status") or {})
                 .get("conditionStatus") or {}).get("conditions")
            ),
        )  # fmt: skip
        assert not k.webhooks_for("validating", name)
    else:
        _install_audit(k, [policy], bad)
        assert k.webhooks_for("validating", name)
    calls = _webhook_calls(cp)
    created: dict[str, float] = {}
    uids: dict[str, str] = {}
    for pod in pods:
        status, body, _ = create_pod_raw(cp, pod, dry_run=False)
        assert status == 201, body  # Audit admits every pod
        created[_key(pod)] = time.monotonic()
        uids[_key(pod)] = body["metadata"]["uid"]
    calls = _webhook_calls(cp) - calls
    if path == "background":
        assert calls == 0, f"the API server called Kyverno's validating webhooks {calls} times"
        assert not k.webhooks_for("validating", name)
    else:
        assert calls > 0

    reported = {key for key, r in want.items() if r != "skip"}
    appeared: dict[str, float] = {}

    def results() -> dict[str, list[dict[str, Any]]]:
        got = _policy_reports(cp, namespaces, uids)
        for key, rs in got.items():
            if rs and key not in appeared:
                appeared[key] = time.monotonic() - created[key]
        return got

    try:
        wait_admitted(
            "the PolicyReports", lambda: reported <= {k for k, v in results().items() if v},
            REPORT_TIMEOUT,
        )  # fmt: skip
    except TimeoutError as exc:
        tail = reports.proc.tail() if reports.proc else ""
        raise AssertionError(f"{exc}; seen: {results()}\n{tail}") from exc
    got = results()
    timing = ", ".join(f"{key} {s:.1f}s" for key, s in sorted(appeared.items()))
    print(f"\n{path}: PolicyReports appeared after {timing}")
    seen: dict[str, list[tuple[str, str, str]]] = {}
    for key in reported:
        pod = key.split("/")[1]
        rows = [(r["policy"], r["result"], r.get("message", "")) for r in got[key]]
        assert [(p, res) for p, res, _ in rows] == [(name, want[key])], (key, got[key], timing)
        (result,) = got[key]
        assert result["source"] == "KyvernoValidatingPolicy", result
        if want[key] == "fail":
            assert rows[0][2].startswith(f"pod {pod}: "), rows
        seen[key] = rows
    skipped = {key for key, r in want.items() if r == "skip"}
    assert not skipped & {k for k, v in got.items() if v}, got
    SEEN[path] = seen
    other = SEEN.get("background" if path == "admission" else "admission")
    if other is not None:  # both ran: the users' PolicyReports are the same either way
        assert seen == other
    conditions = cp.kube().get(f"{collection_path(policy)}/{name}")["status"]["conditionStatus"]
    print(f"{path}: {len(seen)} PolicyReports, slowest {max(appeared.values()):.1f}s;")
    print(f"{path}: the policy's conditions {conditions.get('conditions')}")
