"""What to say about the policies beyond verdicts: inert selectors and missing identities.

- a selector on a label the agent's identity filter drops never sees it (a policy keyed
  on topology.kubernetes.io/zone selects nothing on a default Cilium);
- a selector requiring a pod label no analysed pod carries, and that no group names as
  its identityLabel, selects nothing either;
- a policy keyed on a node topology label while no group sets identityLabel: the
  verdicts assume pods do not carry it (it is only there if stamped at binding);
- notes of the rules that select analysed pods: what Cilium enforces beyond L3/L4.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from topogen.analysis.reachability import PolicyIndex, pod_endpoint
from topogen.cilium.identity import (
    CILIUM_NS_LABEL_PREFIX,
    CILIUM_OWNED_PREFIX,
    NAMESPACE_KEY,
    NODE_SOURCE_PREFIX,
    is_reserved,
)
from topogen.cilium.labelfilter import label_filter
from topogen.model import (
    LabelSelector,
    Namespace,
    PolicyRef,
    PolicyRule,
    PolicySet,
    Workload,
)

__all__ = ["KeyUse", "policy_notes", "policy_warnings", "selector_keys"]

TOPOLOGY_PREFIX = "topology.kubernetes.io/"


@dataclass(frozen=True, order=True)
class KeyUse:
    """A policy reads a pod label key; `required`: the selector needs it present;
    `namespace`: the one namespace the selector is pinned to, if any."""

    policy: PolicyRef
    key: str
    required: bool
    namespace: str = ""


def _uses(sel: LabelSelector) -> Iterable[tuple[str, bool, str]]:
    """(key, required, the one namespace it is pinned to or "") per key the selector reads."""
    pinned = {v for k, v in sel.match_labels if k == NAMESPACE_KEY}
    ns = next(iter(pinned)) if len(pinned) == 1 else ""
    for k, _ in sel.match_labels:
        yield k, True, ns
    for r in sel.match_expressions:
        yield r.key, r.operator in ("In", "Exists"), ns


def _pod_facing(key: str) -> bool:
    """A key of the pod's own labels (not Cilium's, a reserved one or the node's)."""
    return not (
        key == NAMESPACE_KEY
        or is_reserved(key)
        or key.startswith(NODE_SOURCE_PREFIX)
        or (key.startswith(CILIUM_OWNED_PREFIX) and not key.startswith(CILIUM_NS_LABEL_PREFIX))
    )


def selector_keys(policies: PolicySet) -> list[KeyUse]:
    """Every label key the pod-facing selectors of the policies read (Cilium's own keys,
    reserved and node-source keys left out), in KeyUse order. A fleet's rules share
    selectors: each is read once per policy."""
    found: set[tuple[PolicyRef, str, bool, str]] = set()
    read: set[tuple[PolicyRef, int]] = set()  # (policy, id of a selector it holds)
    facing: dict[str, bool] = {}

    def add(ref: PolicyRef, sel: LabelSelector) -> None:
        if (ref, id(sel)) in read:
            return
        read.add((ref, id(sel)))
        for key, required, ns in _uses(sel):
            ok = facing.get(key)
            if ok is None:
                ok = facing[key] = _pod_facing(key)
            if ok:
                found.add((ref, key, required, ns))

    for rule in policies.rules:
        if not rule.subject_host:
            add(rule.policy, rule.subject)
        for peer in rule.peers:
            if peer.kind == "endpoints":
                add(rule.policy, peer.selector)
    for iso in policies.isolations:
        if not iso.subject_host:
            add(iso.policy, iso.subject)
    # KeyUse's order, PolicyRef's fields compared as plain values
    order = sorted(found, key=lambda u: (u[0].kind, u[0].namespace, u[0].name, *u[1:]))
    return [KeyUse(*u) for u in order]


