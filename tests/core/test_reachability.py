"""Reachability semantics (design.md, "Domain facts"): PolicyIndex.verdict over parsed policies."""

from __future__ import annotations

import pytest

from helpers import HOST_FIREWALL, ZONE, allowed, host, index, ns, pod, tcp, verdict
from topogen.errors import InputError
from topogen.model import CiliumSettings

WORKER_ALLOWS_NOTHING = """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: worker-in, namespace: ml}
spec:
  endpointSelector: {matchLabels: {role: worker}}
  ingress:
    - fromEndpoints: [{matchLabels: {role: nobody}}]
"""


# --- both ends ------------------------------------------------------------------------


def test_no_policy_allows_everything() -> None:
    idx = index("")
    assert allowed(idx, pod(role="coordinator"), pod(role="worker"))


def test_sender_egress_allow_is_not_enough_receiver_ingress_must_allow_too() -> None:
    idx = index(
        """
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: coord-out, namespace: ml}
    spec:
      endpointSelector: {matchLabels: {role: coordinator}}
      egress:
        - toEndpoints: [{matchLabels: {role: worker}}]
    ---
    """
        + WORKER_ALLOWS_NOTHING
    )
    v = verdict(idx, pod(role="coordinator"), pod(role="worker"))
    assert not v.permits(tcp(29500))
    assert v.egress.allowed.covers(tcp(29500))
    reasons = " ".join(v.blockers(tcp(29500)))
    assert "receiver ingress" in reasons and "sender egress" not in reasons
    assert [str(p) for p in v.blocking_policies(tcp(29500))] == ["cnp ml/worker-in"]


def test_receiver_ingress_allow_is_not_enough_sender_egress_must_allow_too() -> None:
    idx = index("""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: coord-out, namespace: ml}
    spec:
      endpointSelector: {matchLabels: {role: coordinator}}
      egress:
        - toEndpoints: [{matchLabels: {role: dns}}]
    ---
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: worker-in, namespace: ml}
    spec:
      endpointSelector: {matchLabels: {role: worker}}
      ingress:
        - fromEndpoints: [{matchLabels: {role: coordinator}}]
    """)
    v = verdict(idx, pod(role="coordinator"), pod(role="worker"))
    assert v.ingress.allowed.covers(tcp(29500))
    assert not v.permits(tcp(29500))
    assert "sender egress" in " ".join(v.blockers(tcp(29500)))
    # the reverse direction is not restricted by either policy's egress/ingress
    assert allowed(idx, pod(role="worker"), pod(role="coordinator"))


def test_both_ends_allowing_permits() -> None:
    idx = index("""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: both, namespace: ml}
    spec:
      endpointSelector: {matchLabels: {app: train}}
      ingress: [{fromEndpoints: [{matchLabels: {app: train}}]}]
      egress: [{toEndpoints: [{matchLabels: {app: train}}]}]
    """)
    assert allowed(idx, pod(app="train", role="a"), pod(app="train", role="b"))
    assert not allowed(idx, pod(app="other"), pod(app="train"))
    assert not allowed(idx, pod(app="train"), pod(app="other"))


# --- default deny -----------------------------------------------------------------------


def test_selected_by_ingress_rule_is_default_deny_for_ingress_only() -> None:
    idx = index(WORKER_ALLOWS_NOTHING)
    assert not allowed(idx, pod(role="coordinator"), pod(role="worker"))
    # egress of the worker is not isolated by an ingress-only rule
    assert allowed(idx, pod(role="worker"), pod(role="coordinator"))
    # a pod the rule does not select is not isolated
    assert allowed(idx, pod(role="coordinator"), pod(role="other"))


def test_selected_by_egress_rule_is_default_deny_for_egress_only() -> None:
    idx = index("""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: out, namespace: ml}
    spec:
      endpointSelector: {matchLabels: {role: worker}}
      egress: [{toEndpoints: [{matchLabels: {role: nobody}}]}]
    """)
    assert not allowed(idx, pod(role="worker"), pod(role="coordinator"))
    assert allowed(idx, pod(role="coordinator"), pod(role="worker"))


