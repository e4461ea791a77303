"""Kueue v0.17.0's Topology Aware Scheduling on the real controller: what it does with a
queued job's templates, before topogen generates anything (the job edits here are written
by hand, as the mutation issue 31 asks for would write them).

Scenario (examples/kueue-tas): zones a and b with 16 GPUs each, zone c with 4; Topology
[zone, hostname]; a policy that denies training pods in zone c everything. A 4-GPU job
asking for one zone per PodSet:
- the control: TAS admits it into zone c (its best fit) and the pods, created as the
  operator creates them, are ungated and bound there;
- a required node affinity for zones a and b on the templates constrains TAS: admitted
  into zone a or b, bound there;
- without one podset-group-name Master and Worker are placed apart (each its own best
  fit, split across zones a and b when zone a is small); a group is judged by the
  workers' template only (kueue issue 15373);
- on a Topology without a hostname level TAS ignores the affinity: admitted into zone c,
  the pods Unschedulable;
- Kueue reads the templates when it creates the Workload: a later edit is not seen;
- a job without topology annotations on a TAS flavor is placed by implicit TAS: its pods
  carry only the scheduling gate and podset-unconstrained-topology;
- the same through the jobset integration.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from kueue_harness import Kueue
from kueue_kit import (
    GATE,
    GROUP_NAME,
    HOSTNAME,
    NAMESPACE,
    PODSET_LABEL,
    REQUIRED_TOPOLOGY,
    WORKLOAD_ANNOTATION,
    ZONE,
    assigned_zones,
    create,
    create_pods,
    install_queues,
    jobset_pods,
    pending_workload,
    role_templates,
    scenario,
    the,
    training_operator_pods,
    ungated,
    unsuspended,
    with_template_change,
    workload_for,
    zone_affinity,
    zone_of,
)
from live_harness import ControlPlane
from webhook_harness import wait_bound

pytestmark = [pytest.mark.tools, pytest.mark.slow]

ALLOWED = ("zone-a", "zone-b")
FLAVOR_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
Plane = tuple[ControlPlane, Kueue]


def _setup(cp: ControlPlane, queues: Sequence[Mapping[str, Any]] | None = None) -> None:
    cp.create_nodes(scenario("nodes.yaml"))
    install_queues(cp, queues if queues is not None else scenario("kueue.yaml"))
    cp.apply(scenario("cilium.yaml"))


def _pods_for(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    return training_operator_pods(job) if job["kind"] == "PyTorchJob" else jobset_pods(job)


def _run(cp: ControlPlane, job: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Queue the job; once admitted and unsuspended, create its pods as its operator does.
    -> (Workload, the unsuspended job)."""
    created = create(cp, job)
    workload = workload_for(cp, created)
    running = unsuspended(cp, created)
    create_pods(cp, _pods_for(running))
    return workload, running


def _bound_zones(cp: ControlPlane, job: Mapping[str, Any]) -> dict[str, str]:
    """pod -> zone of its node, once Kueue ungated every pod and kube-scheduler bound it."""
    names = [p["metadata"]["name"] for p in _pods_for(job)]
    ungated(cp, names)
    return {pod: zone_of(node) for pod, node in wait_bound(cp, NAMESPACE, names).items()}


def _constrained(job: Mapping[str, Any], roles: Sequence[str], group: bool) -> dict[str, Any]:
    change: dict[str, dict[str, Any]] = {r: {"affinity": zone_affinity(ALLOWED)} for r in roles}
    if group:
        for role in role_templates(job):
            change.setdefault(role, {})["annotations"] = {GROUP_NAME: "training"}
    return with_template_change(job, change)


