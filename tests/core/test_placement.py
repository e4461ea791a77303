"""Scheduler semantics (design.md): tolerations, node selection, resources, pod affinity."""

from __future__ import annotations

from fractions import Fraction

import pytest

from helpers import GPU, ZONE, node, template, topology
from topogen.analysis.job_fit import PodDemand, pack
from topogen.analysis.members import Member, possible_zone_pairs
from topogen.analysis.nodeindex import NodeIndex
from topogen.analysis.placement import place
from topogen.model import (
    LabelSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodAffinityTerm,
    Requirement,
    Taint,
    Toleration,
    Workload,
)

GPU_TAINT = Taint(GPU, "present", "NoSchedule")


# --- toleration matching -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        (Toleration(GPU, "Equal", "present", "NoSchedule"), GPU_TAINT, True),
        (Toleration(GPU, "Equal", "absent", "NoSchedule"), GPU_TAINT, False),  # value mismatch
        (Toleration(GPU, "Equal", "", "NoSchedule"), GPU_TAINT, False),
        (Toleration(GPU, "Equal", "", ""), Taint(GPU, "", "NoSchedule"), True),
        (Toleration("other", "Equal", "present", "NoSchedule"), GPU_TAINT, False),
        (Toleration(GPU, "Exists", "", "NoSchedule"), GPU_TAINT, True),  # Exists: value ignored
        (Toleration(GPU, "Exists", "", "NoExecute"), GPU_TAINT, False),  # effect mismatch
        (Toleration(GPU, "Exists", "", ""), GPU_TAINT, True),  # empty effect: every effect
        (Toleration(GPU, "Exists", "", ""), Taint(GPU, "x", "NoExecute"), True),
        (Toleration(GPU, "Equal", "present", ""), Taint(GPU, "present", "NoExecute"), True),
        (Toleration("", "Exists", "", ""), GPU_TAINT, True),  # empty key + Exists: everything
        (Toleration("", "Exists", "", ""), Taint("dedicated", "x", "NoExecute"), True),
        (Toleration("", "Exists", "", "NoExecute"), GPU_TAINT, False),
        (Toleration("other", "Exists", "", ""), GPU_TAINT, False),
    ],
)
def test_toleration_matching(toleration: Toleration, taint: Taint, expected: bool) -> None:
    assert toleration.tolerates(taint) is expected


@pytest.mark.parametrize(
    ("effect", "blocks"), [("NoSchedule", True), ("NoExecute", True), ("PreferNoSchedule", False)]
)
def test_taint_effects_that_block_scheduling(effect: str, blocks: bool) -> None:
    topo = topology(node("n1", taints=[Taint("dedicated", "ml", effect)]))
    placement = place(template(), NodeIndex(topo))
    assert (not placement.nodes) is blocks
    if blocks:
        assert "taint dedicated=ml:" in placement.why_not()


def test_matching_toleration_lets_the_pod_on_the_tainted_node() -> None:
    topo = topology(node("gpu-a1", taints=[GPU_TAINT], gpu=2), node("cpu-b1", "zone-b"))
    assert place(template(), NodeIndex(topo)).zones == ("zone-b",)
    tolerant = template(tolerations=[Toleration(GPU, "Exists", "", "NoSchedule")])
    assert place(tolerant, NodeIndex(topo)).zones == ("zone-a", "zone-b")
    wrong_value = template(tolerations=[Toleration(GPU, "Equal", "absent", "NoSchedule")])
    assert place(wrong_value, NodeIndex(topo)).zones == ("zone-b",)


# --- label selectors -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("req", "labels", "expected"),
    [
        (Requirement("zone", "In", ("a", "b")), {"zone": "a"}, True),
        (Requirement("zone", "In", ("a", "b")), {"zone": "c"}, False),
        (Requirement("zone", "In", ("a",)), {}, False),
        (Requirement("zone", "NotIn", ("a",)), {"zone": "b"}, True),
        (Requirement("zone", "NotIn", ("a",)), {"zone": "a"}, False),
        (Requirement("zone", "NotIn", ("a",)), {}, True),
        (Requirement("zone", "Exists"), {"zone": ""}, True),
        (Requirement("zone", "Exists"), {"other": "a"}, False),
        (Requirement("zone", "DoesNotExist"), {}, True),
        (Requirement("zone", "DoesNotExist"), {"zone": "a"}, False),
    ],
)
def test_label_selector_operators(req: Requirement, labels: dict[str, str], expected: bool) -> None:
    assert LabelSelector((), (req,)).matches(labels) is expected


def test_label_selector_ands_labels_and_expressions_and_empty_selects_all() -> None:
    sel = LabelSelector((("app", "train"),), (Requirement("zone", "Exists"),))
    assert sel.matches({"app": "train", "zone": "a"})
    assert not sel.matches({"app": "train"})
    assert not sel.matches({"app": "other", "zone": "a"})
    assert LabelSelector().matches({})
    assert LabelSelector().matches({"anything": "x"})


# --- node selection ------------------------------------------------------------------------


