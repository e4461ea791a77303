"""CiliumNetworkPolicy and CiliumClusterwideNetworkPolicy into PolicyRules, as Cilium reads them.

What the API server (the CRD schema, strict fields) and the agent's parser refuse is
an InputError naming the object; what they accept becomes PolicyRules with the
parser's rewrites done (topogen.cilium.selectors): the policy's namespace on a CNP's
endpointSelector, namespace and cluster on peer selectors, toServices turned into the
selectors of the Services they name. Rules topogen cannot decide beyond L3/L4 (L7,
authentication, FQDN, toServices without a pod selector) carry a note.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from topogen.cilium.entities import ENTITIES
from topogen.cilium.selectors import (
    SourcedSelector,
    node_peer,
    peer_selector,
    subject_selector,
)
from topogen.errors import InputError
from topogen.manifest import KubeObject, as_list, as_map, check_fields
from topogen.model import (
    CiliumSettings,
    Isolation,
    LabelSelector,
    Peer,
    PolicyRef,
    PolicyRule,
    Service,
)
from topogen.sources.cilium_ports import cilium_ports
from topogen.sources.label_selectors import read_label_selector

__all__ = ["read_cilium", "sourced_selector"]

CNP, CCNP = "CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy"
_TOP_KEYS = {"apiVersion", "kind", "metadata", "spec", "specs", "status"}
_RULE_KEYS = {
    "endpointSelector", "nodeSelector", "ingress", "ingressDeny", "egress", "egressDeny",
    "labels", "enableDefaultDeny", "description", "log",
}  # fmt: skip
_COMMON = {"ingress": ["Endpoints", "CIDR", "CIDRSet", "Entities", "Groups", "Nodes"],
           "egress": ["Endpoints", "CIDR", "CIDRSet", "Entities", "Services", "Groups", "Nodes"]}  # fmt: skip


def sourced_selector(raw: Any, what: str, obj: KubeObject) -> SourcedSelector:
    """A label selector, keys as written (label_selectors.py checks it)."""
    sel = read_label_selector(raw, what, obj)
    return SourcedSelector(sel.match_labels, sel.match_expressions)


def read_cilium(
    obj: KubeObject,
    ref: PolicyRef,
    settings: CiliumSettings,
    services: Sequence[Service],
    rules: list[PolicyRule],
    isolations: list[Isolation],
) -> None:
    body = obj.body
    if "description" in body:
        raise InputError(
            f"{obj.where()} has a top-level description",
            path=obj.path,
            hint="Cilium refuses it there: move it into spec.description",
        )
    check_fields(body, _TOP_KEYS, "the object", obj)
    specs: list[tuple[str, Any]] = []
    if body.get("spec") is not None:
        specs.append(("spec", body["spec"]))
    specs.extend((f"specs[{i}]", s) for i, s in enumerate(as_list(body.get("specs"), "specs", obj)))
    if not specs:
        raise InputError(f"{obj.where()} has neither spec nor specs", path=obj.path)
    reader = _RuleReader(obj, ref, settings, services)
    for index, (what, raw) in enumerate(specs):
        reader.rule(index, what, as_map(raw, what, obj), rules, isolations)


class _RuleReader:
    def __init__(
        self, obj: KubeObject, ref: PolicyRef, settings: CiliumSettings, services: Sequence[Service]
    ) -> None:
        self.obj, self.ref, self.settings, self.services = obj, ref, settings, services
        self.namespace = ref.namespace if ref.kind == CNP else None

    def fail(self, msg: str, hint: str = "") -> InputError:
        return InputError(f"{self.obj.where()}: {msg}", path=self.obj.path, hint=hint)

    def rule(
        self,
        index: int,
        what: str,
        spec: Mapping[str, Any],
        rules: list[PolicyRule],
        isolations: list[Isolation],
    ) -> None:
        obj = self.obj
        check_fields(spec, _RULE_KEYS, what, obj)
        if not any(spec.get(s) for s in ("ingress", "ingressDeny", "egress", "egressDeny")):
            raise self.fail(f"{what} has no ingress, ingressDeny, egress or egressDeny")
        if ("nodeSelector" in spec) == ("endpointSelector" in spec):
            raise self.fail(f"{what} needs exactly one of endpointSelector and nodeSelector")
        host = "nodeSelector" in spec
        if host and self.ref.kind == CNP:
            raise self.fail(f"{what}.nodeSelector is only valid in a {CCNP}")
        raw_subject = sourced_selector(
            spec["nodeSelector" if host else "endpointSelector"],
            f"{what}.{'nodeSelector' if host else 'endpointSelector'}",
            obj,
        )
        subject = (
            raw_subject.normalised() if host else subject_selector(raw_subject, self.namespace)
        )
        matches_init = any(k == ("reserved", "init") for k in raw_subject.sourced_keys())
        default_deny = as_map(spec.get("enableDefaultDeny"), f"{what}.enableDefaultDeny", obj)
        check_fields(default_deny, {"ingress", "egress"}, f"{what}.enableDefaultDeny", obj)
        for direction in ("ingress", "egress"):
            allow = as_list(spec.get(direction), f"{what}.{direction}", obj)
            deny = as_list(spec.get(f"{direction}Deny"), f"{what}.{direction}Deny", obj)
            if (allow or deny) and default_deny.get(direction) is not False:
                isolations.append(
                    Isolation(self.ref, index, direction, host, subject, self.namespace)
                )
            for section, items in ((direction, allow), (f"{direction}Deny", deny)):
                for i, item in enumerate(items):
                    iw = f"{what}.{section}[{i}]"
                    rules.append(
                        self.item(
                            index,
                            section,
                            i,
                            iw,
                            as_map(item, iw, obj),
                            host,
                            subject,
                            matches_init,
                        )
                    )

    def item(
        self,
        index: int,
        section: str,
        i: int,
        what: str,
        im: Mapping[str, Any],
        host: bool,
        subject: LabelSelector,
        matches_init: bool,
    ) -> PolicyRule:
        deny = section.endswith("Deny")
        direction = "egress" if section.startswith("egress") else "ingress"
        side = "from" if direction == "ingress" else "to"
        members = [side + m for m in _COMMON[direction]] + [f"{side}Requires"]
        extra = {"toPorts", "icmps"} | (set() if deny else {"authentication"})
        if direction == "egress" and not deny:
            members.append("toFQDNs")
        check_fields(im, set(members) | extra, what, self.obj)
        if as_list(im.get(f"{side}Requires"), f"{what}.{side}Requires", self.obj):
            raise self.fail(
                f"{what}.{side}Requires is no longer supported",
                hint="use a selector with matchExpressions instead",
            )
        present = [m for m in members if as_list(im.get(m), f"{what}.{m}", self.obj)]
        if len(present) > 1:
            raise self.fail(
                f"{what} combines {present[0]} and {present[1]}",
                hint="Cilium needs a separate rule item for each",
            )
        ports = cilium_ports(im, what, self.obj, deny=deny)
        if direction == "ingress" and "dns" in ports.l7:
            raise self.fail(f"{what}: DNS rules are not allowed on ingress")
        if host and ((direction == "ingress" and ports.l7) or "http" in ports.l7):
            raise self.fail(f"{what}: these L7 rules are not supported in host policies")
        has_l4 = bool(im.get("toPorts")) or bool(im.get("icmps"))
        peers, notes = self.peers(im, side, what, matches_init, has_l4)
        if ports.l7:
            notes.append(f"allowed at L3/L4; L7 rules ({', '.join(ports.l7)}) of {self.ref} apply")
        auth = as_map(im.get("authentication"), f"{what}.authentication", self.obj)
        check_fields(auth, {"mode"}, f"{what}.authentication", self.obj)
        if auth.get("mode") not in (None, "disabled"):
            notes.append(
                f"allowed at L3/L4; {self.ref} requires mutual authentication "
                f"({auth['mode']}), which topogen does not check"
            )
        return PolicyRule(
            policy=self.ref,
            index=index,
            section=section,
            item=i,
            subject_host=host,
            subject=subject,
            subject_namespace=self.namespace,
            peers=tuple(peers),
            ports=ports.ranges,
            notes=tuple(notes),
        )

    def peers(
        self, im: Mapping[str, Any], side: str, what: str, matches_init: bool, has_l4: bool
    ) -> tuple[list[Peer], list[str]]:
        obj, cluster = self.obj, self.settings.cluster_name
        peers: list[Peer] = []
        notes: list[str] = []
        for i, raw in enumerate(
            as_list(im.get(f"{side}Endpoints"), f"{what}.{side}Endpoints", obj)
        ):
            src = sourced_selector(raw, f"{what}.{side}Endpoints[{i}]", obj)
            sel = peer_selector(src, self.namespace, cluster, matches_init=matches_init)
            peers.append(Peer("endpoints", selector=sel, text=f"{side}Endpoints {sel}"))
        nodes = as_list(im.get(f"{side}Nodes"), f"{what}.{side}Nodes", obj)
        if nodes and not self.settings.node_selector_labels:
            raise self.fail(
                f"{what}.{side}Nodes needs the agent's enable-node-selector-labels",
                hint="set clusters[].cilium.nodeSelectorLabels: true if the agent has it",
            )
        for i, raw in enumerate(nodes):
            sel = node_peer(sourced_selector(raw, f"{what}.{side}Nodes[{i}]", obj), cluster)
            peers.append(Peer("nodes", selector=sel, text=f"{side}Nodes {sel}"))
        entities = as_list(im.get(f"{side}Entities"), f"{what}.{side}Entities", obj)
        for e in entities:
            if e not in ENTITIES:
                raise self.fail(
                    f"{what}.{side}Entities has unknown entity {e!r}",
                    hint=f"known: {', '.join(ENTITIES)}",
                )
        if entities:
            ents = tuple(sorted(set(entities)))
            peers.append(
                Peer("entities", entities=ents, text=f"{side}Entities [{', '.join(ents)}]")
            )
        for key in (f"{side}CIDR", f"{side}CIDRSet", f"{side}Groups"):
            if im.get(key):
                peers.append(Peer("cidr", text=f"{key} (never matches pod-to-pod traffic)"))
        if im.get("toFQDNs"):
            peers.append(Peer("cidr", text="toFQDNs (names outside the cluster)"))
            notes.append(f"{self.ref} allows egress to FQDNs, which topogen does not resolve")
        services = as_list(im.get("toServices"), f"{what}.toServices", obj)
        if services:
            svc_peers, svc_notes = self.services_peers(services, f"{what}.toServices")
            peers += svc_peers
            notes += svc_notes
        if any(
            isinstance(im.get(f"{side}{m}"), list) and not im.get(f"{side}{m}")
            for m in ("Endpoints", "Nodes", "Entities", "CIDR", "CIDRSet")
        ):
            return [], notes  # an explicitly empty peer list selects nobody
        if not peers and has_l4:
            # no peer at all (or toServices naming no Service): the ports apply to every peer
            peers.append(Peer("entities", entities=("all",), text="any peer (L4-only rule)"))
        return peers, notes

    def services_peers(self, raw: list[Any], what: str) -> tuple[list[Peer], list[str]]:
        """toServices as the agent translates them: a Service with a selector becomes that
        selector in the Service's namespace; one without becomes its backends' IPs."""
        peers: list[Peer] = []
        notes: list[str] = []
        for i, entry in enumerate(raw):
            ew = f"{what}[{i}]"
            em = as_map(entry, ew, self.obj)
            check_fields(em, {"k8sService", "k8sServiceSelector"}, ew, self.obj)
            for svc in self._matching_services(em, ew):
                name = f"{svc.namespace}/{svc.name}"
                if not svc.selector:
                    peers.append(
                        Peer("cidr", text=f"toServices {name} (no selector: its backends' IPs)")
                    )
                    notes.append(
                        f"{self.ref} allows egress to Service {name}, which has no "
                        "selector: its backends' IPs, which topogen does not resolve"
                    )
                    continue
                src = SourcedSelector(
                    tuple(
                        sorted(
                            (f"k8s:{k}", v)
                            for k, v in {
                                **svc.selector,
                                "io.kubernetes.pod.namespace": svc.namespace,
                            }.items()
                        )
                    )
                )
                sel = peer_selector(src, self.namespace, self.settings.cluster_name)
                peers.append(Peer("endpoints", selector=sel, text=f"toServices {name} {sel}"))
        return peers, notes

    def _matching_services(self, em: Mapping[str, Any], what: str) -> list[Service]:
        obj = self.obj
        if "k8sServiceSelector" in em:
            ss = as_map(em["k8sServiceSelector"], f"{what}.k8sServiceSelector", obj)
            check_fields(ss, {"selector", "namespace"}, f"{what}.k8sServiceSelector", obj)
            sel = sourced_selector(ss.get("selector"), f"{what}.k8sServiceSelector.selector", obj)
            ns = ss.get("namespace") or ""
            flat = sel.normalised()
            return [s for s in self.services if ns in ("", s.namespace) and flat.matches(s.labels)]
        ref = as_map(em.get("k8sService"), f"{what}.k8sService", obj)
        check_fields(ref, {"serviceName", "namespace"}, f"{what}.k8sService", obj)
        name, ns = ref.get("serviceName"), ref.get("namespace") or ""
        return [s for s in self.services if s.name == name and ns in ("", s.namespace)]