def test_kueue_tas_control_picks_the_best_fit_zone_c(kueue_plane: Plane) -> None:
    """Unconstrained TAS admits the PyTorchJob into zone c, the zone its policy denies; the
    templates carry what Kueue adds (podset label, workload annotation, topology gate, the
    flavor's nodeLabels and tolerations); the pods are ungated onto zone-c hosts, bound."""
    cp, _ = kueue_plane
    _setup(cp)
    workload, running = _run(cp, the("pytorchjob.yaml"))
    assert assigned_zones(workload) == {"master": {"zone-c"}, "worker": {"zone-c"}}
    for role, template in role_templates(running).items():
        assert template["metadata"]["labels"][PODSET_LABEL] == role.lower()
        assert (
            template["metadata"]["annotations"][WORKLOAD_ANNOTATION] == workload["metadata"]["name"]
        )
        assert {"name": GATE} in template["spec"]["schedulingGates"]
        assert template["spec"]["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
        assert FLAVOR_TOLERATION in template["spec"]["tolerations"]
        assert "affinity" not in template["spec"]
    names = [p["metadata"]["name"] for p in _pods_for(running)]
    for name, pod in ungated(cp, names).items():
        # the ungater writes the assignment's level values: the host alone on [zone, hostname]
        selector = pod["spec"]["nodeSelector"]
        assert set(selector) == {"nvidia.com/gpu.present", HOSTNAME}, (name, selector)
        assert zone_of(selector[HOSTNAME]) == "zone-c"
    assert set(_bound_zones(cp, running).values()) == {"zone-c"}


@pytest.mark.parametrize("group", [False, True], ids=["podsets", "grouped"])
def test_kueue_required_node_affinity_constrains_tas_to_the_allowed_zones(
    kueue_plane: Plane, group: bool
) -> None:
    """The key experiment: a required node affinity for zones a and b on every template
    (ANDed with the flavor's nodeSelector) keeps TAS out of zone c; with one
    podset-group-name, Master and Worker share one zone."""
    cp, _ = kueue_plane
    _setup(cp)
    job = _constrained(the("pytorchjob.yaml"), ["Master", "Worker"], group)
    workload, running = _run(cp, job)
    zones = assigned_zones(workload)
    assert set().union(*zones.values()) <= set(ALLOWED), zones
    assert all(len(z) == 1 for z in zones.values()), zones
    for template in role_templates(running).values():
        assert template["spec"]["affinity"] == zone_affinity(ALLOWED)  # Kueue leaves it alone
    bound = set(_bound_zones(cp, running).values())
    assert bound <= set(ALLOWED), bound
    if group:
        assert len(bound) == 1, bound


@pytest.mark.parametrize("group", [False, True], ids=["podsets", "grouped"])
def test_kueue_places_podsets_apart_unless_grouped(kueue_plane: Plane, group: bool) -> None:
    """With zone a down to 2 GPUs, the affinity alone lets TAS split the job across the
    allowed zones (each PodSet its own best fit: the master into zone a, the workers into
    zone b); one podset-group-name keeps them in one zone."""
    cp, _ = kueue_plane
    nodes = [n for n in scenario("nodes.yaml") if n["metadata"]["labels"][ZONE] != "zone-a"]
    small = copy.deepcopy(scenario("nodes.yaml")[0])
    small["status"]["allocatable"]["nvidia.com/gpu"] = "2"
    cp.create_nodes([small, *nodes])
    install_queues(cp, scenario("kueue.yaml"))
    job = _constrained(the("pytorchjob.yaml"), ["Master", "Worker"], group)
    workload = workload_for(cp, create(cp, job))
    expected = {"master": {"zone-b"}, "worker": {"zone-b"}}
    if not group:
        expected["master"] = {"zone-a"}
    assert assigned_zones(workload) == expected


def test_kueue_podset_group_follows_the_workers_constraints(kueue_plane: Plane) -> None:
    """A group is judged by the workers' template only (v0.17, kueue issue 15373): the
    affinity on the workers alone keeps the master out of zone c too."""
    cp, _ = kueue_plane
    _setup(cp)
    job = _constrained(the("pytorchjob.yaml"), ["Worker"], group=True)
    workload, running = _run(cp, job)
    zones = assigned_zones(workload)
    assert zones["master"] == zones["worker"] and zones["worker"] <= set(ALLOWED), zones
    bound = set(_bound_zones(cp, running).values())
    assert len(bound) == 1 and bound <= set(ALLOWED), bound


def test_kueue_podset_group_ignores_the_coordinators_constraints(kueue_plane: Plane) -> None:
    """The converse: the affinity on the master alone is ignored; the group goes to zone c
    and the master, ungated with nodeSelector zone-c against its own affinity, is
    Unschedulable: the coordinator needs the same constraint as the workers."""
    cp, _ = kueue_plane
    _setup(cp)
    job = _constrained(the("pytorchjob.yaml"), ["Master"], group=True)
    workload, running = _run(cp, job)
    assert assigned_zones(workload) == {"master": {"zone-c"}, "worker": {"zone-c"}}
    names = [p["metadata"]["name"] for p in _pods_for(running)]
    ungated(cp, names)
    placed = cp.wait_scheduled(NAMESPACE, names, timeout=120)
    assert placed["resnet-master-0"] == "", placed  # Unschedulable
    assert {zone_of(n) for p, n in placed.items() if p != "resnet-master-0"} == {"zone-c"}


def test_kueue_topology_without_hostname_level_ignores_the_affinity(kueue_plane: Plane) -> None:
    """TAS honours a template's required node affinity only when the Topology's lowest level
    is kubernetes.io/hostname: on [zone] alone it admits into zone c anyway, and the pods
    (nodeSelector zone-c from the ungater, affinity a/b from the template) are
    Unschedulable."""
    cp, _ = kueue_plane
    queues = scenario("kueue.yaml")
    for obj in queues:
        if obj["kind"] == "Topology":
            obj["spec"]["levels"] = [{"nodeLabel": ZONE}]
    _setup(cp, queues)
    job = _constrained(the("pytorchjob.yaml"), ["Master", "Worker"], group=False)
    workload, running = _run(cp, job)
    assert assigned_zones(workload) == {"master": {"zone-c"}, "worker": {"zone-c"}}
    names = [p["metadata"]["name"] for p in _pods_for(running)]
    for pod in ungated(cp, names).values():
        assert pod["spec"]["nodeSelector"][ZONE] == "zone-c"
        assert HOSTNAME not in pod["spec"]["nodeSelector"]
    placed = cp.wait_scheduled(NAMESPACE, names, timeout=120)
    assert set(placed.values()) == {""}, placed


def test_kueue_reads_the_templates_when_it_creates_the_workload(kueue_plane: Plane) -> None:
    """An affinity written onto a queued job after Kueue made its Workload is not seen: the
    job is admitted into zone c (pkg/util/equality/podset.go compares counts, containers
    and tolerations): topogen's change must be made at the job's CREATE."""
    cp, _ = kueue_plane
    queues = scenario("kueue.yaml")
    _setup(cp, [q for q in queues if q["kind"] != "LocalQueue"])
    created = create(cp, the("pytorchjob.yaml"))
    pending = pending_workload(cp, created)  # no LocalQueue yet: inadmissible
    path = f"/apis/kubeflow.org/v1/namespaces/{NAMESPACE}/pytorchjobs/resnet"
    edited = _constrained(cp.kube().get(path), ["Master", "Worker"], group=False)
    cp.kube().request("PUT", path, edited)
    install_queues(cp, [q for q in queues if q["kind"] == "LocalQueue"])
    workload = workload_for(cp, created)
    assert workload["metadata"]["uid"] == pending["metadata"]["uid"]  # not re-created
    assert assigned_zones(workload) == {"master": {"zone-c"}, "worker": {"zone-c"}}
    for podset in workload["spec"]["podSets"]:
        assert "affinity" not in podset["template"]["spec"]
    # Kueue unsuspends the job it read with the edit (an update on a stale read would
    # conflict) and still runs it on that Workload: it saw the edit and ignored it
    running = unsuspended(cp, created)
    for template in role_templates(running).values():
        assert template["spec"]["affinity"] == zone_affinity(ALLOWED)
    path = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NAMESPACE}/workloads"
    (still,) = cp.kube().get(path)["items"]
    assert still["metadata"]["uid"] == pending["metadata"]["uid"]
    assert assigned_zones(still) == {"master": {"zone-c"}, "worker": {"zone-c"}}


