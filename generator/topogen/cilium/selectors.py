"""How Cilium's parser rewrites a rule's selectors before they match identities.

Keys keep their source until the rewrite is done (`k8s:app`, `any:app` and `app`
read the same on a pod, but not to the parser):

- a CNP's endpointSelector always applies in the policy's namespace: the parser
  sets `k8s:io.kubernetes.pod.namespace` to it (replacing that key if written with
  the `k8s:` source; a namespace key written without a source stays beside it, so
  naming another namespace that way selects nothing);
- a peer selector (fromEndpoints/toEndpoints) on reserved labels is left alone;
  otherwise, without a namespace key, a CNP's gets the policy's namespace unless it
  has an io.cilium.k8s.namespace.labels.* key, a CCNP's gets "some namespace"
  (Exists); and every one without a cluster key gets the local cluster;
- fromNodes/toNodes select remote nodes (reserved:remote-node) of the local cluster.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from topogen.cilium.identity import (
    CILIUM_NS_LABEL_PREFIX,
    CLUSTER_KEY,
    NAMESPACE_KEY,
    NODE_SOURCE_PREFIX,
    REMOTE_NODE_LABEL,
    normalise_key,
)
from topogen.model import LabelSelector, Requirement

__all__ = ["SourcedSelector", "node_peer", "peer_selector", "source_of", "subject_selector"]

_POD_SOURCES = ("k8s", "any")


def source_of(key: str) -> tuple[str, str]:
    """(source, key) as Cilium reads a selector key: no source is `any`, `$x` reserved."""
    if key.startswith("$"):
        return "reserved", key[1:]
    source, sep, rest = key.partition(":")
    return (source, rest) if sep else ("any", key)


@dataclass(frozen=True)
class SourcedSelector:
    """A selector with its keys as written (source prefixes kept)."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    def sourced_keys(self) -> list[tuple[str, str]]:
        keys = [k for k, _ in self.match_labels] + [r.key for r in self.match_expressions]
        return [source_of(k) for k in keys]

    def has(self, key: str) -> bool:
        """Whether a key with a pod source (k8s: or none/any:) names `key`."""
        return any(s in _POD_SOURCES and k == key for s, k in self.sourced_keys())

    def has_prefix(self, prefix: str) -> bool:
        return any(s in _POD_SOURCES and k.startswith(prefix) for s, k in self.sourced_keys())

    def reserved(self) -> bool:
        return any(s == "reserved" for s, _ in self.sourced_keys())

    def normalised(
        self,
        extra_labels: Iterable[tuple[str, str]] = (),
        extra_exprs: Iterable[Requirement] = (),
        drop: str | None = None,
    ) -> LabelSelector:
        """As a LabelSelector over identity labels (`drop`: a key as written, removed)."""
        labels = [(normalise_key(k), v) for k, v in self.match_labels if k != drop]
        exprs = [
            Requirement(normalise_key(r.key), r.operator, r.values) for r in self.match_expressions
        ]
        # a key may appear twice (k8s:ns and ns): both must hold, as in Cilium
        return LabelSelector(
            tuple(sorted({*labels, *extra_labels})), tuple(sorted({*exprs, *extra_exprs}))
        )


def subject_selector(sel: SourcedSelector, namespace: str | None) -> LabelSelector:
    """An endpointSelector as the parser leaves it (namespace: None for a CCNP)."""
    if namespace is None:
        return sel.normalised()
    return sel.normalised(extra_labels=[(NAMESPACE_KEY, namespace)], drop=f"k8s:{NAMESPACE_KEY}")


def peer_selector(
    sel: SourcedSelector, namespace: str | None, cluster: str, *, matches_init: bool = False
) -> LabelSelector:
    """A fromEndpoints/toEndpoints selector as the parser leaves it."""
    if sel.reserved():
        return sel.normalised()
    labels: list[tuple[str, str]] = []
    exprs: list[Requirement] = []
    if not sel.has(NAMESPACE_KEY):
        if namespace is None:
            if not matches_init:
                exprs.append(Requirement(NAMESPACE_KEY, "Exists"))
        elif not sel.has_prefix(CILIUM_NS_LABEL_PREFIX):
            labels.append((NAMESPACE_KEY, namespace))
    if not sel.has(CLUSTER_KEY):
        labels.append((CLUSTER_KEY, cluster))
    return sel.normalised(labels, exprs)


def node_peer(sel: SourcedSelector, cluster: str) -> LabelSelector:
    """A fromNodes/toNodes selector: remote nodes of the local cluster. A key without a
    source reads the node's own labels (source `node`); a `k8s:` key only the cluster."""

    def key(k: str) -> str:
        source, rest = source_of(k)
        if source == "any" and rest != CLUSTER_KEY:
            return NODE_SOURCE_PREFIX + rest
        return normalise_key(k)

    labels = {(key(k), v) for k, v in sel.match_labels}
    exprs = {Requirement(key(r.key), r.operator, r.values) for r in sel.match_expressions}
    if not sel.has(CLUSTER_KEY):
        labels.add((CLUSTER_KEY, cluster))
    exprs.add(Requirement(REMOTE_NODE_LABEL, "Exists"))
    return LabelSelector(tuple(sorted(labels)), tuple(sorted(exprs)))
