"""topogen's policies for Kueue's Topology Aware Scheduling on the real path: rendered from
examples/kueue-tas, installed through Kyverno's admission controller, in front of the
real Kueue controller and kube-scheduler (conftest.py's kueue_kyverno_plane).

- The PyTorchJob (as written, and without any Kueue annotation) is mutated at creation;
  Kueue admits its Workload into zone-a or zone-b (unconstrained, it picks zone-c: the
  control in test_live_kueue.py); its pods, made as the training operator makes them, are
  ungated and bound there, and `topogen audit` finds the group whole and allowed.
- The same job as a JobSet, through Kueue's jobset integration.
- On a Topology without a hostname level topogen says KUEUE_MANAGED with the reason,
  renders no job policy, and Kueue places the job as it would without topogen.
- A pod Kueue's TAS places (its scheduling gate alone marks it) passes topogen's pod
  policies unchanged.
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from kueue_harness import Kueue
from kueue_kit import (
    EXAMPLE,
    GATE,
    NAMESPACE,
    SCENARIO,
    ZONE,
    assigned_zones,
    create,
    create_pods,
    install_queues,
    jobset_pods,
    role_templates,
    the,
    training_operator_pods,
    ungated,
    unsuspended,
    workload_for,
    zone_of,
)
from kyverno_harness import Kyverno
from kyverno_kit import BEFORE, install, is_coordinator, render_group
from live_harness import ControlPlane, KubeError, collection_path
from live_kit import cli, create_pod_raw, docs, example_snapshot, pods_of, write_config
from webhook_harness import wait_admitted, wait_bound

pytestmark = [pytest.mark.tools, pytest.mark.slow]

ALLOWED = {"zone-a", "zone-b"}
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
Plane = tuple[ControlPlane, Kueue, Kyverno]
Docs = list[dict[str, Any]]


def _example(
    tmp: Path, queues: Callable[[Docs], None] | None = None, engines: Sequence[str] = ()
) -> Path:
    root = tmp / "kueue-tas"
    shutil.copytree(EXAMPLE, root)
    if engines:
        raw = yaml.safe_load((root / "topogen.yaml").read_text())
        raw["engines"] = list(engines)
        (root / "topogen.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    if queues is not None:
        path = root / "kueue" / "queues.yaml"
        objs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        queues(objs)
        path.write_text(yaml.safe_dump_all(objs, sort_keys=False))
    return root / "topogen.yaml"


def _with_jobset(config: Path) -> Path:
    """The example with the JobSet beside the PyTorchJob, a group of its profile, and the
    example's policy for its pods too (the CCNP selects the training operator's label)."""
    root = config.parent
    shutil.copy(SCENARIO["jobset.yaml"], root / "workloads" / "jobset.yaml")
    policy_path = root / "cilium" / "training-zones.yaml"
    policy = yaml.safe_load(policy_path.read_text())
    jobset = copy.deepcopy(policy)
    jobset["metadata"]["name"] = "jobset-zones"
    for spec in jobset["specs"]:
        spec["endpointSelector"]["matchExpressions"] = [
            {"key": f"k8s:{JOBSET_NAME}", "operator": "Exists"}
        ]
    policy_path.write_text(yaml.safe_dump_all([policy, jobset], sort_keys=False))
    raw = yaml.safe_load(config.read_text())
    raw["clusters"][0]["cilium"]["identityLabels"].append("k8s:jobset.sigs.k8s.io")
    raw["groups"].append(
        {
            "name": "jobset",
            "profile": "jobset",
            "namespaces": [NAMESPACE],
            "identityLabel": ZONE,
        }
    )
    config.write_text(yaml.safe_dump(raw, sort_keys=False))
    return config


def _setup(cp: ControlPlane, config: Path) -> None:
    root = config.parent
    cp.create_nodes(docs(root / "cluster" / "nodes.yaml"))
    install_queues(cp, docs(root / "kueue" / "queues.yaml"))
    cp.apply(docs(root / "cilium" / "training-zones.yaml"))


def _affinities(cp: ControlPlane, job: dict[str, Any]) -> list[bool]:
    """Per template of a dry run of `job` (admission in full, nothing stored): whether it
    came back with a node affinity. Under another name: `job` itself may exist."""
    probe = {**job, "metadata": {**job["metadata"], "name": job["metadata"]["name"] + "-probe"}}
    got = cp.kube().request("POST", collection_path(job), probe, query={"dryRun": "All"})
    return ["affinity" in t["spec"] for t in role_templates(got).values()]


def _pinned(cp: ControlPlane, job: dict[str, Any]) -> bool:
    try:
        return all(_affinities(cp, job))
    except KubeError:  # a webhook not yet answering
        return False


def _install_job_policies(k: Kyverno, policies: Docs, job: dict[str, Any]) -> None:
    """Create the policies; wait until Kyverno has their webhooks and the API server calls
    it for `job` (a dry run comes back with its templates pinned)."""
    k.apply(policies)
    k.wait_registered(policies)
    wait_admitted("the job policies at admission", lambda: _pinned(k.cp, job))


def _bare(job: dict[str, Any]) -> dict[str, Any]:
    """The job without any Kueue annotation: implicit TAS (topogen adds the request)."""
    out = copy.deepcopy(job)
    for t in role_templates(out).values():
        t.get("metadata", {}).pop("annotations", None)
    return out


def _run_to_bound(cp: ControlPlane, job: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """Queue the job, create its pods as its operator does once Kueue unsuspends it:
    (the Workload, the zones its pods were bound in)."""
    created = create(cp, job)
    workload = workload_for(cp, created)
    running = unsuspended(cp, created)
    pods = (training_operator_pods if job["kind"] == "PyTorchJob" else jobset_pods)(running)
    names = create_pods(cp, pods)
    ungated(cp, names)
    bound = wait_bound(cp, NAMESPACE, names)
    return workload, {zone_of(n) for n in bound.values()}


def _audit(cp: ControlPlane, config: Path) -> dict[str, Any]:
    kubeconfig = cp.kubeconfig("audit", "topogen-admin-token")
    result = cli("audit", "--kubeconfig", kubeconfig, "-c", config, "-o", "json")
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


@pytest.mark.parametrize("bare", [False, True], ids=["as-written", "no-annotations"])
def test_kueue_job_policies_keep_the_pytorchjob_in_an_allowed_zone(
    kueue_kyverno_plane: Plane, tmp_path: Path, bare: bool
) -> None:
    cp, _, k = kueue_kyverno_plane
    config = _example(tmp_path)
    policies = render_group(config, tmp_path / "out")
    assert {p["metadata"]["name"] for p in policies} == {
        "topogen-pytorch-kueue-pytorchjob-mutate",
        "topogen-pytorch-kueue-pytorchjob-validate",
    }
    _setup(cp, config)
    job = _bare(the("pytorchjob.yaml")) if bare else the("pytorchjob.yaml")
    _install_job_policies(k, policies, job)
    workload, bound = _run_to_bound(cp, job)
    zones = assigned_zones(workload)
    assert len(set().union(*zones.values())) == 1 and set().union(*zones.values()) <= ALLOWED
    assert len(bound) == 1 and bound <= ALLOWED, bound
    for podset in workload["spec"]["podSets"]:
        request = podset["topologyRequest"]
        assert request["required"] == ZONE and request["podSetGroupName"] == "topogen-pytorch"
    report = _audit(cp, config)
    (group,) = report["groups"]
    assert group["status"] == "healthy" and not group["flags"], group
    assert group["zones"] == sorted(bound)


def test_kueue_job_policies_keep_the_jobset_in_an_allowed_zone(
    kueue_kyverno_plane: Plane, tmp_path: Path
) -> None:
    cp, _, k = kueue_kyverno_plane
    config = _with_jobset(_example(tmp_path))
    policies = [
        p for p in render_group(config, tmp_path / "out") if "jobset" in p["metadata"]["name"]
    ]
    assert len(policies) == 2, [p["metadata"]["name"] for p in policies]
    _setup(cp, config)
    job = _bare(the("jobset.yaml"))
    _install_job_policies(k, policies, job)
    workload, bound = _run_to_bound(cp, job)
    assert set().union(*assigned_zones(workload).values()) <= ALLOWED
    assert len(bound) == 1 and bound <= ALLOWED, bound
    requests = [p["topologyRequest"] for p in workload["spec"]["podSets"]]
    assert len(requests) == 2 and all(r["required"] == ZONE for r in requests)
    assert len({r["podSetGroupName"] for r in requests}) == 1
    groups = {g["group"]: g for g in _audit(cp, config)["groups"]}
    assert groups["jobset"]["status"] == "healthy" and not groups["jobset"]["flags"]
    assert groups["jobset"]["zones"] == sorted(bound)


def test_kueue_native_policies_keep_the_pytorchjob_in_an_allowed_zone(
    kueue_kyverno_plane: Plane, tmp_path: Path
) -> None:
    """The native engine: the API server's own MutatingAdmissionPolicy mutates the job,
    its ValidatingAdmissionPolicy (Audit) checks it; no policy engine involved."""
    cp, _, _ = kueue_kyverno_plane
    config = _example(tmp_path, engines=["native"])
    out = tmp_path / "out"
    assert cli("render", "-c", config, "--out", out).exit_code == 0
    folder = out / "policies" / "gpu-east" / "native"
    policies = [d for f in sorted(folder.glob("topogen-*.yaml")) for d in docs(f)]
    assert [p["kind"] for p in policies] == [
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    ]
    _setup(cp, config)
    job = the("pytorchjob.yaml")
    kube = cp.kube()
    try:
        cp.apply(policies)
        wait_admitted("the native job policies", lambda: _pinned(cp, job))
        workload, bound = _run_to_bound(cp, job)
    finally:
        for p in policies:
            kube.delete(f"{collection_path(p)}/{p['metadata']['name']}")
        wait_admitted("the native job policies gone", lambda: not any(_affinities(cp, job)))
    zones = set().union(*assigned_zones(workload).values())
    assert len(zones) == 1 and zones <= ALLOWED, zones
    assert len(bound) == 1 and bound <= ALLOWED, bound
    requests = [p["topologyRequest"] for p in workload["spec"]["podSets"]]
    assert all(r["required"] == ZONE for r in requests)
    assert {r["podSetGroupName"] for r in requests} == {"topogen-pytorch"}
    (group,) = _audit(cp, config)["groups"]
    assert group["status"] == "healthy" and not group["flags"], group


def test_kueue_without_hostname_level_is_reported_and_left_alone(
    kueue_kyverno_plane: Plane, tmp_path: Path
) -> None:
    cp, _, _ = kueue_kyverno_plane

    def zone_only(objs: Docs) -> None:
        for o in objs:
            if o["kind"] == "Topology":
                o["spec"]["levels"] = [{"nodeLabel": ZONE}]

    config = _example(tmp_path, zone_only)
    analysis = cli("analyze", "-c", config, "-o", "json")
    assert analysis.exit_code == 0, analysis.output
    findings = json.loads(analysis.stdout)["findings"]
    assert {f["kind"] for f in findings} == {"KUEUE_MANAGED"}
    assert all(
        "add kubernetes.io/hostname as the lowest level of Topology default" in f["message"]
        for f in findings
    )
    out = tmp_path / "out"
    assert cli("render", "-c", config, "--out", out).exit_code == 0
    assert not list(out.glob("policies/*/kyverno/topogen-*.yaml"))  # nothing to install
    _setup(cp, config)
    workload, bound = _run_to_bound(cp, the("pytorchjob.yaml"))
    assert set().union(*assigned_zones(workload).values()) == {"zone-c"}  # as without topogen
    assert bound == {"zone-c"}


def test_kueue_gated_pod_passes_the_pod_policies_unchanged(
    kueue_kyverno_plane: Plane, tmp_path: Path
) -> None:
    """The zone-split example's pod policies: a coordinator is mutated; the same pod as
    Kueue's TAS creates it (its gate, and Kueue's own annotation) is not."""
    cp, _, k = kueue_kyverno_plane
    snap = example_snapshot(cp, tmp_path)
    config = write_config(tmp_path, nodes=[snap], workloads=[BEFORE])
    policies = render_group(config, tmp_path / "out")
    coordinator = next(p for p in pods_of(docs(BEFORE)) if is_coordinator(p))
    install(k, policies, coordinator)
    gated = copy.deepcopy(coordinator)
    gated["metadata"]["name"] = "implicit-tas"
    gated["metadata"].setdefault("annotations", {})[
        "kueue.x-k8s.io/podset-unconstrained-topology"
    ] = "true"
    gated["spec"]["schedulingGates"] = [{"name": GATE}]
    status, body, _ = create_pod_raw(cp, gated)
    assert status == 201, body
    assert body["spec"].get("affinity") is None and body["spec"].get("tolerations") in (None, [])
    assert body["metadata"]["labels"] == gated["metadata"]["labels"]
    status, control, _ = create_pod_raw(cp, coordinator)
    assert status == 201 and control["spec"].get("affinity"), control  # the policies do run