def test_empty_ingress_rule_isolates_and_allows_nothing() -> None:
    idx = index("""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: lockdown, namespace: ml}
    spec:
      endpointSelector: {}
      ingress: [{}]
    """)
    v = verdict(idx, pod(role="coordinator"), pod(role="worker"))
    assert v.ingress.isolated and not v.ingress.allows
    assert not v.permits(tcp(1))


def test_a_rule_with_only_empty_sections_is_refused() -> None:
    # Cilium: "rule must have at least one of Ingress, IngressDeny, Egress, EgressDeny"
    with pytest.raises(InputError, match="has no ingress, ingressDeny, egress or egressDeny"):
        index("""
        apiVersion: cilium.io/v2
        kind: CiliumNetworkPolicy
        metadata: {name: nothing, namespace: ml}
        spec:
          endpointSelector: {}
          ingress: []
        """)


@pytest.mark.parametrize("section", ["ingressDeny", "egressDeny"])
def test_deny_rules_alone_also_put_the_endpoint_in_default_deny(section: str) -> None:
    side = "fromEndpoints" if section == "ingressDeny" else "toEndpoints"
    idx = index(f"""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {{name: deny-only, namespace: ml}}
    spec:
      endpointSelector: {{}}
      {section}: [{{{side}: [{{matchLabels: {{role: attacker}}}}]}}]
    """)
    # neither end is the attacker, yet the path is denied: the deny rule isolated both pods
    assert not allowed(idx, pod(role="coordinator"), pod(role="worker"))


def test_enable_default_deny_false_switches_isolation_off() -> None:
    idx = index("""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: additive, namespace: ml}
    spec:
      endpointSelector: {matchLabels: {role: worker}}
      enableDefaultDeny: {ingress: false}
      ingress: [{fromEndpoints: [{matchLabels: {role: monitor}}]}]
    """)
    v = verdict(idx, pod(role="coordinator"), pod(role="worker"))
    assert not v.ingress.isolated
    assert v.permits(tcp(29500))


def test_enable_default_deny_false_keeps_deny_rules() -> None:
    idx = index("""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: additive-deny, namespace: ml}
    spec:
      endpointSelector: {matchLabels: {role: worker}}
      enableDefaultDeny: {ingress: false}
      ingressDeny: [{fromEndpoints: [{matchLabels: {role: attacker}}]}]
    """)
    assert allowed(idx, pod(role="coordinator"), pod(role="worker"))
    assert not allowed(idx, pod(role="attacker"), pod(role="worker"))


def test_enable_default_deny_is_per_direction() -> None:
    idx = index("""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: half, namespace: ml}
    spec:
      endpointSelector: {matchLabels: {role: worker}}
      enableDefaultDeny: {egress: false}
      ingress: [{fromEndpoints: [{matchLabels: {role: monitor}}]}]
      egress: [{toEndpoints: [{matchLabels: {role: monitor}}]}]
    """)
    assert not allowed(idx, pod(role="coordinator"), pod(role="worker"))  # ingress: default on
    assert allowed(idx, pod(role="worker"), pod(role="coordinator"))  # egress: switched off


def test_any_selecting_rule_asking_for_default_deny_wins() -> None:
    idx = index("""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: additive, namespace: ml}
    spec:
      endpointSelector: {matchLabels: {role: worker}}
      enableDefaultDeny: {ingress: false}
      ingress: [{fromEndpoints: [{matchLabels: {role: monitor}}]}]
    ---
    apiVersion: cilium.io/v2
    kind: CiliumClusterwideNetworkPolicy
    metadata: {name: strict}
    spec:
      endpointSelector: {matchLabels: {role: worker}}
      ingress: [{fromEndpoints: [{matchLabels: {role: scraper}}]}]
    """)
    v = verdict(idx, pod(role="coordinator"), pod(role="worker"))
    assert [str(p) for p in v.ingress.isolated_by] == ["ccnp strict"]
    assert not v.permits(tcp(29500))
    # the allows of both rules still count
    assert allowed(idx, pod(role="monitor"), pod(role="worker"))
    assert allowed(idx, pod(role="scraper"), pod(role="worker"))