def _term(*reqs: tuple[str, str, tuple[str, ...]]) -> NodeSelectorTerm:
    return NodeSelectorTerm(tuple(NodeSelectorRequirement(k, op, v) for k, op, v in reqs))


def test_node_selector_terms_are_ored_and_expressions_anded() -> None:
    topo = topology(
        node("a-gpu", "zone-a", labels={"pool": "gpu"}),
        node("a-cpu", "zone-a", labels={"pool": "cpu"}),
        node("b-gpu", "zone-b", labels={"pool": "gpu"}),
        node("c-cpu", "zone-c", labels={"pool": "cpu"}),
    )
    anded = template(node_affinity=(_term((ZONE, "In", ("zone-a",)), ("pool", "In", ("gpu",))),))
    assert [n.name for n in place(anded, NodeIndex(topo)).nodes] == ["a-gpu"]
    ored = template(
        node_affinity=(_term((ZONE, "In", ("zone-a",))), _term(("pool", "In", ("gpu",))))
    )
    assert [n.name for n in place(ored, NodeIndex(topo)).nodes] == ["a-gpu", "a-cpu", "b-gpu"]


def test_empty_node_selector_term_matches_nothing() -> None:
    topo = topology(node("n1"))
    assert not place(template(node_affinity=(NodeSelectorTerm(()),)), NodeIndex(topo)).nodes
    # ... but does not stop another term from matching
    other = _term((ZONE, "Exists", ()))
    assert place(template(node_affinity=(NodeSelectorTerm(()), other)), NodeIndex(topo)).nodes


@pytest.mark.parametrize(
    ("op", "value", "expected"),
    [
        ("Gt", "4", ["n8"]),
        ("Lt", "8", ["n4"]),
        ("Gt", "8", []),
        ("Lt", "4", []),
    ],
)
def test_gt_and_lt_compare_integers(op: str, value: str, expected: list[str]) -> None:
    topo = topology(
        node("n4", labels={"gpus": "4"}),
        node("n8", labels={"gpus": "8"}),
        node("nx", labels={"gpus": "many"}),
        node("none"),
    )
    tmpl = template(node_affinity=(_term(("gpus", op, (value,))),))
    assert [n.name for n in place(tmpl, NodeIndex(topo)).nodes] == expected


def test_node_selector_and_node_affinity_must_both_hold() -> None:
    topo = topology(
        node("a-gpu", "zone-a", labels={"pool": "gpu"}),
        node("b-gpu", "zone-b", labels={"pool": "gpu"}),
        node("a-cpu", "zone-a", labels={"pool": "cpu"}),
    )
    tmpl = template(
        node_selector={"pool": "gpu"}, node_affinity=(_term((ZONE, "In", ("zone-a",))),)
    )
    placement = place(tmpl, NodeIndex(topo))
    assert [n.name for n in placement.nodes] == ["a-gpu"]
    assert "nodeSelector pool=gpu" in placement.why_not()
    assert "node affinity" in placement.why_not()


@pytest.mark.parametrize(
    ("op", "values", "expected"),
    [
        ("In", ("gpu",), ["n-gpu"]),
        ("NotIn", ("gpu",), ["n-cpu", "n-none"]),  # a node without the key is not in
        ("Exists", (), ["n-cpu", "n-gpu"]),
        ("DoesNotExist", (), ["n-none"]),
    ],
)
def test_node_selector_operators(op: str, values: tuple[str, ...], expected: list[str]) -> None:
    topo = topology(
        node("n-gpu", labels={"pool": "gpu"}), node("n-cpu", labels={"pool": "cpu"}), node("n-none")
    )
    tmpl = template(node_affinity=(_term(("pool", op, values)),))
    assert sorted(n.name for n in place(tmpl, NodeIndex(topo)).nodes) == expected


def test_match_fields_metadata_name() -> None:
    topo = topology(node("n1"), node("n2"))
    tmpl = template(node_affinity=(_term(("metadata.name", "In", ("n2",))),))
    assert [n.name for n in place(tmpl, NodeIndex(topo)).nodes] == ["n2"]


def test_cordoned_nodes_are_not_eligible() -> None:
    topo = topology(node("n1", unschedulable=True), node("n2", "zone-b"))
    placement = place(template(), NodeIndex(topo))
    assert [n.name for n in placement.nodes] == ["n2"]
    assert "cordoned" in placement.why_not()
    tol = Toleration("node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule")
    assert len(place(template(tolerations=[tol]), NodeIndex(topo)).nodes) == 2


# --- resources -----------------------------------------------------------------------------


def test_extended_resources_must_fit_allocatable() -> None:
    topo = topology(
        node("cpu-1"),
        node("gpu-1", gpu=1),
        node("gpu-4", gpu=4),
        node("amd-2", **{"amd.com/gpu": 2}),
    )
    assert [n.name for n in place(template(gpus=1), NodeIndex(topo)).nodes] == ["gpu-1", "gpu-4"]
    assert [n.name for n in place(template(gpus=2), NodeIndex(topo)).nodes] == ["gpu-4"]
    placement = place(template(gpus=8), NodeIndex(topo))
    assert not placement.nodes
    assert f"insufficient {GPU} (needs 8, has 4)" in placement.why_not()
    amd = template()
    amd = type(amd)(labels={}, requests={"amd.com/gpu": Fraction(2)})
    assert [n.name for n in place(amd, NodeIndex(topo)).nodes] == ["amd-2"]


