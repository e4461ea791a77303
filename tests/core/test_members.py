"""Network identities of a role's pods: stamped or static identity labels, hostNetwork."""

from __future__ import annotations

from helpers import node, template, topology
from topogen.analysis.members import Member
from topogen.analysis.nodeindex import NodeIndex
from topogen.analysis.placement import place
from topogen.analysis.reachability import PolicyIndex
from topogen.model import PodTemplate, PolicySet, Workload

TOPO = topology(
    node("a1", "zone-a", labels={"gpu": "true"}),
    node("a2", "zone-a", labels={"gpu": "true"}),
    node("b1", "zone-b"),
)
EMPTY = PolicyIndex(PolicySet((), (), ()), {})


def _member(tmpl: PodTemplate) -> Member:
    w = Workload("Job", "batch/v1", "ml", "w", "", 2, tmpl, "inline.yaml")
    return Member("worker", w, tmpl, place(tmpl, NodeIndex(TOPO)))


def test_identity_label_is_stamped_from_the_zone_the_pod_lands_in() -> None:
    m = _member(template({"role": "worker"}))
    assert m.identity("zone") == ("stamped", None)
    for zone in ("zone-a", "zone-b"):
        (ep,) = m.endpoints(zone, "zone", EMPTY, {}, set())
        assert ep.labels["zone"] == zone
        assert ep.labels["io.kubernetes.pod.namespace"] == "ml"


def test_static_identity_label_keeps_its_value_wherever_the_pod_lands() -> None:
    m = _member(template({"role": "worker", "zone": "zone-a"}))
    assert m.identity("zone") == ("static", "zone-a")
    (ep,) = m.endpoints("zone-b", "zone", EMPTY, {}, set())
    assert ep.labels["zone"] == "zone-a"


def test_no_identity_label_configured_adds_nothing() -> None:
    m = _member(template({"role": "worker"}))
    assert m.identity(None) == ("none", None)
    (ep,) = m.endpoints("zone-a", None, EMPTY, {}, set())
    assert "zone" not in ep.labels


def test_host_network_pods_are_their_nodes() -> None:
    m = _member(template({"role": "worker"}, host_network=True))
    eps = m.endpoints("zone-a", "zone", EMPTY, {}, set())
    assert len(eps) == 1 and eps[0].host  # nodes no policy tells apart: one representative
    assert eps[0].labels["gpu"] == "true" and "zone" not in eps[0].labels
    eps_b = m.endpoints("zone-b", "zone", EMPTY, {}, {"gpu"})
    assert [e.node for e in eps_b] == ["b1"]