# --- deny beats allow; union of allows -------------------------------------------------


def test_deny_beats_allow_across_cnp_and_ccnp() -> None:
    idx = index("""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: allow-all-ns, namespace: ml}
    spec:
      endpointSelector: {}
      ingress: [{fromEndpoints: [{}]}]
    ---
    apiVersion: cilium.io/v2
    kind: CiliumClusterwideNetworkPolicy
    metadata: {name: no-coordinators}
    spec:
      endpointSelector: {matchLabels: {role: worker}}
      ingressDeny: [{fromEndpoints: [{matchLabels: {role: coordinator}}]}]
    """)
    v = verdict(idx, pod(role="coordinator"), pod(role="worker"))
    assert v.ingress.allows, "the allow rule matched"
    assert not v.permits(tcp(29500))
    assert [str(p) for p in v.blocking_policies(tcp(29500))] == ["ccnp no-coordinators"]
    assert "denied by ccnp no-coordinators" in " ".join(v.blockers(tcp(29500)))
    assert allowed(idx, pod(role="other"), pod(role="worker"))


def test_cilium_deny_beats_networkpolicy_allow() -> None:
    idx = index("""
    apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: {name: allow, namespace: ml}
    spec:
      podSelector: {}
      ingress: [{}]
    ---
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: deny, namespace: ml}
    spec:
      endpointSelector: {}
      enableDefaultDeny: {ingress: false}
      ingressDeny: [{fromEndpoints: [{matchLabels: {role: coordinator}}]}]
    """)
    assert not allowed(idx, pod(role="coordinator"), pod(role="worker"))
    assert allowed(idx, pod(role="other"), pod(role="worker"))


def test_deny_on_some_ports_leaves_the_others_allowed() -> None:
    idx = index("""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: no-rendezvous, namespace: ml}
    spec:
      endpointSelector: {}
      ingress: [{fromEndpoints: [{}]}]
      ingressDeny:
        - fromEndpoints: [{}]
          toPorts: [{ports: [{port: "29500", protocol: TCP}]}]
    """)
    src, dst = pod(role="coordinator"), pod(role="worker")
    assert not allowed(idx, src, dst, tcp(29500))
    assert allowed(idx, src, dst, tcp(8080))


def test_allows_are_a_union_across_cnp_ccnp_and_networkpolicy() -> None:
    idx = index("""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: p29500, namespace: ml}
    spec:
      endpointSelector: {matchLabels: {role: worker}}
      ingress:
        - fromEndpoints: [{matchLabels: {role: coordinator}}]
          toPorts: [{ports: [{port: "29500", protocol: TCP}]}]
    ---
    apiVersion: cilium.io/v2
    kind: CiliumClusterwideNetworkPolicy
    metadata: {name: p8080}
    spec:
      endpointSelector: {matchLabels: {role: worker}}
      ingress:
        - fromEndpoints: [{matchLabels: {role: coordinator}}]
          toPorts: [{ports: [{port: "8080", protocol: TCP}]}]
    ---
    apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: {name: p9000, namespace: ml}
    spec:
      podSelector: {matchLabels: {role: worker}}
      ingress:
        - from: [{podSelector: {matchLabels: {role: coordinator}}}]
          ports: [{port: 9000, endPort: 9010}]
    """)
    src, dst = pod(role="coordinator"), pod(role="worker")
    assert allowed(idx, src, dst, tcp(29500, 8080, 9000, 9010))
    assert not allowed(idx, src, dst, tcp(9011))
    assert not allowed(idx, src, dst, tcp(29501))


def test_l4_only_rule_applies_to_every_peer() -> None:
    idx = index("""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: port-only, namespace: ml}
    spec:
      endpointSelector: {matchLabels: {role: worker}}
      ingress:
        - toPorts: [{ports: [{port: "29500", protocol: TCP}]}]
    """)
    dst = pod(role="worker")
    assert allowed(idx, pod("elsewhere", role="anything"), dst, tcp(29500))
    assert allowed(idx, host("node-1", zone="zone-b"), dst, tcp(29500))
    assert not allowed(idx, pod(role="coordinator"), dst, tcp(29501))


