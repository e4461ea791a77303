"""Breaking any one modelled Cilium rule makes the differential fail.

Each case below breaks one rule topogen models (by patching the code that models it)
and runs the seeded differential scenario by scenario until a verdict, an identity or
a rejection differs from Cilium's engine; the case fails if none does within the first
SCENARIOS scenarios. So every rule listed is one the differential actually checks.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import oracle
import pytest
from differential import Outcome, compare
from scenarios import Scenario, generate, oracle_scenario

import topogen.analysis.reachability as reach
import topogen.cilium.entities as ent
import topogen.cilium.identity as ident
import topogen.cilium.labelfilter as lf
import topogen.cilium.selectors as selectors
import topogen.sources.cilium_ports as cp
import topogen.sources.cilium_rules as cr
import topogen.sources.policies as pol
from topogen.analysis.ports import PortSet
from topogen.model import LabelSelector, PortRange

pytestmark = [pytest.mark.tools, pytest.mark.slow]

SCENARIOS = 600
M: dict[str, Callable[[], Any]] = {}


def mut(name: str) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
    def deco(f: Callable[[], Any]) -> Callable[[], Any]:
        M[name] = f
        return f

    return deco


@mut("a toPorts entry without ports adds nothing")
def _() -> Any:
    orig = cp.cilium_ports

    def f(item, what, obj, *, deny):
        tp = item.get("toPorts") or []
        if any(isinstance(e, dict) and not e.get("ports") for e in tp):
            return cp.PortsRead(None)
        return orig(item, what, obj, deny=deny)

    return mock.patch.object(cr, "cilium_ports", f)


@mut("the default label filter")
def _() -> Any:
    return mock.patch.object(lf, "_keeps", lambda flt, k, s: True)


@mut("an inclusive `labels` prefix makes an allow-list")
def _() -> Any:
    return mock.patch.object(lf, "_allow_list", lambda flt: False)


@mut("longest inclusion against shortest exclusion")
def _() -> Any:

    def f(flt, key, source):
        inc = any(
            not p.ignore and p.match_length(source, key) is not None for p in lf._prefixes(flt)
        )
        ign = any(p.ignore and p.match_length(source, key) is not None for p in lf._prefixes(flt))
        return (not lf._allow_list(flt) and not ign) or (inc and not ign)

    return mock.patch.object(lf, "_keeps", f)


@mut("a CNP peer with a namespace-labels key gets no namespace")
def _() -> Any:
    orig = selectors.peer_selector

    def f(s, ns, cluster, *, matches_init=False):
        out = orig(s, ns, cluster, matches_init=matches_init)
        if (
            ns
            and not s.reserved()
            and not s.has(ident.NAMESPACE_KEY)
            and s.has_prefix(ident.CILIUM_NS_LABEL_PREFIX)
        ):
            out = LabelSelector(
                tuple(sorted((*out.match_labels, (ident.NAMESPACE_KEY, ns)))), out.match_expressions
            )
        return out

    return mock.patch.object(cr, "peer_selector", f)


@mut("a CNP endpointSelector's k8s: namespace key is replaced by the policy's")
def _() -> Any:
    def f(s, ns):
        return (
            s.normalised() if ns is None else s.normalised(extra_labels=[(ident.NAMESPACE_KEY, ns)])
        )

    return mock.patch.object(cr, "subject_selector", f)


@mut("a namespace key without source stays beside the policy's namespace")
def _() -> Any:
    def f(s, ns):
        if ns is None:
            return s.normalised()
        base = s.normalised()
        labels = [(k, v) for k, v in base.match_labels if k != ident.NAMESPACE_KEY]
        return LabelSelector(
            tuple(sorted((*labels, (ident.NAMESPACE_KEY, ns)))), base.match_expressions
        )

    return mock.patch.object(cr, "subject_selector", f)


@mut("the service account label (default when unset)")
def _() -> Any:
    orig = ident.pod_labels

    def f(labels, namespace, ns_labels, sa=""):
        out = orig(labels, namespace, ns_labels, sa)
        out.pop(ident.SERVICE_ACCOUNT_KEY, None)
        return out

    return mock.patch.object(reach, "pod_labels", f)


@mut("the service account defaults to `default`")
def _() -> Any:
    orig = ident.pod_labels

    def f(labels, namespace, ns_labels, sa=""):
        out = orig(labels, namespace, ns_labels, sa)
        if not sa:
            out.pop(ident.SERVICE_ACCOUNT_KEY, None)
        return out

    return mock.patch.object(reach, "pod_labels", f)


@mut("pods carry the cluster label")
def _() -> Any:
    orig = ident.pod_identity

    def f(labels, settings):
        out = orig(labels, settings)
        out.pop(ident.CLUSTER_KEY, None)
        return out

    return mock.patch.object(reach, "pod_identity", f)


@mut("the cluster entity selects the cluster's pods")
def _() -> Any:
    orig = ent._entity_selects
    return mock.patch.object(
        ent,
        "_entity_selects",
        lambda e, labels, c: (
            False if e == "cluster" and ident.CLUSTER_KEY in labels else orig(e, labels, c)
        ),
    )


@mut("the cluster-mesh entity selects pods")
def _() -> Any:
    orig = ent._entity_selects
    return mock.patch.object(
        ent,
        "_entity_selects",
        lambda e, labels, c: (
            False if e == "cluster-mesh" and ident.CLUSTER_KEY in labels else orig(e, labels, c)
        ),
    )


@mut("host and remote-node entities")
def _() -> Any:
    orig = ent._entity_selects
    return mock.patch.object(
        ent,
        "_entity_selects",
        lambda e, labels, c: (
            (ident.HOST_LABEL in labels or ident.REMOTE_NODE_LABEL in labels)
            if e in ("host", "remote-node")
            else orig(e, labels, c)
        ),
    )


@mut("a NetworkPolicy's rules apply whatever policyTypes says")
def _() -> Any:
    orig = pol._read_netpol

    def f(obj, ref, settings, rules, isolations, strict_cidrs):
        spec = obj.body.get("spec") or {}
        types = spec.get("policyTypes")
        if types:
            body = dict(obj.body)
            spec = dict(spec)
            for d in ("ingress", "egress"):
                if d.capitalize() not in types:
                    spec.pop(d, None)
            body["spec"] = spec
            obj = type(obj)(obj.api_version, obj.kind, obj.namespace, obj.name, body, obj.path)
        return orig(obj, ref, settings, rules, isolations, strict_cidrs)

    return mock.patch.object(pol, "_read_netpol", f)


@mut("enableDefaultDeny: false does not isolate")
def _() -> Any:
    orig = cr._RuleReader.rule

    def f(self, index, what, spec, rules, isolations):
        spec = dict(spec)
        spec.pop("enableDefaultDeny", None)
        return orig(self, index, what, spec, rules, isolations)

    return mock.patch.object(cr._RuleReader, "rule", f)


@mut("deny rules win over allows")
def _() -> Any:
    return mock.patch.object(PortSet, "minus", lambda self, other: self)


@mut("named ports resolve against the destination's container ports")
def _() -> Any:
    orig = PortSet.from_ranges.__func__
    return mock.patch.object(
        PortSet, "from_ranges", classmethod(lambda cls, ranges, named=None: orig(cls, ranges, {}))
    )


@mut("ANY (or no protocol) covers TCP, UDP and SCTP")
def _() -> Any:
    orig = cp._one_port

    def f(raw, what, obj):
        return [
            r
            for r in orig(raw, what, obj)
            if not (r.protocol == "SCTP" and (raw.get("protocol") in (None, "ANY")))
        ]

    return mock.patch.object(cp, "_one_port", f)


@mut('port "0" is every port')
def _() -> Any:
    orig = cp._one_port

    def f(raw, what, obj):
        out = orig(raw, what, obj)
        return [] if raw.get("port") == "0" else out

    return mock.patch.object(cp, "_one_port", f)


@mut("endPort makes a range")
def _() -> Any:
    orig = cp._one_port

    def f(raw, what, obj):
        return (
            [PortRange(r.protocol, r.first, r.first, r.name) for r in orig(raw, what, obj)]
            if raw.get("endPort")
            else orig(raw, what, obj)
        )

    return mock.patch.object(cp, "_one_port", f)


@mut("toServices become the Service's selector")
def _() -> Any:
    return mock.patch.object(cr._RuleReader, "services_peers", lambda self, raw, what: ([], []))


@mut("toServices naming no Service leave an L4-only rule")
def _() -> Any:
    orig = cr._RuleReader.peers

    def f(self, im, side, what, mi, has_l4):
        peers, notes = orig(self, im, side, what, mi, has_l4)
        if im.get("toServices") and len(peers) == 1 and peers[0].text.startswith("any peer"):
            return [], notes
        return peers, notes

    return mock.patch.object(cr._RuleReader, "peers", f)


@mut("policy enforcement always")
def _() -> Any:
    return mock.patch.object(reach.PolicyIndex, "_always", lambda self, s: False)


@mut("policy enforcement never")
def _() -> Any:
    orig = reach.PolicyIndex._selection

    def f(self, subject, key, direction):
        c = self.cilium
        if c.policy_enforcement == "never":
            isol, rules = self._subject_rules(self.identity(subject), key, direction)
            return isol, rules, ()
        return orig(self, subject, key, direction)

    return mock.patch.object(reach.PolicyIndex, "_selection", f)


@mut("host policies apply only with the host firewall")
def _() -> Any:
    orig = reach.PolicyIndex._selection

    def f(self, subject, key, direction):
        if subject.host and self.cilium.policy_enforcement != "never":
            isol, rules = self._subject_rules(self.identity(subject), key, direction)
            return isol, rules, ()
        return orig(self, subject, key, direction)

    return mock.patch.object(reach.PolicyIndex, "_selection", f)


@mut("an L4-only rule applies to every peer")
def _() -> Any:
    orig = cr._RuleReader.peers

    def f(self, im, side, what, mi, has_l4):
        peers, notes = orig(self, im, side, what, mi, has_l4)
        return [p for p in peers if not p.text.startswith("any peer")], notes

    return mock.patch.object(cr._RuleReader, "peers", f)


@mut("an explicitly empty peer list selects nobody")
def _() -> Any:
    orig = cr._RuleReader.peers

    def f(self, im, side, what, mi, has_l4):
        if isinstance(im.get(f"{side}Endpoints"), list) and not im.get(f"{side}Endpoints"):
            im = dict(im)
            im.pop(f"{side}Endpoints")
        return orig(self, im, side, what, mi, has_l4)

    return mock.patch.object(cr._RuleReader, "peers", f)


@mut("fromNodes/toNodes select remote nodes only")
def _() -> Any:
    def f(s, cluster):
        labels = [] if s.has(ident.CLUSTER_KEY) else [(ident.CLUSTER_KEY, cluster)]
        return s.normalised(labels)

    return mock.patch.object(cr, "node_peer", f)


@mut("a host's identity goes through the label filter")
def _() -> Any:
    orig = ident.host_identity

    def f(labels, settings, *, local):
        return {ident.HOST_LABEL: "", **labels} if local else orig(labels, settings, local=local)

    return mock.patch.object(reach, "host_identity", f)


@mut("remote nodes carry their labels with node-selector labels")
def _() -> Any:
    return mock.patch.object(
        reach,
        "host_identity",
        lambda labels, settings, *, local: (
            {
                ident.HOST_LABEL: "",
                **{k: v for k, v in labels.items() if lf.label_filter(settings).keeps(k)},
            }
            if local
            else {ident.REMOTE_NODE_LABEL: ""}
        ),
    )


@mut("an empty namespaceSelector means every namespace")
def _() -> Any:
    orig = pol._netpol_peers

    def f(items, what, obj, ns, cluster, strict_cidrs=True):
        items = [i for i in items if not (isinstance(i, dict) and i.get("namespaceSelector") == {})]
        return orig(items, what, obj, ns, cluster, strict_cidrs) if items else ()

    return mock.patch.object(pol, "_netpol_peers", f)


@mut("a namespaceSelector reads the namespace labels of the identity")
def _() -> Any:
    orig = pol._netpol_peers

    def f(items, what, obj, ns, cluster, strict_cidrs=True):
        out = orig(items, what, obj, ns, cluster, strict_cidrs)
        return tuple(
            type(p)(
                p.kind,
                LabelSelector(
                    tuple(
                        (k.replace(ident.CILIUM_NS_LABEL_PREFIX, "ns:"), v)
                        for k, v in p.selector.match_labels
                    ),
                    p.selector.match_expressions,
                ),
                p.entities,
                p.text,
            )
            for p in out
        )

    return mock.patch.object(pol, "_netpol_peers", f)


@mut("named ports are case-insensitive")
def _() -> Any:
    orig = cp._one_port

    def f(raw, what, obj):
        out = orig(raw, what, obj)
        port = raw.get("port") or ""
        return [PortRange(r.protocol, r.first, r.last, port) if r.name else r for r in out]

    return mock.patch.object(cp, "_one_port", f)


@pytest.fixture(scope="module")
def answered() -> list[tuple[Scenario, oracle.OracleResult]]:
    batch = [generate(s) for s in range(SCENARIOS)]
    return list(zip(batch, oracle.run([oracle_scenario(s) for s in batch]), strict=True))


@contextlib.contextmanager
def _fresh_caches() -> Iterator[None]:
    lf._keeps.cache_clear()
    try:
        yield
    finally:
        lf._keeps.cache_clear()


@pytest.mark.parametrize("rule", list(M))
def test_breaking_the_rule_fails_the_differential(
    rule: str, answered: list[tuple[Scenario, oracle.OracleResult]], tmp_path: Path
) -> None:
    out = Outcome()
    with _fresh_caches(), M[rule]():
        for sc, answer in answered:
            compare(sc, tmp_path / sc.name, answer, out)
            if out.mismatches:
                break
    assert out.mismatches, f"breaking {rule!r} changed no verdict in {SCENARIOS} scenarios"
