"""Zones the pod-to-pod policies cannot tell apart, so a matrix row is computed once per class.

A stamped pod family (families.Engine.pod_family) is one pod's labels with the identity
label set to each zone in turn. Between two such families, the path from zone a to zone b
is decided by the policies' selectors, which can only tell zones apart where they name
them. If renaming zone r to z and z to r (in the identity label's values, on both ends of
every path and in every selector) maps the policies onto themselves, with the same policy
names, ports and rules, then the path from z to y is blocked, by the same policies, exactly
when the path from r to y' is, y' being y with r and z swapped. Zones r and z are then in
one class, and the rows of z are those of r with bits r and z swapped.

When is the renaming a symmetry: each pod-facing rule and isolation (a host subject never
decides a path between pods) is written with the identity label's zone value replaced by
a placeholder (its *form*; the rule's position among its policy's specs and the peer's
text aside: neither changes whether a path is blocked, nor by which policies). Two zones
named by the same forms, as often each, swap onto each other. A rule naming two or more
zones has no form: those zones stay classes of their own, as do zones with no identity
(nodes without a zone label). Between a stamped family and a pod whose identity label is
set (the same pod in every zone), the renaming must leave that pod as it is: its value
stays a class of its own (its rows are the same in every zone anyway). Selector keys are
as the reader left them (cilium.identity.normalise_key: `k8s:` and `any:` dropped); a key
of another source matches no pod label, so it names no zone a pod could be in.

tests/core/test_zone_symmetry.py checks the shortcut against the matrices computed zone
by zone, on policies written to break it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from topogen.model import NO_ZONE_PREFIX, Isolation, LabelSelector, PolicyRule, PolicySet

__all__ = ["classes_of", "identity_values", "swapped", "zone_signatures"]

_PLACEHOLDER = "\0zone"


def zone_signatures(
    policies: PolicySet, identity_label: str, zones: Sequence[str]
) -> tuple[object, ...]:
    """Per zone index: what the policies say of it (equal for zones in one class; a zone
    in no class has one of its own)."""
    named: dict[str, Counter[object]] = {}  # zone -> the forms naming it, counted
    single_out: set[str] = set()  # zones named by a rule with other zones
    pod_facing: list[PolicyRule | Isolation] = [
        *(r for r in policies.rules if not r.subject_host),
        *(i for i in policies.isolations if not i.subject_host),
    ]
    for obj in pod_facing:
        selectors = [obj.subject]
        if isinstance(obj, PolicyRule):
            selectors += [p.selector for p in obj.peers]
        values: set[str] = set()
        for s in selectors:
            values |= _zone_values(s, identity_label)
        if not values:
            continue
        if len(values) > 1:
            single_out |= values
            continue
        (value,) = values
        named.setdefault(value, Counter())[_form(obj, identity_label, value)] += 1
    return tuple(
        ("alone", z)
        if z.startswith(NO_ZONE_PREFIX) or z in single_out
        else frozenset(named.get(z, Counter()).items())
        for z in zones
    )


def classes_of(
    signatures: Sequence[object], zones: Sequence[str], fixed: frozenset[str]
) -> tuple[int, ...]:
    """Per zone index: the first zone index of its class (itself when it has none), from
    zone_signatures. `fixed`: zones kept out of every class (the identity label's values
    of pods whose label is set, not stamped: a renaming would change them)."""
    first: dict[object, int] = {}
    return tuple(
        i if z in fixed else first.setdefault(sig, i)
        for i, (z, sig) in enumerate(zip(zones, signatures, strict=True))
    )


def swapped(mask: int, a: int, b: int) -> int:
    """`mask` with bits a and b exchanged."""
    if (mask >> a ^ mask >> b) & 1:
        return mask ^ (1 << a | 1 << b)
    return mask


def _zone_values(s: LabelSelector, identity_label: str) -> set[str]:
    out = {v for k, v in s.match_labels if k == identity_label}
    for r in s.match_expressions:
        if r.key == identity_label:
            out.update(r.values)
    return out


def _selector_form(s: LabelSelector, identity_label: str, value: str) -> object:
    def one(key: str, v: str) -> str:
        return _PLACEHOLDER if v == value and key == identity_label else v

    return (
        tuple((k, one(k, v)) for k, v in s.match_labels),
        tuple(
            (r.key, r.operator, tuple(one(r.key, v) for v in r.values)) for r in s.match_expressions
        ),
    )


def _form(obj: PolicyRule | Isolation, identity_label: str, value: str) -> object:
    subject = _selector_form(obj.subject, identity_label, value)
    if isinstance(obj, Isolation):
        return ("isolation", obj.policy, obj.direction, obj.subject_namespace, subject)
    peers = tuple(
        (p.kind, _selector_form(p.selector, identity_label, value), p.entities) for p in obj.peers
    )
    return (
        "rule",
        obj.policy,
        obj.section,
        obj.item,
        obj.subject_namespace,
        subject,
        peers,
        obj.ports,
        obj.notes,
    )


def identity_values(labels: Mapping[str, str], identity_label: str) -> frozenset[str]:
    """The identity label's value in an endpoint's labels, if set."""
    value = labels.get(identity_label)
    return frozenset() if value is None else frozenset((value,))