def test_kueue_implicit_tas_marks_pods_with_the_gate_and_unconstrained_annotation(
    kueue_plane: Plane,
) -> None:
    """No topology annotation, a TAS flavor: Kueue still places the job by TAS (implicit,
    unconstrained); its pods carry the scheduling gate and podset-unconstrained-topology,
    and no label marks them (kueue.x-k8s.io/tas is gone since v0.14)."""
    cp, _ = kueue_plane
    _setup(cp)
    job = with_template_change(
        the("pytorchjob.yaml"),
        {r: {"annotations": {REQUIRED_TOPOLOGY: None}} for r in ("Master", "Worker")},
    )
    workload, running = _run(cp, job)
    for psa in workload["status"]["admission"]["podSetAssignments"]:
        assert psa["topologyAssignment"]["levels"] == [HOSTNAME]  # placed by TAS, host by host
    for template in role_templates(running).values():
        meta = template["metadata"]
        assert meta["annotations"]["kueue.x-k8s.io/podset-unconstrained-topology"] == "true"
        assert REQUIRED_TOPOLOGY not in meta["annotations"]
        assert not [k for k in meta.get("labels", {}) if k == "kueue.x-k8s.io/tas"]
        assert {"name": GATE} in template["spec"]["schedulingGates"]
    assert _bound_zones(cp, running)


@pytest.mark.parametrize("constrained", [False, True], ids=["control", "affinity"])
def test_kueue_jobset_integration_places_the_same_way(
    kueue_plane: Plane, constrained: bool
) -> None:
    """Through the jobset integration: unconstrained into zone c, with the affinity on both
    ReplicatedJobs (and one podset group) into zone a or b; pods ungated and bound there."""
    cp, _ = kueue_plane
    _setup(cp)
    job = the("jobset.yaml")
    if constrained:
        job = _constrained(job, ["launcher", "worker"], group=True)
    workload, running = _run(cp, job)
    zones = assigned_zones(workload)
    bound = set(_bound_zones(cp, running).values())
    if constrained:
        assert zones["launcher"] == zones["worker"] and zones["worker"] <= set(ALLOWED), zones
        assert len(bound) == 1 and bound <= set(ALLOWED), bound
    else:
        assert zones == {"launcher": {"zone-c"}, "worker": {"zone-c"}}
        assert bound == {"zone-c"}