def test_pack_counts_every_replica_against_free_capacity() -> None:
    nodes = [node("g1", gpu=2), node("g2", gpu=2)]
    names = frozenset({"g1", "g2"})
    four = PodDemand("worker", 4, {GPU: Fraction(1)}, names)
    assert pack([four], nodes, (GPU,)) == (True, "")
    five = PodDemand("worker", 5, {GPU: Fraction(1)}, names)
    fits, short = pack([five], nodes, (GPU,))
    assert not fits
    assert "1 more worker pod(s) need 1 nvidia.com/gpu, only 0 free" in short
    big = PodDemand("worker", 1, {GPU: Fraction(3)}, names)  # 4 free in total, 2 per node
    assert not pack([big], nodes, (GPU,))[0]


# --- required pod affinity -------------------------------------------------------------------


def _member(
    role: str,
    labels: dict[str, str],
    topo_nodes: list,
    replicas: int = 1,
    affinity: tuple[PodAffinityTerm, ...] = (),
) -> Member:
    tmpl = template(labels, pod_affinity=affinity)
    w = Workload("Deployment", "apps/v1", "ml", f"{role}-w", "", replicas, tmpl, "inline.yaml")
    return Member(role, w, tmpl, place(tmpl, NodeIndex(topology(*topo_nodes))))


def _cross(pairs: dict[tuple[int, int], list[tuple[str, str]]]) -> set[tuple[str, str]]:
    return {p for ps in pairs.values() for p in ps if p[0] != p[1]}


NODES = [node("a1", "zone-a"), node("b1", "zone-b")]
COORD = {"app": "job", "role": "coordinator"}
WORKER = {"app": "job", "role": "worker"}


def test_without_affinity_the_scheduler_may_split_the_group() -> None:
    members = [_member("coordinator", COORD, NODES), _member("worker", WORKER, NODES, 4)]
    pairs = possible_zone_pairs(members, topology(*NODES))
    assert ("zone-a", "zone-b") in pairs[(0, 1)]
    assert ("zone-a", "zone-b") in pairs[(1, 1)]  # workers among themselves


def test_worker_pinned_to_coordinator_zone_gives_no_cross_zone_pairs() -> None:
    to_coord = PodAffinityTerm(LabelSelector(tuple(sorted(COORD.items()))), ZONE)
    members = [
        _member("coordinator", COORD, NODES),
        _member("worker", WORKER, NODES, 4, (to_coord,)),
    ]
    pairs = possible_zone_pairs(members, topology(*NODES))
    assert _cross(pairs) == set()
    assert sorted(pairs[(0, 1)]) == [("zone-a", "zone-a"), ("zone-b", "zone-b")]


def test_affinity_on_another_topology_key_does_not_pin_the_zone() -> None:
    to_coord = PodAffinityTerm(LabelSelector(tuple(sorted(COORD.items()))), "rack")
    nodes = [
        node("a1", "zone-a", labels={"rack": "r1"}),
        node("b1", "zone-b", labels={"rack": "r1"}),
    ]
    members = [
        _member("coordinator", COORD, nodes),
        _member("worker", WORKER, nodes, 2, (to_coord,)),
    ]
    assert ("zone-a", "zone-b") in _cross(possible_zone_pairs(members, topology(*nodes)))


def test_affinity_matching_only_itself_keeps_replicas_together_but_may_go_anywhere() -> None:
    to_self = PodAffinityTerm(LabelSelector(tuple(sorted(WORKER.items()))), ZONE)
    members = [
        _member("coordinator", COORD, NODES),
        _member("worker", WORKER, NODES, 4, (to_self,)),
    ]
    pairs = possible_zone_pairs(members, topology(*NODES))
    assert _cross({(1, 1): pairs[(1, 1)]}) == set()  # the first goes anywhere, the rest follow
    assert ("zone-b", "zone-a") in pairs[(0, 1)]  # ... which need not be the coordinator's zone


def test_required_anti_affinity_to_itself_on_the_zone_key_spreads_replicas() -> None:
    apart = PodAffinityTerm(LabelSelector(tuple(sorted(WORKER.items()))), ZONE, anti=True)
    members = [_member("coordinator", COORD, NODES), _member("worker", WORKER, NODES, 2, (apart,))]
    pairs = possible_zone_pairs(members, topology(*NODES))
    assert sorted(pairs[(1, 1)]) == [("zone-a", "zone-b"), ("zone-b", "zone-a")]
    # anti-affinity to other pods does not constrain the replicas among themselves
    away = PodAffinityTerm(LabelSelector(tuple(sorted(COORD.items()))), ZONE, anti=True)
    members = [_member("coordinator", COORD, NODES), _member("worker", WORKER, NODES, 2, (away,))]
    assert ("zone-a", "zone-a") in possible_zone_pairs(members, topology(*NODES))[(1, 1)]
