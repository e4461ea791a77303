"""Matrix rows shared by zones the policies cannot tell apart (analysis/zonesymmetry.py)
equal the rows computed zone by zone: on policies written to break the shortcut (two zones
in one rule, per-zone policy names, one zone with a rule more, NotIn, a pod whose identity
label is set, a `k8s:` key), and on every pair of families the generated fleets' jobs make.

The classes are asserted too, so each case shows the shortcut was taken where it may be and
left where it may not (a test of equal matrices alone would pass if it were never taken).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from core.test_fast_paths import FLEETS, _contexts
from helpers import TCP_ALL, ZONE, node, ns, policies, topology
from topogen.analysis import analyze_job
from topogen.analysis.families import Engine, Family
from topogen.analysis.reachability import PolicyIndex
from topogen.model import CiliumSettings

ZONES = ("zone-a", "zone-b", "zone-c", "zone-d")  # after the node without a zone, in order
NODES = [node(f"n-{z}", z) for z in ZONES] + [node("bare", None)]
# the agent's `labels` option keeping the zone label in identities (its default drops it)
KEEP_ZONE = CiliumSettings(identity_labels=(f"k8s:{ZONE}", "k8s:app"))


def index(text: str, keep_zone: bool = True) -> PolicyIndex:
    settings = KEEP_ZONE if keep_zone else None
    return PolicyIndex(policies(text, settings), {n: ns(n) for n in ("ml", "team")})


def _isolation(names_per_zone: bool = False, key: str = f"k8s:{ZONE}") -> str:
    """Training pods talk within their zone: one CCNP of one spec per zone (or one CCNP per
    zone when `names_per_zone`)."""

    def spec(z: str) -> str:
        return f"""
        - endpointSelector: {{matchLabels: {{"{key}": {z}, app: train}}}}
          ingress: [{{fromEndpoints: [{{matchLabels: {{"{ZONE}": {z}}}}}]}}]
          egress: [{{toEndpoints: [{{matchLabels: {{"{ZONE}": {z}}}}}]}}]"""

    if names_per_zone:
        return "\n    ---".join(
            f"""
    apiVersion: cilium.io/v2
    kind: CiliumClusterwideNetworkPolicy
    metadata: {{name: isolate-{z}}}
    specs:{spec(z)}"""
            for z in ZONES
        )
    return f"""
    apiVersion: cilium.io/v2
    kind: CiliumClusterwideNetworkPolicy
    metadata: {{name: isolate}}
    specs:{"".join(spec(z) for z in ZONES)}"""


def _cnp(name: str, spec: str) -> str:
    return f"""
    ---
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {{name: {name}, namespace: ml}}
    spec: {spec}"""


CASES = {
    # every zone named the same way: one class
    "isolation": (_isolation(), [0, 1, 1, 1, 1]),
    "isolation, k8s: keys left out": (_isolation(key=ZONE), [0, 1, 1, 1, 1]),
    # the agent's default label filter: zones are not in identities (every row the same)
    "isolation, zone label not in identities": (_isolation(), [0, 1, 1, 1, 1]),
    # a rule naming two zones: both alone
    "two zones in one rule": (
        _isolation()
        + _cnp(
            "a-to-c",
            f"""{{endpointSelector: {{matchLabels: {{"{ZONE}": zone-a}}}},
            egressDeny: [{{toEndpoints: [{{matchLabels: {{"{ZONE}": zone-c}}}}]}}]}}""",
        ),
        [0, 1, 2, 3, 2],
    ),
    # the same rules, each zone's in a policy of its own name: every zone alone
    "a policy per zone": (_isolation(names_per_zone=True), [0, 1, 2, 3, 4]),
    # zone-b's pods get one rule more
    "one zone with a rule more": (
        _isolation()
        + _cnp(
            "b-extra",
            f"""{{endpointSelector: {{matchLabels: {{"{ZONE}": zone-b}}}},
            ingress: [{{fromEndpoints: [{{matchLabels: {{app: other}}}}]}}]}}""",
        ),
        [0, 1, 2, 1, 1],
    ),
    # NotIn names one zone: that zone alone, the rest together
    "NotIn": (
        _isolation()
        + _cnp(
            "not-a",
            f"""{{endpointSelector: {{matchExpressions: [{{key: "{ZONE}", operator: NotIn,
            values: [zone-a]}}]}}, egressDeny: [{{toEndpoints: [{{matchLabels: {{app: other}}}}]}}]}}""",
        ),
        [0, 1, 2, 2, 2],
    ),
}


def _families(eng: Engine) -> list[Family]:
    """Stamped pods of two apps, pods whose identity label is set (zone-a, zone-b), one in
    another namespace."""
    return [
        eng.pod_family({"app": "train"}, "ml", (), True),
        eng.pod_family({"app": "other"}, "ml", (), True),
        eng.pod_family({"app": "train"}, "team", (), True),
        eng.pod_family({"app": "train", ZONE: "zone-b"}, "ml", (), False),
        eng.pod_family({"app": "other", ZONE: "zone-a"}, "ml", (), False),
    ]


def _engine(idx: PolicyIndex, symmetric: bool) -> Engine:
    eng = Engine(topology(*NODES), idx, idx.namespaces, ZONE, TCP_ALL, set())
    eng.symmetric = symmetric
    return eng


@pytest.mark.parametrize("case", CASES)
def test_rows_of_a_class_are_the_rows_computed_zone_by_zone(case: str) -> None:
    text, classes = CASES[case]
    idx = index(text, keep_zone=case != "isolation, zone label not in identities")
    zones = topology(*NODES).zones
    assert zones[0].startswith("<no-zone>") and zones[1:] == ZONES
    assert list(idx.zone_classes(ZONE, zones, frozenset())) == classes
    fast, slow = _engine(idx, True), _engine(idx, False)
    for (fa, fb), (sa, sb) in zip(
        itertools.product(_families(fast), repeat=2),
        itertools.product(_families(slow), repeat=2),
        strict=True,
    ):
        assert fast.matrix(fa, fb) == slow.matrix(sa, sb)


def _matrices(eng: Engine) -> list[object]:
    return [eng.matrix(fa, fb) for fa, fb in itertools.product(_families(eng), repeat=2)]


@pytest.mark.parametrize(
    "case", ["two zones in one rule", "a policy per zone", "one zone with a rule more", "NotIn"]
)
def test_each_case_tells_a_wrong_class_apart(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every zone put in one class gives other matrices: the cases can catch a wrong class."""
    idx = index(CASES[case][0])
    slow = _matrices(_engine(idx, False))
    assert any(any(m.blocked) for m in slow)  # type: ignore[attr-defined]
    wrong = _engine(idx, True)
    monkeypatch.setattr(wrong, "_zone_classes", lambda fam, others: [0, 1, 1, 1, 1])
    assert _matrices(wrong) != slow