def test_named_port_resolves_against_the_destination() -> None:
    idx = index("""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: named, namespace: ml}
    spec:
      endpointSelector: {matchLabels: {role: coordinator}}
      ingress:
        - fromEndpoints: [{}]
          toPorts: [{ports: [{port: rendezvous, protocol: TCP}]}]
    """)
    exposing = pod(role="coordinator", ports=(("rendezvous", 29500, "TCP"),))
    assert allowed(idx, pod(role="worker"), exposing, tcp(29500))
    assert not allowed(idx, pod(role="worker"), exposing, tcp(29501))
    assert not allowed(idx, pod(role="worker"), pod(role="coordinator"), tcp(29500))


# --- peer selectors: namespaces, prefixes, expressions ----------------------------------

FROM_COORDINATOR = """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {{name: from-coord, namespace: ml}}
spec:
  endpointSelector: {{matchLabels: {{role: worker}}}}
  ingress:
    - fromEndpoints: [{{matchLabels: {selector}}}]
"""


def test_cnp_peer_selector_without_namespace_means_the_policy_namespace() -> None:
    idx = index(FROM_COORDINATOR.format(selector="{role: coordinator}"))
    dst = pod("ml", role="worker")
    assert allowed(idx, pod("ml", role="coordinator"), dst)
    assert not allowed(idx, pod("other", role="coordinator"), dst)


@pytest.mark.parametrize("key", ["k8s:io.kubernetes.pod.namespace", "io.kubernetes.pod.namespace"])
def test_cnp_peer_selector_with_namespace_key_names_that_namespace(key: str) -> None:
    idx = index(FROM_COORDINATOR.format(selector=f"{{role: coordinator, {key}: other}}"))
    dst = pod("ml", role="worker")
    assert allowed(idx, pod("other", role="coordinator"), dst)
    assert not allowed(idx, pod("ml", role="coordinator"), dst)


def test_cnp_peer_namespace_expression_overrides_the_default() -> None:
    idx = index("""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: two-ns, namespace: ml}
    spec:
      endpointSelector: {}
      ingress:
        - fromEndpoints:
            - matchExpressions:
                - {key: k8s:io.kubernetes.pod.namespace, operator: In, values: [ml, tools]}
    """)
    assert allowed(idx, pod("tools", role="x"), pod("ml"))
    assert allowed(idx, pod("ml", role="x"), pod("ml"))
    assert not allowed(idx, pod("third", role="x"), pod("ml"))


def test_cnp_namespace_label_selector_reaches_every_namespace_with_the_label() -> None:
    # Cilium adds no namespace to a peer selector with an io.cilium.k8s.namespace.labels key
    namespaces = [ns("ml", team="ai"), ns("tools", team="ai"), ns("web", team="shop")]
    idx = index(
        FROM_COORDINATOR.format(selector="{k8s:io.cilium.k8s.namespace.labels.team: ai}"),
        namespaces,
    )
    dst = pod("ml", idx, role="worker")
    assert allowed(idx, pod("ml", idx, role="coordinator"), dst)
    assert allowed(idx, pod("tools", idx, role="coordinator"), dst)
    assert not allowed(idx, pod("web", idx, role="coordinator"), dst)


def test_cnp_subject_is_only_in_its_namespace() -> None:
    idx = index(WORKER_ALLOWS_NOTHING)
    assert not allowed(idx, pod("ml", role="coordinator"), pod("ml", role="worker"))
    assert allowed(idx, pod("ml", role="coordinator"), pod("other", role="worker"))


