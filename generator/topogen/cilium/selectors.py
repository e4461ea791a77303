"""How Cilium's parser rewrites a rule's selectors before it matches anything."""

from __future__ import annotations

from topogen.cilium.identity import NAMESPACE_KEY, REMOTE_NODE_LABEL, is_reserved
from topogen.model import LabelSelector

__all__ = ["selects_host", "with_policy_namespace"]


def with_policy_namespace(sel: LabelSelector, namespace: str) -> LabelSelector:
    """A CNP peer selector without a namespace key means the policy's namespace.

    Selectors on reserved identities (reserved:host ...) are left alone, as Cilium does.
    """
    keys = sel.keys()
    if NAMESPACE_KEY in keys or any(is_reserved(k) for k in keys):
        return sel
    return LabelSelector(
        tuple(sorted((*sel.match_labels, (NAMESPACE_KEY, namespace)))), sel.match_expressions
    )


def selects_host(sel: LabelSelector) -> bool:
    """Whether an endpoint selector selects another node's host: only a selector on
    reserved identity labels alone can, the one that matches reserved:remote-node."""
    keys = sel.keys()
    return bool(keys) and all(is_reserved(k) for k in keys) and sel.matches({REMOTE_NODE_LABEL: ""})
