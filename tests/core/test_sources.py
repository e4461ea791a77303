"""Sources: strict reading of nodes, policies and pod specs (bad input is an InputError)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from helpers import objects, policies
from topogen.errors import InputError
from topogen.sources.nodes import read_nodes
from topogen.sources.workloads import read_workloads

ZONE = "topology.kubernetes.io/zone"


def _workload(spec: str) -> str:
    return f"""
    apiVersion: v1
    kind: Pod
    metadata: {{name: p, namespace: ml}}
    spec: {spec}
    """


def _read_pod(spec: str):
    (w,) = read_workloads(objects(_workload(spec)), [])
    return w.template


def _netpol_port(port: str) -> str:
    return f"""
    apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: {{name: p, namespace: ml}}
    spec: {{podSelector: {{}}, ingress: [{{ports: [{port}]}}]}}
    """


def test_node_fields() -> None:
    (n,) = read_nodes(
        objects(f"""
    apiVersion: v1
    kind: Node
    metadata: {{name: n1, labels: {{{ZONE}: zone-a}}}}
    spec:
      unschedulable: true
      podCIDRs: [10.0.1.0/24]
      taints: [{{key: nvidia.com/gpu, value: present, effect: NoSchedule}}]
    status: {{allocatable: {{cpu: 15800m, memory: 64Gi, nvidia.com/gpu: "8", pods: 110}}}}
    """),
        ZONE,
    )
    assert n.zone == "zone-a" and n.unschedulable and n.pod_cidrs == ("10.0.1.0/24",)
    assert n.allocatable["cpu"] == Fraction(158, 10)
    assert n.allocatable["memory"] == 64 * 2**30
    assert n.allocatable["nvidia.com/gpu"] == 8 and n.allocatable["pods"] == 110
    assert str(n.taints[0]) == "nvidia.com/gpu=present:NoSchedule"


def test_node_without_zone_label_is_a_zone_of_its_own() -> None:
    (n,) = read_nodes(
        objects("""
    apiVersion: v1
    kind: Node
    metadata: {name: cp-1}
    """),
        ZONE,
    )
    assert n.zone == "<no-zone>:cp-1"


def _node(name: str, allocatable: str) -> str:
    return f"""
    apiVersion: v1
    kind: Node
    metadata: {{name: {name}}}
    status: {{allocatable: {allocatable}}}
    """


def test_nodes_alike_share_no_allocatable_map_and_each_is_checked() -> None:
    """A pool's nodes repeat one allocatable map (read once): each node still gets its own
    copy, and a value equal to a good one but of another kind (true for 1) is judged anew."""
    same = '{cpu: "1", pods: "110"}'
    nodes = read_nodes(objects("---".join(_node(n, same) for n in "abc")), ZONE)
    assert all(n.allocatable == {"cpu": 1, "pods": 110} for n in nodes)
    assert len({id(n.allocatable) for n in nodes}) == 3
    with pytest.raises(InputError, match=r"Node c: status.allocatable.cpu is not a quantity: True"):
        read_nodes(objects(_node("a", "{cpu: 1}") + "---" + _node("c", "{cpu: true}")), ZONE)
    named = read_nodes(objects(_node("a", '{1: "2"}') + "---" + _node("b", '{true: "2"}')), ZONE)
    assert [list(n.allocatable) for n in named] == [["1"], ["True"]]


@pytest.mark.parametrize("field", ["unschedulable: 'false'", "unschedulable: 1"])
def test_node_booleans_must_be_booleans(field: str) -> None:
    with pytest.raises(InputError, match="unschedulable must be true or false"):
        read_nodes(
            objects(f"""
        apiVersion: v1
        kind: Node
        metadata: {{name: n1}}
        spec: {{{field}}}
        """),
            ZONE,
        )


def test_pod_spec_fields() -> None:
    t = _read_pod("""
      hostNetwork: true
      nodeSelector: {pool: gpu}
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}, {operator: Exists}]
      initContainers: [{name: init, resources: {requests: {cpu: "4"}}}]
      containers:
        - {name: a, ports: [{name: rdzv, containerPort: 29500}],
           resources: {requests: {cpu: 500m}, limits: {nvidia.com/gpu: 2}}}
        - {name: b, resources: {requests: {cpu: "1"}}}
    """)
    assert t.host_network and t.node_selector == {"pool": "gpu"}
    assert t.requests == {"cpu": Fraction(4), "nvidia.com/gpu": Fraction(2)}  # init max, sum
    assert t.ports == (("rdzv", 29500, "TCP"),)
    assert [(x.key, x.operator) for x in t.tolerations] == [
        ("nvidia.com/gpu", "Exists"),
        ("", "Exists"),
    ]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("{hostNetwork: 'false'}", "hostNetwork must be true or false"),
        ("{tolerations: [{key: [a], operator: Exists}]}", r"tolerations\[0\].key must be a string"),
        ("{tolerations: [{key: a, effect: NoScheduled}]}", r"tolerations\[0\].effect"),
        ("{containers: [{name: a, ports: [{containerPort: '80'}]}]}", "containerPort"),
        ("{containers: [{name: a, ports: [{containerPort: 0}]}]}", "containerPort"),
        (
            """{affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:
         {nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: 5}]}]}}}}""",
            "matchFields",
        ),
        (
            """{affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:
         {nodeSelectorTerms: [{matchFields: [{key: spec.x, operator: In, values: [a]}]}]}}}}""",
            "metadata.name",
        ),
    ],
)
def test_bad_pod_specs_are_input_errors(spec: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        _read_pod(spec)


@pytest.mark.parametrize(
    "port",
    [
        "{port: -5}",
        "{port: 80.5}",
        "{port: {a: 1}}",
        "{port: 70000}",
        "{port: 900, endPort: abc}",
        "{port: 900, endPort: 800}",
        "{port: Not_A_Name}",
        "{port: true}",
        "{port: '80'}",  # a string is a port name, which needs a letter (IsValidPortName)
        "{port: 0}",
    ],
)
def test_bad_policy_ports_are_input_errors(port: str) -> None:
    with pytest.raises(InputError, match="port"):
        policies(_netpol_port(port))


@pytest.mark.parametrize(
    ("port", "shown"),
    [
        ("{port: 80}", "80/TCP"),
        ("{port: 80, endPort: 90}", "80-90/TCP"),
        ("{port: http-alt, protocol: UDP}", "http-alt/UDP"),
        ("{protocol: SCTP}", "SCTP/*"),
    ],
)
def test_policy_ports(port: str, shown: str) -> None:
    (rule,) = policies(_netpol_port(port)).rules
    assert rule.ports is not None and [str(p) for p in rule.ports] == [shown]


def test_label_value_not_a_string_shows_what_was_written() -> None:
    with pytest.raises(InputError) as err:
        read_nodes(
            objects("""
        apiVersion: v1
        kind: Node
        metadata: {name: n, labels: {since: 2024-01-01, gpu: true}}
        """),
            ZONE,
        )
    assert 'quote it: since: "2024-01-01"' in str(err.value)


def test_cnp_spec_and_specs_are_both_read() -> None:
    ps = policies("""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: p, namespace: ml}
    spec: {endpointSelector: {}, ingress: [{}]}
    specs:
      - {endpointSelector: {}, egress: [{}]}
      - {endpointSelector: {}, ingressDeny: [{fromEntities: [world]}]}
    """)
    assert sorted((r.index, r.section) for r in ps.rules) == [
        (0, "ingress"),
        (1, "egress"),
        (2, "ingressDeny"),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            """
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: p, namespace: ml}
    spec: {nodeSelector: {}, ingress: [{}]}
    """,
            "only valid in a CiliumClusterwideNetworkPolicy",
        ),
        (
            """
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: p, namespace: ml}
    spec: {endpointSelector: {}, ingress: [{fromEntities: [everyone]}]}
    """,
            "unknown entity",
        ),
        (
            """
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: p}
    spec: {endpointSelector: {}}
    """,
            "has no ingress, ingressDeny, egress or egressDeny",
        ),
        (
            """
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: p, namespace: ml}
    spec:
      endpointSelector: {matchExpressions: [{key: a, operator: Equals, values: [b]}]}
      ingress: [{}]
    """,
            "operator",
        ),
        (
            """
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: p, namespace: ml}
    spec: {endpointSelector: {matchLabels: {zone: 1}}, ingress: [{}]}
    """,
            "must be a string",
        ),
    ],
)
def test_bad_policies_are_input_errors(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        policies(text)


def test_namespaced_policies_without_a_namespace_apply_in_default() -> None:
    # as `kubectl apply` puts them (sources.scope.namespace_of)
    ps = policies("""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: p}
    spec: {endpointSelector: {}, ingress: [{}]}
    ---
    apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: {name: n}
    spec: {podSelector: {}}
    """)
    assert [str(p) for p in ps.policies] == ["cnp default/p", "netpol default/n"]
    assert {r.subject_namespace for r in ps.rules} | {
        i.subject_namespace for i in ps.isolations
    } == {"default"}


def test_duplicate_objects_are_refused_and_lists_are_flattened() -> None:
    text = """
    apiVersion: v1
    kind: List
    items:
      - {apiVersion: v1, kind: Node, metadata: {name: a}}
      - {apiVersion: v1, kind: Node, metadata: {name: b}}
    """
    assert [o.name for o in objects(text)] == ["a", "b"]
    with pytest.raises(InputError, match="duplicate object Node a"):
        objects(text + "---\n{apiVersion: v1, kind: Node, metadata: {name: a}}\n")