def test_ccnp_peers_and_subjects_are_cluster_wide() -> None:
    idx = index("""
    apiVersion: cilium.io/v2
    kind: CiliumClusterwideNetworkPolicy
    metadata: {name: cw}
    spec:
      endpointSelector: {matchLabels: {role: worker}}
      ingress: [{fromEndpoints: [{matchLabels: {role: coordinator}}]}]
    """)
    for src_ns in ("ml", "other", "kube-system"):
        assert allowed(idx, pod(src_ns, role="coordinator"), pod("ml", role="worker"))
    assert not allowed(idx, pod("ml", role="other"), pod("team-b", role="worker"))


@pytest.mark.parametrize("prefix", ["k8s:", "any:", ""])
def test_k8s_prefix_on_label_keys_is_the_same_key(prefix: str) -> None:
    idx = index(f"""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {{name: prefixed, namespace: ml}}
    spec:
      endpointSelector: {{matchLabels: {{{prefix}role: worker}}}}
      ingress:
        - fromEndpoints:
            - matchLabels: {{{prefix}role: coordinator}}
            - matchExpressions: [{{key: {prefix}app, operator: Exists}}]
    """)
    assert allowed(idx, pod(role="coordinator"), pod(role="worker"))
    assert allowed(idx, pod(app="x"), pod(role="worker"))
    assert not allowed(idx, pod(role="other"), pod(role="worker"))


@pytest.mark.parametrize(
    ("expr", "allowed_zones"),
    [
        ("{key: zone, operator: In, values: [zone-a, zone-c]}", {"zone-a", "zone-c"}),
        ("{key: zone, operator: NotIn, values: [zone-a]}", {"zone-b", "zone-c", None}),
        ("{key: zone, operator: Exists}", {"zone-a", "zone-b", "zone-c"}),
        ("{key: zone, operator: DoesNotExist}", {None}),
    ],
)
def test_match_expression_operators_in_peer_selectors(
    expr: str, allowed_zones: set[str | None]
) -> None:
    idx = index(f"""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {{name: expr, namespace: ml}}
    spec:
      endpointSelector: {{matchLabels: {{role: worker}}}}
      ingress: [{{fromEndpoints: [{{matchExpressions: [{expr}]}}]}}]
    """)
    dst = pod(role="worker")
    for zone in ("zone-a", "zone-b", "zone-c", None):
        src = pod(role="coordinator") if zone is None else pod(role="coordinator", zone=zone)
        assert allowed(idx, src, dst) == (zone in allowed_zones), zone


# --- entities ----------------------------------------------------------------------------


def _entities(*names: str) -> str:
    return f"""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {{name: ents, namespace: ml}}
    spec:
      endpointSelector: {{matchLabels: {{role: worker}}}}
      ingress: [{{fromEntities: [{", ".join(names)}]}}]
    """


@pytest.mark.parametrize(
    ("entity", "pods", "remote_hosts"),
    [
        ("cluster", True, True),
        ("all", True, True),
        ("world", False, False),
        ("host", False, False),
        ("remote-node", False, True),
    ],
)
def test_entities_for_pod_and_host_peers(entity: str, pods: bool, remote_hosts: bool) -> None:
    idx = index(_entities(entity))
    dst = pod("ml", role="worker")
    assert allowed(idx, pod("other", role="coordinator"), dst) == pods
    assert allowed(idx, host("gpu-b1", zone="zone-b"), dst) == remote_hosts


def test_host_entity_is_the_local_node_for_host_policies() -> None:
    idx = index(
        """
    apiVersion: cilium.io/v2
    kind: CiliumClusterwideNetworkPolicy
    metadata: {name: host-fw}
    spec:
      nodeSelector: {matchLabels: {gpu: "true"}}
      ingress: [{fromEntities: [host]}]
    """,
        cilium=HOST_FIREWALL,
    )
    local = host("gpu-a1", gpu="true")
    assert allowed(idx, host("gpu-a1", gpu="true"), local)
    assert not allowed(idx, host("gpu-a2", gpu="true"), local)
    assert not allowed(idx, pod(role="coordinator"), local)


# --- CIDR rules never match pod-to-pod traffic -------------------------------------------


