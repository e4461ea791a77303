"""CiliumNetworkPolicy, CiliumClusterwideNetworkPolicy and NetworkPolicy into PolicyRules.

Normalisation done here, once, so the analysis sees one shape: every selector is
over identity labels, as Cilium's parser leaves it (the Cilium kinds: sources/
cilium_rules.py; a NetworkPolicy: as the agent translates it, pkg/k8s/network_policy.go);
each direction of each rule item becomes one PolicyRule; what puts an endpoint in
default deny becomes an Isolation record. Namespaced policies without a namespace
apply in the one sources.scope.namespace_of gives them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from topogen.cilium.identity import (
    CILIUM_NS_LABEL_PREFIX,
    CLUSTER_KEY,
    NAMESPACE_KEY,
)
from topogen.errors import InputError
from topogen.manifest import KubeObject, as_list, as_map, check_name, string_map
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
from topogen.sources.cilium_rules import read_cilium
from topogen.sources.label_selectors import read_label_selector
from topogen.sources.scope import namespace_of

__all__ = ["POLICY_KINDS", "read_policies", "read_services"]

CNP, CCNP, NP = "CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy", "NetworkPolicy"
POLICY_KINDS = {("cilium.io", CNP), ("cilium.io", CCNP), ("networking.k8s.io", NP)}
_PROTOCOLS = ("TCP", "UDP", "SCTP")
_PORT_NAME = re.compile(r"^(?=.*[a-zA-Z])[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?$")


def read_services(objects: Iterable[KubeObject]) -> list[Service]:
    """The v1 Services among `objects` (what toServices rules resolve against)."""
    out = []
    for obj in objects:
        if obj.kind != "Service" or obj.api_version != "v1":
            continue
        meta = as_map(obj.body.get("metadata"), "metadata", obj)
        spec = as_map(obj.body.get("spec"), "spec", obj)
        out.append(
            Service(
                namespace_of(obj),
                obj.name,
                string_map(meta.get("labels"), "metadata.labels", obj),
                string_map(spec.get("selector"), "spec.selector", obj),
            )
        )
    return out


def read_policies(
    objects: Iterable[KubeObject],
    cilium: CiliumSettings | None = None,
    services: Iterable[Service] = (),
) -> PolicySet:
    """The policies among `objects`; toServices resolve against `services` and the
    Services among `objects`."""
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
            _read_netpol(obj, ref, settings, rules, isolations)
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
    if raw is None or raw == "" or raw == 0 or raw == "0":
        return PortRange(protocol, 1, 65535)
    first = _port_number(raw)
    if first is None:
        if isinstance(raw, str) and _PORT_NAME.match(raw) and len(raw) <= 15 and end is None:
            return PortRange(protocol, 0, 0, name=raw)
        raise InputError(
            f"{obj.where()}: {what}.port is not a port number or name: {raw!r}",
            path=obj.path,
            hint="1-65535, or a named container port",
        )
    last = first if end is None else _port_number(end)
    if last is None or not 1 <= first <= last <= 65535:
        shown = f"{first}-{end}" if end is not None else str(first)
        raise InputError(
            f"{obj.where()}: {what} is not a valid port range {shown}",
            path=obj.path,
            hint="ports are 1-65535 and endPort >= port",
        )
    return PortRange(protocol, first, last)


def _port_number(raw: Any) -> int | None:
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.isdigit():
        return int(raw)
    return None


def _protocols(raw: Any, default: str, what: str, obj: KubeObject) -> tuple[str, ...]:
    proto = str(raw or default).upper()
    if proto == "ANY":
        return _PROTOCOLS
    if proto not in _PROTOCOLS:
        if proto == "ICMP":
            return ()
        raise InputError(f"{obj.where()}: {what} has unknown protocol {raw!r}", path=obj.path)
    return (proto,)


def _netpol_ports(
    item: Mapping[str, Any], what: str, obj: KubeObject
) -> tuple[PortRange, ...] | None:
    ports = as_list(item.get("ports"), f"{what}.ports", obj)
    if not ports:
        return None
    out: list[PortRange] = []
    for j, p in enumerate(ports):
        pm = as_map(p, f"{what}.ports[{j}]", obj)
        for proto in _protocols(pm.get("protocol"), "TCP", f"{what}.ports[{j}]", obj):
            out.append(
                _port_range(pm.get("port"), proto, pm.get("endPort"), f"{what}.ports[{j}]", obj)
            )
    return tuple(sorted(set(out)))


# --- Kubernetes NetworkPolicy ---------------------------------------------------------


def _read_netpol(
    obj: KubeObject,
    ref: PolicyRef,
    settings: CiliumSettings,
    rules: list[PolicyRule],
    isolations: list[Isolation],
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


def _netpol_peers(
    items: list[Any], what: str, obj: KubeObject, namespace: str, cluster: str
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
