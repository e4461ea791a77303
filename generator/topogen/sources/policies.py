"""CiliumNetworkPolicy, CiliumClusterwideNetworkPolicy and NetworkPolicy into PolicyRules.

Normalisation done here, once, so the analysis sees one shape:
- `k8s:`/`any:` key prefixes dropped (`reserved:` kept: it selects reserved identities);
- CNP peer selectors without a namespace key get the policy's namespace (both rewrites
  are Cilium's, in cilium/);
- each direction of each rule item becomes one PolicyRule; sections that put an
  endpoint in default deny become Isolation records (honouring enableDefaultDeny).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from topogen.cilium.entities import ENTITIES
from topogen.cilium.identity import normalise_key
from topogen.cilium.selectors import with_policy_namespace
from topogen.errors import InputError
from topogen.manifest import KubeObject, as_list, as_map, string_map
from topogen.model import (
    Isolation,
    LabelSelector,
    Peer,
    PolicyRef,
    PolicyRule,
    PolicySet,
    PortRange,
    Requirement,
)

__all__ = ["POLICY_KINDS", "parse_selector", "read_policies"]

CNP, CCNP, NP = "CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy", "NetworkPolicy"
POLICY_KINDS = {("cilium.io", CNP), ("cilium.io", CCNP), ("networking.k8s.io", NP)}
_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_PROTOCOLS = ("TCP", "UDP", "SCTP")
_PORT_NAME = re.compile(r"^(?=.*[a-zA-Z])[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?$")


def read_policies(objects: Iterable[KubeObject]) -> PolicySet:
    rules: list[PolicyRule] = []
    isolations: list[Isolation] = []
    refs: list[PolicyRef] = []
    for obj in objects:
        if (obj.group, obj.kind) not in POLICY_KINDS:
            continue
        ref = PolicyRef(obj.kind, obj.namespace if obj.kind != CCNP else "", obj.name, obj.path)
        if obj.kind in (CNP, NP) and not obj.namespace:
            raise InputError(
                f"{obj.where()} has no metadata.namespace",
                path=obj.path,
                hint="namespaced policies need the namespace they apply in",
            )
        refs.append(ref)
        if obj.kind == NP:
            _read_netpol(obj, ref, rules, isolations)
        else:
            _read_cilium(obj, ref, rules, isolations)
    order = sorted(range(len(refs)), key=lambda i: refs[i])
    return PolicySet(tuple(rules), tuple(isolations), tuple(refs[i] for i in order))


# --- selectors ---------------------------------------------------------------


def parse_selector(raw: Any, what: str, obj: KubeObject, *, cilium: bool) -> LabelSelector:
    data = as_map(raw, what, obj)
    labels = string_map(data.get("matchLabels"), f"{what}.matchLabels", obj)
    exprs = []
    for i, expr in enumerate(
        as_list(data.get("matchExpressions"), f"{what}.matchExpressions", obj)
    ):
        e = as_map(expr, f"{what}.matchExpressions[{i}]", obj)
        op, key = e.get("operator"), e.get("key")
        if op not in _OPERATORS or not isinstance(key, str):
            raise InputError(
                f"{obj.where()}: {what}.matchExpressions[{i}] needs a key and an "
                f"operator in {', '.join(_OPERATORS)}, got {op!r}",
                path=obj.path,
            )
        values = as_list(e.get("values"), f"{what}.matchExpressions[{i}].values", obj)
        if any(not isinstance(v, str) for v in values):
            raise InputError(
                f"{obj.where()}: {what}.matchExpressions[{i}].values must be strings",
                path=obj.path,
                hint="quote numbers and booleans",
            )
        if op in ("In", "NotIn") and not values:
            raise InputError(
                f"{obj.where()}: {what}.matchExpressions[{i}] ({op}) needs values", path=obj.path
            )
        exprs.append(
            Requirement(normalise_key(key) if cilium else key, op, tuple(sorted(set(values))))
        )
    pairs = tuple(sorted((normalise_key(k) if cilium else k, v) for k, v in labels.items()))
    return LabelSelector(pairs, tuple(sorted(exprs)))


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


def _cilium_ports(
    item: Mapping[str, Any], what: str, obj: KubeObject
) -> tuple[PortRange, ...] | None:
    to_ports = as_list(item.get("toPorts"), f"{what}.toPorts", obj)
    if not to_ports:
        # ICMP-only rules allow no TCP/UDP/SCTP traffic
        return () if item.get("icmps") else None
    out: list[PortRange] = []
    for i, tp in enumerate(to_ports):
        entry = as_map(tp, f"{what}.toPorts[{i}]", obj)
        ports = as_list(entry.get("ports"), f"{what}.toPorts[{i}].ports", obj)
        if not ports:
            return None
        for j, p in enumerate(ports):
            pw = f"{what}.toPorts[{i}].ports[{j}]"
            pm = as_map(p, pw, obj)
            for proto in _protocols(pm.get("protocol"), "ANY", pw, obj):
                out.append(_port_range(pm.get("port"), proto, pm.get("endPort"), pw, obj))
    return tuple(sorted(set(out)))


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


# --- Cilium --------------------------------------------------------------------------


def _read_cilium(
    obj: KubeObject, ref: PolicyRef, rules: list[PolicyRule], isolations: list[Isolation]
) -> None:
    body = obj.body
    specs: list[tuple[str, Any]] = []
    if body.get("spec") is not None:
        specs.append(("spec", body["spec"]))
    specs.extend((f"specs[{i}]", s) for i, s in enumerate(as_list(body.get("specs"), "specs", obj)))
    if not specs:
        raise InputError(f"{obj.where()} has neither spec nor specs", path=obj.path)
    for index, (what, raw) in enumerate(specs):
        _read_cilium_rule(obj, ref, index, what, as_map(raw, what, obj), rules, isolations)


def _read_cilium_rule(
    obj: KubeObject,
    ref: PolicyRef,
    index: int,
    what: str,
    spec: Mapping[str, Any],
    rules: list[PolicyRule],
    isolations: list[Isolation],
) -> None:
    namespaced = ref.kind == CNP
    if "nodeSelector" in spec:
        if namespaced:
            raise InputError(
                f"{obj.where()}: {what}.nodeSelector is only valid in a {CCNP}", path=obj.path
            )
        subject = parse_selector(spec["nodeSelector"], f"{what}.nodeSelector", obj, cilium=False)
        host = True
    elif "endpointSelector" in spec:
        subject = parse_selector(
            spec["endpointSelector"], f"{what}.endpointSelector", obj, cilium=True
        )
        host = False
    else:
        raise InputError(
            f"{obj.where()}: {what} needs endpointSelector or nodeSelector", path=obj.path
        )
    subject_ns = obj.namespace if namespaced else None
    default_deny = as_map(spec.get("enableDefaultDeny"), f"{what}.enableDefaultDeny", obj)
    for direction in ("ingress", "egress"):
        allow = as_list(spec.get(direction), f"{what}.{direction}", obj)
        deny = as_list(spec.get(f"{direction}Deny"), f"{what}.{direction}Deny", obj)
        if (allow or deny) and default_deny.get(direction, True) is not False:
            isolations.append(Isolation(ref, index, direction, host, subject, subject_ns))
        for section, items in ((direction, allow), (f"{direction}Deny", deny)):
            for i, item in enumerate(items):
                iw = f"{what}.{section}[{i}]"
                im = as_map(item, iw, obj)
                rules.append(
                    PolicyRule(
                        policy=ref,
                        index=index,
                        section=section,
                        item=i,
                        subject_host=host,
                        subject=subject,
                        subject_namespace=subject_ns,
                        peers=_cilium_peers(im, direction, iw, obj, ref),
                        ports=_cilium_ports(im, iw, obj),
                    )
                )


def _cilium_peers(
    item: Mapping[str, Any], direction: str, what: str, obj: KubeObject, ref: PolicyRef
) -> tuple[Peer, ...]:
    side = "from" if direction == "ingress" else "to"
    peers: list[Peer] = []
    for i, raw in enumerate(as_list(item.get(f"{side}Endpoints"), f"{what}.{side}Endpoints", obj)):
        sel = parse_selector(raw, f"{what}.{side}Endpoints[{i}]", obj, cilium=True)
        if ref.kind == CNP:
            sel = with_policy_namespace(sel, obj.namespace)
        peers.append(Peer("endpoints", selector=sel, text=f"{side}Endpoints {sel}"))
    for i, raw in enumerate(as_list(item.get(f"{side}Nodes"), f"{what}.{side}Nodes", obj)):
        sel = parse_selector(raw, f"{what}.{side}Nodes[{i}]", obj, cilium=False)
        peers.append(Peer("nodes", selector=sel, text=f"{side}Nodes {sel}"))
    entities = as_list(item.get(f"{side}Entities"), f"{what}.{side}Entities", obj)
    for e in entities:
        if e not in ENTITIES:
            raise InputError(
                f"{obj.where()}: {what}.{side}Entities has unknown entity {e!r}",
                path=obj.path,
                hint=f"known: {', '.join(ENTITIES)}",
            )
    if entities:
        ents = tuple(sorted(set(entities)))
        peers.append(Peer("entities", entities=ents, text=f"{side}Entities [{', '.join(ents)}]"))
    for key in (
        f"{side}CIDR",
        f"{side}CIDRSet",
        f"{side}FQDNs",
        f"{side}Services",
        f"{side}Groups",
    ):
        if item.get(key):
            peers.append(Peer("cidr", text=f"{key} (never matches pod-to-pod traffic)"))
    has_l4 = bool(item.get("toPorts") or item.get("icmps"))
    named = (
        f"{side}Endpoints",
        f"{side}Nodes",
        f"{side}Entities",
        f"{side}CIDR",
        f"{side}CIDRSet",
        f"{side}FQDNs",
        f"{side}Services",
        f"{side}Groups",
        f"{side}Requires",
    )
    if not any(k in item for k in named) and has_l4:
        # an L4-only rule applies to every peer
        peers.append(Peer("entities", entities=("all",), text="any peer (L4-only rule)"))
    return tuple(peers)


# --- Kubernetes NetworkPolicy ---------------------------------------------------------


def _read_netpol(
    obj: KubeObject, ref: PolicyRef, rules: list[PolicyRule], isolations: list[Isolation]
) -> None:
    spec = as_map(obj.body.get("spec"), "spec", obj)
    subject = parse_selector(spec.get("podSelector"), "spec.podSelector", obj, cilium=False)
    subject = with_policy_namespace(subject, obj.namespace)
    types = as_list(spec.get("policyTypes"), "spec.policyTypes", obj)
    if not types:
        # API defaulting: Ingress always, Egress only when there are egress rules
        types = ["Ingress"] + (
            ["Egress"] if as_list(spec.get("egress"), "spec.egress", obj) else []
        )
    for t in types:
        if t not in ("Ingress", "Egress"):
            raise InputError(
                f"{obj.where()}: spec.policyTypes has {t!r} (expected Ingress or Egress)",
                path=obj.path,
            )
    for direction in ("ingress", "egress"):
        if direction.capitalize() not in types:
            continue
        isolations.append(Isolation(ref, 0, direction, False, subject, obj.namespace))
        side = "from" if direction == "ingress" else "to"
        for i, item in enumerate(as_list(spec.get(direction), f"spec.{direction}", obj)):
            iw = f"spec.{direction}[{i}]"
            im = as_map(item, iw, obj)
            rules.append(
                PolicyRule(
                    policy=ref,
                    index=0,
                    section=direction,
                    item=i,
                    subject_host=False,
                    subject=subject,
                    subject_namespace=obj.namespace,
                    peers=_netpol_peers(
                        as_list(im.get(side), f"{iw}.{side}", obj), f"{iw}.{side}", obj
                    ),
                    ports=_netpol_ports(im, iw, obj),
                )
            )


def _netpol_peers(items: list[Any], what: str, obj: KubeObject) -> tuple[Peer, ...]:
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
        pod_sel = parse_selector(p.get("podSelector"), f"{pw}.podSelector", obj, cilium=False)
        if "namespaceSelector" in p:
            ns_sel = parse_selector(
                p["namespaceSelector"], f"{pw}.namespaceSelector", obj, cilium=False
            )
            text = (
                f"namespaceSelector {ns_sel} AND podSelector {pod_sel}"
                if "podSelector" in p
                else f"namespaceSelector {ns_sel}"
            )
            peers.append(Peer("endpoints", selector=pod_sel, namespace_selector=ns_sel, text=text))
        else:
            peers.append(
                Peer(
                    "endpoints",
                    selector=pod_sel,
                    namespace=obj.namespace,
                    text=f"podSelector {pod_sel} in {obj.namespace}",
                )
            )
    return tuple(peers)