@pytest.mark.parametrize(
    "peer",
    [
        "fromCIDR: [10.0.0.0/8]",
        "fromCIDRSet: [{cidr: 0.0.0.0/0}]",
    ],
)
def test_cilium_cidr_ingress_never_matches_pods(peer: str) -> None:
    idx = index(f"""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {{name: cidr, namespace: ml}}
    spec:
      endpointSelector: {{}}
      ingress: [{{{peer}}}]
    """)
    v = verdict(idx, pod(role="coordinator"), pod(role="worker"))
    assert v.ingress.isolated and not v.permits(tcp(29500))


@pytest.mark.parametrize("peer", ["toCIDR: [0.0.0.0/0]", "toCIDRSet: [{cidr: 10.0.0.0/8}]"])
def test_cilium_cidr_egress_never_matches_pods(peer: str) -> None:
    idx = index(f"""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {{name: cidr, namespace: ml}}
    spec:
      endpointSelector: {{}}
      egress: [{{{peer}}}]
    """)
    assert not allowed(idx, pod(role="coordinator"), pod(role="worker"))


def test_networkpolicy_ipblock_never_matches_pods() -> None:
    idx = index("""
    apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: {name: ipblock, namespace: ml}
    spec:
      podSelector: {}
      ingress: [{from: [{ipBlock: {cidr: 0.0.0.0/0}}]}]
    """)
    assert not allowed(idx, pod(role="coordinator"), pod(role="worker"))


# --- hostNetwork pods are node identities ------------------------------------------------

HOST_POLICY = """
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: gpu-hosts}
spec:
  nodeSelector: {matchLabels: {gpu: "true"}}
  ingress:
    - fromNodes: [{matchLabels: {topology.kubernetes.io/zone: zone-a}}]
  egress:
    - toNodes: [{matchLabels: {topology.kubernetes.io/zone: zone-a}}]
"""


def test_host_policies_are_inert_without_the_host_firewall() -> None:
    idx = index(HOST_POLICY, cilium=CiliumSettings(node_selector_labels=True))
    a1 = host("gpu-a1", gpu="true", **{ZONE: "zone-a"})
    b1 = host("gpu-b1", gpu="true", **{ZONE: "zone-b"})
    assert allowed(idx, b1, a1) and allowed(idx, a1, b1)


def test_from_nodes_needs_the_agent_s_node_selector_labels() -> None:
    with pytest.raises(InputError, match="enable-node-selector-labels"):
        index(HOST_POLICY, cilium=CiliumSettings(host_firewall=True))


def test_host_policy_from_nodes_uses_node_labels() -> None:
    idx = index(HOST_POLICY, cilium=HOST_FIREWALL)
    zone = "topology.kubernetes.io/zone"
    a1 = host("gpu-a1", gpu="true", **{zone: "zone-a"})
    a2 = host("gpu-a2", gpu="true", **{zone: "zone-a"})
    b1 = host("gpu-b1", gpu="true", **{zone: "zone-b"})
    assert allowed(idx, a1, a2)
    assert not allowed(idx, b1, a1)  # a1's ingress refuses (b1's egress allows zone-a)
    assert not allowed(idx, a1, b1)
    # fromNodes/toNodes select remote nodes only; a node to itself is loopback, unfiltered
    assert allowed(idx, a1, a1)
    assert verdict(idx, a1, a1).notes == (
        "both ends on one node: loopback traffic, which no policy filters",
    )
    v = verdict(idx, b1, a1)
    assert [str(p) for p in v.blocking_policies(tcp(1))] == ["ccnp gpu-hosts"]


