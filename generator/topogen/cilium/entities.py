"""Cilium's entities (fromEntities/toEntities) and which identities each selects.

As pkg/policy/api/entity.go maps them to selectors over reserved identity labels;
`cluster` adds the local cluster's pods (io.cilium.k8s.policy.cluster=<cluster-name>),
`cluster-mesh` every pod with a cluster label.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from topogen.cilium.identity import CLUSTER_KEY

__all__ = ["ENTITIES", "entities_select"]

# the CRD's enum (world-ipv4/world-ipv6 are accepted by the agent, not by the API server)
ENTITIES = (
    "all",
    "world",
    "cluster",
    "cluster-mesh",
    "host",
    "init",
    "ingress",
    "unmanaged",
    "remote-node",
    "health",
    "none",
    "kube-apiserver",
)

_CLUSTER_RESERVED = (
    "reserved:host",
    "reserved:remote-node",
    "reserved:init",
    "reserved:ingress",
    "reserved:health",
    "reserved:unmanaged",
    "reserved:kube-apiserver",
    "reserved:cluster",
)


def _entity_selects(entity: str, labels: Mapping[str, str], cluster_name: str) -> bool:
    if entity == "all":
        return True
    if entity in ("cluster", "cluster-mesh"):
        if any(k in labels for k in _CLUSTER_RESERVED):
            return True
        if entity == "cluster":
            return labels.get(CLUSTER_KEY) == cluster_name
        return CLUSTER_KEY in labels or "reserved:clustermesh" in labels
    if entity == "world":
        return any(
            k in labels for k in ("reserved:world", "reserved:world-ipv4", "reserved:world-ipv6")
        )
    return f"reserved:{entity}" in labels


def entities_select(
    entities: Collection[str], labels: Mapping[str, str], cluster_name: str
) -> bool:
    """Whether a peer naming these entities selects an identity with these labels."""
    return any(_entity_selects(e, labels, cluster_name) for e in entities)
