"""Cilium's entities (fromEntities/toEntities) and which endpoints each selects."""

from __future__ import annotations

from collections.abc import Collection

__all__ = ["ENTITIES", "entities_select"]

ENTITIES = (
    "all",
    "cluster",
    "host",
    "remote-node",
    "world",
    "world-ipv4",
    "world-ipv6",
    "kube-apiserver",
    "ingress",
    "health",
    "init",
    "unmanaged",
)


def entities_select(entities: Collection[str], *, host: bool, same_node: bool) -> bool:
    """Whether a peer naming these entities selects the other end of a path: a pod
    (host=False) or a host, the subject's own node (same_node) or another one."""
    if "all" in entities:
        return True
    if not host:
        return "cluster" in entities
    if "cluster" in entities:
        return True
    return ("host" in entities) if same_node else ("remote-node" in entities)