def test_from_nodes_does_not_match_pods_and_pod_policies_do_not_select_hosts() -> None:
    idx = index(
        HOST_POLICY
        + """
    ---
    apiVersion: cilium.io/v2
    kind: CiliumClusterwideNetworkPolicy
    metadata: {name: all-pods}
    spec:
      endpointSelector: {}
      ingress: [{fromEndpoints: [{matchLabels: {role: nobody}}]}]
    ---
    apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: {name: np-all, namespace: ml}
    spec:
      podSelector: {}
      policyTypes: [Ingress, Egress]
    """,
        cilium=HOST_FIREWALL,
    )
    zone = "topology.kubernetes.io/zone"
    a1 = host("gpu-a1", gpu="true", **{zone: "zone-a"})
    a2 = host("gpu-a2", gpu="true", **{zone: "zone-a"})
    # a pod with the node's labels is still a pod: fromNodes does not match it
    lookalike = verdict(idx, pod("other", gpu="true", **{zone: "zone-a"}), a1)
    assert lookalike.ingress.isolated and not lookalike.ingress.allows
    assert not lookalike.permits(tcp(29500))
    # endpointSelector {} and a NetworkPolicy podSelector {} select pods, never hosts
    v = verdict(idx, a1, a2)
    assert [str(p) for p in v.ingress.isolated_by] == ["ccnp gpu-hosts"]
    assert v.permits(tcp(29500))


def test_pod_endpoint_selectors_do_not_match_host_peers() -> None:
    idx = index("""
    apiVersion: cilium.io/v2
    kind: CiliumClusterwideNetworkPolicy
    metadata: {name: pods-only}
    spec:
      endpointSelector: {matchLabels: {role: worker}}
      ingress: [{fromEndpoints: [{}]}]
    """)
    assert allowed(idx, pod("any", role="coordinator"), pod(role="worker"))
    assert not allowed(idx, host("gpu-b1", role="coordinator"), pod(role="worker"))


def test_reserved_label_selector_in_a_cnp_matches_remote_nodes() -> None:
    """Cilium adds no namespace to a selector on reserved: labels."""
    idx = index(FROM_COORDINATOR.format(selector="{reserved:remote-node: ''}"))
    assert allowed(idx, host("gpu-b1"), pod(role="worker"))
    assert not allowed(idx, pod(role="coordinator"), pod(role="worker"))


# --- Kubernetes NetworkPolicy --------------------------------------------------------------


def test_networkpolicy_egress_only_does_not_isolate_ingress() -> None:
    idx = index("""
    apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: {name: egress-only, namespace: ml}
    spec:
      podSelector: {}
      policyTypes: [Egress]
    """)
    v = verdict(idx, pod(role="coordinator"), pod(role="worker"))
    assert v.egress.isolated and not v.ingress.isolated
    assert not v.permits(tcp(1))
    assert v.ingress.allowed.covers(tcp(1))


def test_networkpolicy_default_policy_types() -> None:
    idx = index("""
    apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: {name: ingress-default, namespace: ml}
    spec:
      podSelector: {matchLabels: {role: worker}}
      egress: []
    ---
    apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: {name: egress-default, namespace: ml}
    spec:
      podSelector: {matchLabels: {role: coordinator}}
      egress: [{to: [{podSelector: {matchLabels: {role: dns}}}]}]
    """)
    # no policyTypes: Ingress always; Egress only when egress rules are present
    assert not allowed(idx, pod(role="x"), pod(role="worker"))
    assert allowed(idx, pod(role="worker"), pod(role="x"))
    assert not allowed(idx, pod(role="coordinator"), pod(role="x"))
    # ... and Ingress is always among the defaulted types, rules or not
    assert not allowed(idx, pod(role="x"), pod(role="coordinator"))


def test_networkpolicy_rules_apply_whatever_policy_types_names() -> None:
    # Cilium's ParseNetworkPolicy turns every egress rule into an egress entry, so a
    # policy whose policyTypes names only Ingress still isolates egress by its rules
    idx = index("""
    apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: {name: ingress-only, namespace: ml}
    spec:
      podSelector: {}
      policyTypes: [Ingress]
      ingress: [{}]
      egress: [{to: [{podSelector: {matchLabels: {role: nobody}}}]}]
    """)
    v = verdict(idx, pod(role="coordinator"), pod(role="worker"))
    assert v.ingress.allowed.is_everything() and v.egress.allowed.empty