def policy_warnings(
    policies: PolicySet,
    pods: Iterable[tuple[str, Iterable[str]]],
    identity_labels: set[str],
    topology_keys: set[str],
) -> list[str]:
    """Warnings naming the policy, the key and what to do.

    pods: (namespace, label keys) of the analysed pod templates (a selector pinned to a
    namespace none of them is in is not judged by them); identity_labels: the groups'
    identityLabel keys (stamped at binding); topology_keys: node topology label keys of
    the cluster (its zone and domain labels)."""
    pod_keys: set[str] = set()
    analysed: set[str] = set()
    for namespace, keys in pods:
        analysed.add(namespace)
        pod_keys.update(keys)
    flt = label_filter(policies.cilium)
    out: list[str] = []
    seen: set[tuple[PolicyRef, str]] = set()
    for use in selector_keys(policies):
        key, ref = use.key, use.policy
        if (ref, key) in seen:
            continue
        seen.add((ref, key))
        if not flt.keeps(key):
            what = "namespace label " + key.removeprefix(CILIUM_NS_LABEL_PREFIX)
            what = what if key.startswith(CILIUM_NS_LABEL_PREFIX) else key
            out.append(
                f"{ref} selects on {what}, which the Cilium agent's label filter drops from "
                "identities: that selector never sees it; if the agent's `labels` option keeps "
                "it, give topogen the cluster's cilium-config ConfigMap (beside the nodes: "
                "kubectl -n kube-system get configmap cilium-config -o yaml) or set "
                "clusters[].cilium.identityLabels; else add it to the agent's `labels` option"
            )
            continue
        if key.startswith(CILIUM_NS_LABEL_PREFIX) or not use.required:
            continue
        if use.namespace and use.namespace not in analysed:
            continue  # e.g. kube-dns in kube-system: pods topogen does not read
        topology = key in topology_keys or key.startswith(TOPOLOGY_PREFIX)
        if key in pod_keys or key in identity_labels:
            continue
        if topology and not identity_labels:
            out.append(
                f"{ref} selects on the node topology label {key} and no group sets "
                "identityLabel: the verdicts assume pods do not carry it; if it is stamped "
                f"at binding (PodTopologyLabels, a webhook), set groups[].identityLabel: {key}"
            )
        else:
            out.append(
                f"{ref} selects on {key}, which no analysed pod carries and no group names as "
                "identityLabel: that selector matches no pod; set identityLabel if the label "
                "is stamped at binding"
            )
    return out + _host_warnings(policies)


def _host_warnings(policies: PolicySet) -> list[str]:
    """A nodeSelector reads the host's identity, the node's labels through the same filter."""
    flt = label_filter(policies.cilium)
    subjects = [(r.policy, r.subject) for r in policies.rules if r.subject_host] + [
        (i.policy, i.subject) for i in policies.isolations if i.subject_host
    ]
    dropped = {
        (ref, k)
        for ref, sel in subjects
        for k in sorted(sel.keys())
        if not is_reserved(k) and not flt.keeps(k)
    }
    return [
        f"{ref} selects nodes on {key}, which the Cilium agent's label filter drops from the "
        "host's identity: that nodeSelector never sees it; keep it by adding it to the "
        "agent's `labels` option and to clusters[].cilium.identityLabels"
        for ref, key in sorted(dropped)
    ]


def policy_notes(
    index: PolicyIndex, workloads: Sequence[Workload], namespaces: dict[str, Namespace]
) -> list[str]:
    """The notes of rules (L7, authentication, FQDN, toServices without a selector) whose
    subject selects a pod of these workloads: what topogen's verdicts do not cover."""
    # the rules with notes, by the namespace whose pods they may select (None: any)
    noted: dict[str | None, list[PolicyRule]] = {}
    for r in index.policies.rules:
        if r.notes and not r.subject_host:
            noted.setdefault(r.subject_namespace, []).append(r)
    if not noted:
        return []
    anywhere = noted.get(None, [])
    out: set[str] = set()
    for w in workloads:
        if w.template.host_network:
            continue
        rules = noted.get(w.namespace, [])
        rules = [*anywhere, *rules] if anywhere else rules  # any order: the notes are sorted
        if not rules:
            continue
        t = w.template
        ep = index.identity(
            pod_endpoint(t.labels, w.namespace, namespaces, t.ports, t.service_account)
        )
        for rule in rules:
            if rule.subject.matches(ep.labels):
                out.update(f"{w.namespace}/{w.name}: {n}" for n in rule.notes)
    return sorted(out)
