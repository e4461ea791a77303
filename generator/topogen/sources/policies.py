"""CiliumNetworkPolicy, CiliumClusterwideNetworkPolicy and NetworkPolicy into PolicyRules.

Normalisation done here, once, so the analysis sees one shape: every selector is
over identity labels, as Cilium's parser leaves it (the Cilium kinds: sources/
cilium_rules.py; a NetworkPolicy: as the agent translates it, pkg/k8s/network_policy.go);
each direction of each rule item becomes one PolicyRule; what puts an endpoint in
default deny becomes an Isolation record. Namespaced policies without a namespace
apply in the one sources.scope.namespace_of gives them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from topogen.cilium.identity import (
    CILIUM_NS_LABEL_PREFIX,
    CLUSTER_KEY,
    NAMESPACE_KEY,
)
from topogen.errors import InputError
from topogen.manifest import (
    KubeObject,
    as_list,
    as_map,
    check_fields,
    check_name,
    labels_of,
    string_map,
)
from topogen.model import (
    CiliumSettings,
    Isolation,
    LabelSelector,
    Peer,
    PolicyRef,
    PolicyRule,
    PolicySet,
    PortRange,
    Requirement,
    Service,
)
from topogen.names import check_labels
from topogen.sources.api_rules import cidr_problem, parse_network, port_name_problem
from topogen.sources.cilium_rules import read_cilium
from topogen.sources.label_selectors import read_label_selector
from topogen.sources.scope import namespace_of

__all__ = ["POLICY_KINDS", "read_policies", "read_services"]

CNP, CCNP, NP = "CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy", "NetworkPolicy"
POLICY_KINDS = {("cilium.io", CNP), ("cilium.io", CCNP), ("networking.k8s.io", NP)}
_PROTOCOLS = ("TCP", "UDP", "SCTP")


def read_services(objects: Iterable[KubeObject]) -> list[Service]:
    """The v1 Services among `objects` (what toServices rules resolve against)."""
    out = []
    for obj in objects:
        if obj.kind != "Service" or obj.api_version != "v1":
            continue
        spec = as_map(obj.body.get("spec"), "spec", obj)
        selector = string_map(spec.get("selector"), "spec.selector", obj)
        check_labels(selector, f"{obj.where()}: spec.selector", obj.path)
        out.append(Service(namespace_of(obj), obj.name, labels_of(obj), selector))
    return out


def read_policies(
    objects: Iterable[KubeObject],
    cilium: CiliumSettings | None = None,
    services: Iterable[Service] = (),
    *,
    strict_cidrs: bool = True,
) -> PolicySet:
    """The policies among `objects`; toServices resolve against `services` and the
    Services among `objects`. `strict_cidrs`: a NetworkPolicy's ipBlock as Kubernetes 1.36
    and later validate it (api_rules.cidr_problem)."""
    settings = cilium or CiliumSettings()
    objs = list(objects)
    known = [*services, *read_services(objs)]
    rules: list[PolicyRule] = []
    isolations: list[Isolation] = []
    refs: list[PolicyRef] = []
    for obj in objs:
        if (obj.group, obj.kind) not in POLICY_KINDS:
            continue
        check_name(obj)
        ref = PolicyRef(obj.kind, "" if obj.kind == CCNP else namespace_of(obj), obj.name, obj.path)
        refs.append(ref)
        if obj.kind == NP:
            _read_netpol(obj, ref, settings, rules, isolations, strict_cidrs)
        else:
            read_cilium(obj, ref, settings, known, rules, isolations)
    order = sorted(range(len(refs)), key=lambda i: refs[i])
    return PolicySet(tuple(rules), tuple(isolations), tuple(refs[i] for i in order), settings)


# --- selectors ---------------------------------------------------------------


def _in_namespace(sel: LabelSelector, namespace: str) -> LabelSelector:
    """A NetworkPolicy pod selector applies in the policy's namespace (Cilium sets the
    namespace label, replacing one the selector names)."""
    labels = [(k, v) for k, v in sel.match_labels if k != NAMESPACE_KEY]
    return LabelSelector(
        tuple(sorted((*labels, (NAMESPACE_KEY, namespace)))), sel.match_expressions
    )


# --- ports ------------------------------------------------------------------------


def _port_range(raw: Any, protocol: str, end: Any, what: str, obj: KubeObject) -> PortRange:
    """A NetworkPolicyPort as ValidateNetworkPolicyPort takes it: a number 1-65535 (endPort
    at least it, also 1-65535) or a port name (IsValidPortName; no endPort); none: every
    port of the protocol (no endPort either)."""
    problem = None
    if end is not None and (isinstance(end, bool) or not isinstance(end, int)):
        problem = f"endPort must be an integer, got {end!r}"
    elif raw is None:
        if end is None:
            return PortRange(protocol, 1, 65535)
        problem = "endPort may not be specified when `port` is not specified"
    elif isinstance(raw, str):
        problem = port_name_problem(raw)
        if problem is None and end is not None:
            problem = "endPort may not be specified when `port` is non-numeric"
        if problem is None:
            return PortRange(protocol, 0, 0, name=raw)
        problem = f"port {raw!r} is no port name: {problem}"
    elif isinstance(raw, bool) or not isinstance(raw, int):
        problem = f"port must be a number or a name, got {raw!r}"
    elif not 1 <= raw <= 65535:
        problem = f"port {raw}: must be between 1 and 65535, inclusive"
    elif end is not None and not raw <= end <= 65535:
        problem = f"endPort {end}: must be between `port` ({raw}) and 65535"
    if problem:
        raise InputError(f"{obj.where()}: {what}: {problem}", path=obj.path)
    return PortRange(protocol, raw, raw if end is None else end)


def _netpol_ports(
    item: Mapping[str, Any], what: str, obj: KubeObject
) -> tuple[PortRange, ...] | None:
    ports = as_list(item.get("ports"), f"{what}.ports", obj)
    if not ports:
        return None
    out: list[PortRange] = []
    for j, p in enumerate(ports):
        pw = f"{what}.ports[{j}]"
        pm = as_map(p, pw, obj)
        check_fields(pm, {"port", "endPort", "protocol"}, pw, obj)
        protocol = pm.get("protocol") or "TCP"
        if protocol not in _PROTOCOLS:
            raise InputError(
                f"{obj.where()}: {pw}.protocol: {protocol!r} is not one of {', '.join(_PROTOCOLS)}",
                path=obj.path,
            )
        out.append(_port_range(pm.get("port"), protocol, pm.get("endPort"), pw, obj))
    return tuple(sorted(set(out)))


# --- Kubernetes NetworkPolicy ---------------------------------------------------------


def _read_netpol(
    obj: KubeObject,
    ref: PolicyRef,
    settings: CiliumSettings,
    rules: list[PolicyRule],
    isolations: list[Isolation],
    strict_cidrs: bool,
) -> None:
    """As the agent translates a NetworkPolicy (ParseNetworkPolicy): an entry per rule
    of each direction, whatever policyTypes says; a direction without rules is default
    deny when policyTypes names it (ingress also when policyTypes omits Egress)."""
    spec = as_map(obj.body.get("spec"), "spec", obj)
    namespace = ref.namespace
    subject = read_label_selector(spec.get("podSelector"), "spec.podSelector", obj)
    subject = _in_namespace(subject, namespace)
    types = as_list(spec.get("policyTypes"), "spec.policyTypes", obj)
    for t in types:
        if t not in ("Ingress", "Egress"):
            raise InputError(
                f"{obj.where()}: spec.policyTypes has {t!r} (expected Ingress or Egress)",
                path=obj.path,
            )
    for direction in ("ingress", "egress"):
        side = "from" if direction == "ingress" else "to"
        items = as_list(spec.get(direction), f"spec.{direction}", obj)
        named = direction.capitalize() in types
        if items or named or (direction == "ingress" and "Egress" not in types):
            isolations.append(Isolation(ref, 0, direction, False, subject, namespace))
        for i, item in enumerate(items):
            iw = f"spec.{direction}[{i}]"
            im = as_map(item, iw, obj)
            peers = _netpol_peers(
                as_list(im.get(side), f"{iw}.{side}", obj),
                f"{iw}.{side}",
                obj,
                namespace,
                settings.cluster_name,
                strict_cidrs,
            )
            rules.append(
                PolicyRule(
                    policy=ref,
                    index=0,
                    section=direction,
                    item=i,
                    subject_host=False,
                    subject=subject,
                    subject_namespace=namespace,
                    peers=peers,
                    ports=_netpol_ports(im, iw, obj),
                )
            )


def _ip_block(peer: Mapping[str, Any], what: str, obj: KubeObject, strict: bool) -> None:
    """ValidateNetworkPolicyPeer and ValidateIPBlock: an ipBlock alone in its peer, a CIDR,
    each `except` a CIDR strictly inside it."""
    if len(peer) > 1:
        raise InputError(
            f"{obj.where()}: {what}: may not specify both ipBlock and another peer",
            path=obj.path,
        )
    block = as_map(peer["ipBlock"], f"{what}.ipBlock", obj)
    check_fields(block, {"cidr", "except"}, f"{what}.ipBlock", obj)
    cidr = block.get("cidr")
    if not isinstance(cidr, str) or not cidr:
        raise InputError(f"{obj.where()}: {what}.ipBlock.cidr: Required value", path=obj.path)
    problem = cidr_problem(cidr, strict=strict)
    if problem:
        raise InputError(f"{obj.where()}: {what}.ipBlock.cidr {cidr!r}: {problem}", path=obj.path)
    outer = parse_network(cidr)
    for i, ex in enumerate(as_list(block.get("except"), f"{what}.ipBlock.except", obj)):
        at = f"{what}.ipBlock.except[{i}]"
        problem = cidr_problem(ex, strict=strict) if isinstance(ex, str) else "must be a string"
        inner = parse_network(ex) if problem is None else None
        if problem is None and not (
            outer is not None
            and inner is not None
            and inner[0].version == outer[0].version
            and inner[0].network_address in outer[0]
            and outer[0].prefixlen < inner[0].prefixlen
        ):
            problem = "must be a strict subset of `cidr`"
        if problem:
            raise InputError(f"{obj.where()}: {at} {ex!r}: {problem}", path=obj.path)


def _netpol_peers(
    items: list[Any],
    what: str,
    obj: KubeObject,
    namespace: str,
    cluster: str,
    strict_cidrs: bool = True,
) -> tuple[Peer, ...]:
    """Peers as the agent translates them: a pod selector gets the local cluster; with
    a namespaceSelector, its keys read the pod's namespace labels (empty: any
    namespace), without one the policy's namespace."""
    if not items:
        return (Peer("entities", entities=("all",), text="any peer (no from/to)"),)
    peers = []
    for i, raw in enumerate(items):
        pw = f"{what}[{i}]"
        p = as_map(raw, pw, obj)
        if "ipBlock" in p:
            _ip_block(p, pw, obj, strict_cidrs)
            peers.append(Peer("cidr", text="ipBlock (never matches pod-to-pod traffic)"))
            continue
        if "podSelector" not in p and "namespaceSelector" not in p:
            raise InputError(
                f"{obj.where()}: {pw} needs podSelector, namespaceSelector or ipBlock",
                path=obj.path,
            )
        pod_sel = read_label_selector(p.get("podSelector"), f"{pw}.podSelector", obj)
        labels = list(pod_sel.match_labels)
        exprs = list(pod_sel.match_expressions)
        if CLUSTER_KEY not in set(pod_sel.keys()):
            labels.append((CLUSTER_KEY, cluster))
        if "namespaceSelector" in p:
            ns_sel = read_label_selector(p["namespaceSelector"], f"{pw}.namespaceSelector", obj)
            labels += [(CILIUM_NS_LABEL_PREFIX + k, v) for k, v in ns_sel.match_labels]
            exprs += [
                Requirement(CILIUM_NS_LABEL_PREFIX + r.key, r.operator, r.values)
                for r in ns_sel.match_expressions
            ]
            if ns_sel.is_empty:
                exprs.append(Requirement(NAMESPACE_KEY, "Exists"))
            text = (
                f"namespaceSelector {ns_sel} AND podSelector {pod_sel}"
                if "podSelector" in p
                else f"namespaceSelector {ns_sel}"
            )
        else:
            labels = [(k, v) for k, v in labels if k != NAMESPACE_KEY]
            labels.append((NAMESPACE_KEY, namespace))
            text = f"podSelector {pod_sel} in {namespace}"
        sel = LabelSelector(tuple(sorted(set(labels))), tuple(sorted(set(exprs))))
        peers.append(Peer("endpoints", selector=sel, text=text))
    return tuple(peers)