def test_networkpolicy_namespace_and_pod_selector_in_one_peer_are_anded() -> None:
    namespaces = [ns("ml"), ns("tools", team="ai"), ns("web", team="web")]
    idx = index(
        """
    apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: {name: and, namespace: ml}
    spec:
      podSelector: {matchLabels: {role: worker}}
      ingress:
        - from:
            - namespaceSelector: {matchLabels: {team: ai}}
              podSelector: {matchLabels: {role: coordinator}}
    """,
        namespaces,
    )
    dst = pod("ml", idx, role="worker")
    assert allowed(idx, pod("tools", idx, role="coordinator"), dst)
    assert not allowed(idx, pod("tools", idx, role="other"), dst)
    assert not allowed(idx, pod("web", idx, role="coordinator"), dst)
    assert not allowed(idx, pod("ml", idx, role="coordinator"), dst)


def test_networkpolicy_namespace_and_pod_selector_as_two_peers_are_ored() -> None:
    namespaces = [ns("ml"), ns("tools", team="ai"), ns("web", team="web")]
    idx = index(
        """
    apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: {name: or, namespace: ml}
    spec:
      podSelector: {matchLabels: {role: worker}}
      ingress:
        - from:
            - namespaceSelector: {matchLabels: {team: ai}}
            - podSelector: {matchLabels: {role: coordinator}}
    """,
        namespaces,
    )
    dst = pod("ml", idx, role="worker")
    assert allowed(idx, pod("tools", idx, role="other"), dst)  # namespace peer
    assert allowed(idx, pod("ml", idx, role="coordinator"), dst)  # pod peer, own namespace
    assert not allowed(idx, pod("web", idx, role="coordinator"), dst)  # pod peer: ml only
    assert not allowed(idx, pod("ml", idx, role="other"), dst)


def test_networkpolicy_namespace_selector_uses_the_metadata_name_label() -> None:
    idx = index("""
    apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: {name: by-name, namespace: ml}
    spec:
      podSelector: {}
      ingress:
        - from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: tools}}}]
    """)
    assert allowed(idx, pod("tools", role="x"), pod("ml"))
    assert not allowed(idx, pod("web", role="x"), pod("ml"))


def test_networkpolicy_selects_only_its_namespace() -> None:
    idx = index("""
    apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: {name: deny-all, namespace: ml}
    spec:
      podSelector: {}
      policyTypes: [Ingress]
    """)
    assert not allowed(idx, pod("x"), pod("ml"))
    assert allowed(idx, pod("x"), pod("other"))


def test_networkpolicy_ports_with_protocol_default_tcp() -> None:
    idx = index("""
    apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: {name: ports, namespace: ml}
    spec:
      podSelector: {}
      ingress: [{ports: [{port: 29500}]}]
    """)
    from topogen.analysis.ports import PortSet

    src, dst = pod(role="a"), pod(role="b")
    assert allowed(idx, src, dst, tcp(29500))
    assert not allowed(idx, src, dst, PortSet.of({"UDP": [(29500, 29500)]}))


def test_icmp_only_rule_isolates_but_allows_no_tcp() -> None:
    idx = index("""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: ping, namespace: ml}
    spec:
      endpointSelector: {}
      ingress:
        - fromEndpoints: [{}]
          icmps: [{fields: [{type: 8, family: IPv4}]}]
    """)
    v = verdict(idx, pod(role="coordinator"), pod(role="worker"))
    assert v.ingress.isolated and v.ingress.allowed.empty


def test_l4_only_deny_applies_to_every_peer() -> None:
    idx = index("""
    apiVersion: cilium.io/v2
    kind: CiliumClusterwideNetworkPolicy
    metadata: {name: no-ssh}
    spec:
      endpointSelector: {}
      enableDefaultDeny: {ingress: false}
      ingressDeny: [{toPorts: [{ports: [{port: "22", protocol: TCP}]}]}]
    """)
    assert not allowed(idx, pod("any", role="x"), pod(role="worker"), tcp(22))
    assert not allowed(idx, host("n1"), pod(role="worker"), tcp(22))
    assert allowed(idx, pod("any", role="x"), pod(role="worker"), tcp(29500))