def test_a_pod_whose_identity_label_is_set_keeps_its_zone_out_of_the_classes() -> None:
    idx = index(CASES["isolation"][0])
    zones = topology(*NODES).zones
    assert list(idx.zone_classes(ZONE, zones, frozenset({"zone-b"}))) == [0, 1, 2, 1, 1]
    assert list(idx.zone_classes(ZONE, zones, frozenset({"zone-a"}))) == [0, 1, 2, 2, 2]


def test_the_isolation_blocks_across_zones_only() -> None:
    """The shortcut's rows are the policies' answer, not just equal to the slow path's."""
    idx = index(CASES["isolation"][0])
    eng = _engine(idx, True)
    train = eng.pod_family({"app": "train"}, "ml", (), True)
    m = eng.matrix(train, train)
    every = (1 << 5) - 1
    # a pod in zone z talks to zone z only; a pod on the node without a zone has no
    # identity label: the isolation does not select it, its peers' ingress does
    assert m.blocked[0] == every & ~1
    assert [m.blocked[z] for z in range(1, 5)] == [every & ~(1 << z) for z in range(1, 5)]


@pytest.mark.parametrize("spec", FLEETS[:2], ids=lambda s: f"{s.zones}z-seed{s.seed}")
def test_every_family_pair_of_a_fleet(spec: object, tmp_path: Path) -> None:
    """The fleets' jobs make the families (pods of every profile, static identity labels,
    pinned identities); every pair's matrix is computed both ways."""
    import fleet

    fleet.write_fleet(spec, tmp_path)  # type: ignore[arg-type]
    config = tmp_path / "snapshot" / "topogen.yaml"
    shortcut = 0
    engines = {}
    for ctx, jobs in _contexts(config, naive=False):
        for job in jobs:
            analyze_job("fleet", job, ctx)
        engines[id(ctx.engine)] = ctx.engine
    for eng in engines.values():
        pods = [f for f in eng._families.values() if f.pods]
        slow = Engine(
            eng.topology, eng.index, eng.namespaces, eng.identity_label, eng.required, set()
        )
        slow.symmetric = False
        for fa, fb in itertools.product(pods, repeat=2):
            eng._matrices.pop((fa.fid, fb.fid), None)
            classes = eng._zone_classes(fa, fb)
            shortcut += sum(1 for z, r in enumerate(classes) if r != z)
            assert eng.matrix(fa, fb) == slow._pod_matrix(fa, fb), (fa.fid, fb.fid)
    assert shortcut, "no matrix row was shared: the fleets no longer exercise the shortcut"
