"""The fast analysis equals the obvious one (tests/core/reference_impl.py).

Node classes, identity families, zone bit matrices, per-domain placement, the pack
shortcut, the rule index and endpoint projection in PolicyIndex, and the YAML event
loader are checked against the per-node, per-pair, per-domain computation they replace,
over generated fleets (bench/fleet.py) that mix every profile, hostNetwork jobs, pod
anti-affinity, Kueue, static identity labels, zone-keyed isolation, host firewalls,
deny rules and domain co-location.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml

from core import reference_impl as ref
from topogen.analysis import AnalysisContext, ClusterIndex, PolicyIndex, analyze_job, find_groups
from topogen.analysis.bits import bits, transpose
from topogen.analysis.cluster import candidate_domains
from topogen.analysis.denied_pairs import denied_zone_pairs
from topogen.analysis.domains import check_domains
from topogen.analysis.job_fit import _room, room
from topogen.analysis.members import Member, members_of, pin
from topogen.analysis.paths import BlockedPaths
from topogen.analysis.placed import Placement
from topogen.analysis.placement import place, place_in_domains
from topogen.config import load_config
from topogen.model import (
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodTemplate,
    Toleration,
)
from topogen.sources.loader import load_cluster_inputs, load_workload_inputs
from topogen.yamlfast import load_all_fast
from topogen.yamltext import load_yaml_text

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import fleet

FLEETS = [
    fleet.FleetSpec("a", 70, 3, 70, 14, seed=2),
    fleet.FleetSpec("b", 90, 5, 90, 16, seed=5),
    fleet.FleetSpec("c", 120, 6, 110, 20, seed=11),
    fleet.FleetSpec("d", 160, 8, 140, 30, seed=23),
]


@pytest.fixture(scope="module", params=FLEETS, ids=lambda s: f"{s.zones}z-seed{s.seed}")
def fleet_config(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fleet")
    fleet.write_fleet(request.param, out)
    return out / "snapshot" / "topogen.yaml"


def _contexts(config: Path, naive: bool) -> list[tuple[AnalysisContext, list[Any]]]:
    cfg = load_config(config)
    loaded = load_workload_inputs(cfg)
    out = []
    for cluster in cfg.clusters:
        inputs = load_cluster_inputs(cfg, cluster)
        namespaces = {**loaded.namespaces, **inputs.namespaces}
        index = (ref.NaiveIndex if naive else PolicyIndex)(inputs.policies, namespaces)
        shared = ClusterIndex(inputs.topology, index, namespaces)
        for group in cfg.groups_for(cluster.name):
            ctx = AnalysisContext(shared, group, domain_label=cluster.domain_label)
            out.append((ctx, find_groups(group, loaded.workloads)))
    return out


def test_jobs_analyze_as_the_reference_does(fleet_config: Path) -> None:
    fast = _contexts(fleet_config, naive=False)
    slow = _contexts(fleet_config, naive=True)
    checked = 0
    for (ctx, jobs), (rctx, rjobs) in zip(fast, slow, strict=True):
        analyses = []
        for job, rjob in zip(jobs, rjobs, strict=True):
            got = analyze_job("fleet", job, ctx)
            want = ref.analyze_job("fleet", rjob, rctx)
            assert got.members == want.members, job.key
            assert got.findings == want.findings, job.key
            assert got.domains == want.domains, job.key
            assert list(got.blocked) == list(want.blocked), job.key
            assert len(got.blocked) == len(want.blocked)
            analyses.append(got)
            checked += 1
        planned = [j for j in analyses if not j.job.kueue_managed and j.members]
        assert denied_zone_pairs(planned, ctx) == ref.denied_zone_pairs(planned, rctx)
    assert checked >= 10


def test_placement_by_node_class_is_placement_by_node(fleet_config: Path) -> None:
    ctx, _ = _contexts(fleet_config, naive=False)[0]
    topo, nodes = ctx.topology, ctx.cluster.nodes
    zone = topo.zone_label
    some = topo.nodes[len(topo.nodes) // 2]
    templates = [
        PodTemplate(labels={}),
        PodTemplate(labels={}, node_selector={"node-pool": "gpu", zone: topo.zones[0]}),
        PodTemplate(labels={}, requests={"nvidia.com/gpu": Fraction(8), "cpu": Fraction(4)}),
        PodTemplate(
            labels={},
            tolerations=(Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),),
            node_affinity=(
                NodeSelectorTerm((NodeSelectorRequirement(zone, "In", tuple(topo.zones[:2])),)),
                NodeSelectorTerm(()),  # matches nothing (and everything once pinned)
                NodeSelectorTerm((NodeSelectorRequirement("nvidia.com/gpu.count", "Gt", ("4",)),)),
            ),
        ),
        PodTemplate(
            labels={},
            node_affinity=(
                NodeSelectorTerm((NodeSelectorRequirement("metadata.name", "In", (some.name,)),)),
            ),
        ),
        PodTemplate(labels={}, node_affinity=()),
        PodTemplate(labels={}, tolerations=(Toleration("", "Exists"),)),
    ]
    extras: list[tuple[Toleration, ...]] = [(), (Toleration("", "Exists"),)]
    for t in templates:
        for extra in extras:
            for zones in (None, topo.zones[:1], topo.zones[1:3]):
                got = place(t, nodes, extra, zones)
                want = ref.place(t, topo, extra, zones)
                assert got == want
                assert list(got.excluded) == list(want.excluded)  # same first-seen order
        domains = (*((z,) for z in topo.zones), tuple(topo.zones[:2]))
        tolerations = tuple(
            (Toleration("nvidia.com/gpu", "Equal", "present", "NoSchedule"),) if i % 2 else ()
            for i in range(len(domains))
        )
        pinned = place_in_domains(t, nodes, domains, tolerations)
        member = Member("worker", None, t, place(t, nodes))  # type: ignore[arg-type]
        for d, zs in enumerate(domains):
            want = ref.pin(member, topo, zs, tolerations[d]).placement
            assert pinned.nonempty(d) == bool(want.nodes)
            assert pinned[d] == want
            assert list(pinned[d].excluded) == list(want.excluded)
            assert pin(member, nodes, zs, tolerations[d]).placement == want


def test_room_from_counts_is_room_per_node(fleet_config: Path) -> None:
    """packing.room over the NodeIndex's counts by allocatable (recorded when a placement
    is built, counted for any other, summed per domain before one is built) equals the
    room of each node summed."""
    ctx, jobs = _contexts(fleet_config, naive=False)[0]
    nodes = ctx.cluster.nodes
    members = [m for job in jobs for m in ref.members_of(job, ctx.topology)][:12]
    domains = tuple((z,) for z in ctx.topology.zones)
    none = tuple(() for _ in domains)

    def direct(p: Placement, requests: Mapping[str, Fraction]) -> tuple[int, int]:
        rooms = [_room(n.allocatable, requests) for n in p.nodes]
        return sum(rooms), max(rooms, default=0)

    for m in members:
        requests = m.template.requests
        built = place(m.template, nodes)
        assert room(built, nodes, requests) == direct(built, requests)
        foreign = Placement(tuple(built.nodes), dict(built.excluded))  # not built here
        assert room(foreign, nodes, requests) == direct(built, requests)
        assert nodes.names(foreign) == frozenset(n.name for n in built.nodes)
        pinned = place_in_domains(m.template, nodes, domains, none)
        for d in range(len(domains)):
            before = room(pinned.allocatables(d), nodes, requests)
            assert before == room(pinned[d], nodes, requests) == direct(pinned[d], requests)
            assert room(pinned.allocatables(d), nodes, requests) == before  # once built


def test_node_label_values_per_zone_are_the_direct_computation(fleet_config: Path) -> None:
    """Engine.placement_values and pinned_values (a label the whole zone shares read
    once per zone, not node by node) equal the values read off the nodes."""
    ctx, jobs = _contexts(fleet_config, naive=False)[0]
    eng, topo, nodes = ctx.engine, ctx.topology, ctx.cluster.nodes
    keys = [*sorted({k for n in topo.nodes for k in n.labels}), "no-such-label"]
    shared = [k for k in keys if any(v is not None for v in eng._zone_values(k))]
    assert topo.zone_label in shared  # the shortcut is taken
    assert any(v is None for k in keys for v in eng._zone_values(k))  # and not taken
    members = [m for job in jobs for m in ref.members_of(job, topo)]
    templates = [PodTemplate(labels={}), *(m.template for m in members[:6])]
    domains = (*((z,) for z in topo.zones), tuple(topo.zones[:3]))
    none = tuple(() for _ in domains)
    for t in templates:
        placement = place(t, nodes)
        pinned = place_in_domains(t, nodes, domains, none)
        for z, zone in enumerate(topo.zones):
            for key in keys:
                want = frozenset(
                    n.labels[key] for n in placement.nodes if n.zone == zone and key in n.labels
                )
                assert eng.placement_values(placement, z, key) == want, (zone, key)
                for d in (z, len(domains) - 1):
                    got = eng.pinned_values(pinned, d, z, key)
                    assert got == frozenset(
                        n.labels[key] for n in pinned[d].nodes if n.zone == zone and key in n.labels
                    ), (zone, key, d)


def test_cluster_index_caches_are_the_direct_computation(fleet_config: Path) -> None:
    ctx, _ = _contexts(fleet_config, naive=False)[0]
    cluster, topo = ctx.cluster, ctx.topology
    for colocate in ("zone", "domain"):
        for label in (None, "topology.kubernetes.io/region", "no-such-label"):
            want = candidate_domains(topo, colocate, label)
            assert cluster.candidates(colocate, label) == want
            doms = cluster.domains(want)
            assert doms is cluster.domains(list(want))
            bit = {z: 1 << i for i, z in enumerate(topo.zones)}
            assert doms.masks == tuple(sum(bit[z] for z in zs) for _, zs in want)
    assert cluster.one_zone is cluster.one_zone
    assert [(z,) for z in cluster.one_zone.names] == list(cluster.one_zone.zones)
    assert cluster.engine(ctx.identity_label, ctx.required) is ctx.engine
    assert cluster.engine("other-label", ctx.required) is not ctx.engine
    assert ctx.node_keys == set(ctx.index.node_label_keys())


def test_side_groups_are_the_sides_of_each_verdict(fleet_config: Path) -> None:
    ctx, jobs = next((c, j) for c, j in _contexts(fleet_config, naive=False) if c.identity_label)
    index = ctx.index
    members = [m for job in jobs for m in ref.members_of(job, ctx.topology)]
    pods = [m for m in members if not m.template.host_network][:4]
    zones = ctx.topology.zones
    for a in pods:
        for b in pods:
            fa = [
                a.endpoints(z, ctx.identity_label, index, ctx.namespaces, set())[0] for z in zones
            ]
            fb = [
                b.endpoints(z, ctx.identity_label, index, ctx.namespaces, set())[0] for z in zones
            ]
            for i, src in enumerate(fa):
                groups = index.side_groups(src, "egress", fb)
                covered = 0
                for mask, trace in groups:
                    assert not covered & mask
                    covered |= mask
                    for j in range(len(fb)):
                        if mask >> j & 1:
                            assert index.verdict(src, fb[j]).egress is trace
                assert covered == (1 << len(fb)) - 1
                for mask, trace in index.side_groups(fb[i], "ingress", fa):
                    for j in range(len(fa)):
                        if mask >> j & 1:
                            assert index.verdict(fa[j], fb[i]).ingress is trace


def test_projected_endpoints_give_the_same_verdicts(fleet_config: Path) -> None:
    ctx, jobs = _contexts(fleet_config, naive=False)[0]
    naive = ref.NaiveIndex(ctx.index.policies, ctx.namespaces)
    members = [m for job in jobs for m in ref.members_of(job, ctx.topology)]
    eps = [
        e
        for m in members
        for z in ctx.topology.zones[:2]
        for e in m.endpoints(z, ctx.identity_label, ctx.index, ctx.namespaces, ctx.node_keys)
    ]
    for src in eps[:30]:
        for dst in eps[:30]:
            got, want = ctx.index.verdict(src, dst), naive.verdict(src, dst)
            assert got.allowed == want.allowed
            assert got.blockers(ctx.required) == want.blockers(ctx.required)
            assert got.blocking_policies(ctx.required) == want.blocking_policies(ctx.required)


def test_blocked_paths_are_listed_only_when_asked() -> None:
    made = []

    def produce() -> Any:
        made.append(1)
        yield from ("a", "b")

    paths = BlockedPaths(2, produce)
    assert len(paths) == 2 and bool(paths) and not made
    assert list(paths) == ["a", "b"] and paths[1] == "b" and paths == ("a", "b")
    assert made == [1]
    assert not BlockedPaths(0, produce)


# --- YAML -------------------------------------------------------------------------------

SCALARS = """
a: yes
b: No
c: on
d: ~
e: null
f: 0x1F
g: 0o17
h: 017
i: 1_000
j: 1e3
k: 1.5e3
l: .inf
m: -.Inf
n: 2001-12-14
o: 2001-12-14t21:59:43.10-05:00
p: 190:20:30
q: ''
r: "1"
s: '2001-12-14'
t: |
  block
u: >-
  folded
  text
v: [1, "two", {w: x}]
"": empty key
1: int key
3.5: float key
false: bool key
"""


@pytest.mark.parametrize(
    "text",
    [
        SCALARS,
        "---\n---\na: 1\n--- |\n  text\n...\n---\n- x\n",
        "a: &x {b: [1, 2]}\nc: *x\nd: &y 3\ne: *y\n",
        "apiVersion: v1\nkind: List\nitems:\n- {kind: Node, metadata: {name: n}}\n",
        "",
        "# only a comment\n",
    ],
    ids=["scalars", "documents", "aliases", "flow", "empty", "comment"],
)
def test_fast_yaml_equals_the_c_loader(text: str) -> None:
    fast = load_all_fast(text)
    assert fast is not None
    want = list(yaml.load_all(text, Loader=yaml.CSafeLoader))
    assert _same(fast[0], want)
    assert load_yaml_text(text, "x.yaml") == want or _same(load_yaml_text(text, "x.yaml"), want)


@pytest.mark.parametrize(
    "text",
    [
        "a: !!str 1\n",  # explicit tag
        "base: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\n",  # merge key
        "? [a, b]\n: c\n",  # complex key
        "a: &x 1\nb: &x 2\n",  # duplicate anchor: the C loader's error
        "a: *nowhere\n",  # undefined alias: the C loader's error
        "a: [1, 2\n",  # a parse error
        "a: =\n",  # the value tag
    ],
)
def test_fast_yaml_leaves_the_rest_to_the_c_loader(text: str) -> None:
    assert load_all_fast(text) is None


def test_fast_yaml_keeps_the_alias_bomb_guard() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for i in range(1, 9):
        bomb += f"{chr(97 + i)}: &{chr(97 + i)} [{', '.join(['*' + chr(96 + i)] * 10)}]\n"
    with pytest.raises(Exception, match="alias"):
        load_yaml_text(bomb, "bomb.yaml")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def test_groups_analyzed_in_parallel_give_the_same_report(
    fleet_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """parallel.map_groups: workers' results come back as the serial run's, object for
    object (shared inputs by reference, placements, lazy blocked paths)."""
    from topogen.pipeline.analyze import analyze
    from topogen.pipeline.format import analysis_json

    cfg = load_config(fleet_config)
    monkeypatch.setenv("TOPOGEN_JOBS", "1")
    serial = analyze(cfg)
    monkeypatch.setenv("TOPOGEN_JOBS", "3")
    forked = analyze(cfg)
    assert analysis_json(forked) == analysis_json(serial)
    for a, b in zip(serial.clusters, forked.clusters, strict=True):
        assert a.plans == b.plans
        for ja, jb in zip(a.jobs, b.jobs, strict=True):
            assert ja.job == jb.job
            # a worker's members refer to the parent's workloads, not to copies
            mine = {id(w) for r in jb.job.roles for w in r.workloads}
            assert all(id(m.workload) in mine for m in jb.members)
            assert ja.members == jb.members and ja.domains == jb.domains
            assert ja.findings == jb.findings
            assert len(ja.blocked) == len(jb.blocked) and list(ja.blocked) == list(jb.blocked)


def test_render_in_parallel_gives_the_same_files(
    fleet_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Policies rendered in the analysis workers, signals and workload patches in their
    own: the same files, byte for byte, as one process renders them."""
    from topogen.pipeline.render import render

    cfg = load_config(fleet_config)
    monkeypatch.setenv("TOPOGEN_JOBS", "1")
    serial = render(cfg)
    monkeypatch.setenv("TOPOGEN_JOBS", "3")
    forked = render(cfg)
    assert [(f.path, f.text, f.objects) for f in forked.files] == [
        (f.path, f.text, f.objects) for f in serial.files
    ]
    assert forked.refused == serial.refused
    assert any(f.path.startswith("kustomize/components/workload-patches/") for f in forked.files)
    assert any(f.path.startswith("monitoring/") for f in forked.files)


def test_workers_claim_in_the_order_given() -> None:
    from topogen.pipeline.parallel import Shared, map_groups

    got = map_groups(lambda i: i * i, 7, 2, Shared(), order=[6, 5, 4, 3, 2, 1, 0])
    assert got == [i * i for i in range(7)]  # results in item order, whoever computed them


def test_workers_with_shares_compute_every_item_once(tmp_path: Path) -> None:
    """Each process starts on its own share of the order and takes from the others' ends
    once its own is done: every item computed by exactly one of them, results in order."""
    from topogen.pipeline.parallel import Shared, map_groups

    log = tmp_path / "computed"

    def square(i: int) -> int:
        with open(log, "a", encoding="utf-8") as f:  # one short append per item
            f.write(f"{i}\n")
        return i * i

    order = [9, 3, 0, 7, 1, 8, 2, 6, 4, 5, 10, 11]
    got = map_groups(square, 12, 3, Shared(), order=order, shares=True)
    assert got == [i * i for i in range(12)]
    assert sorted(int(x) for x in log.read_text(encoding="utf-8").split()) == list(range(12))


def test_lazy_blocked_paths_cross_listed_when_nothing_can_list_them_again() -> None:
    """Without a way to list a job's blocked paths in the parent, a worker sends them
    listed (never a placeholder that fails when read)."""
    from topogen.pipeline.parallel import Shared, map_groups

    def job(i: int) -> BlockedPaths:
        time.sleep(0.05)  # long enough that the worker claims some
        return BlockedPaths(2, lambda: iter((f"{i}a", f"{i}b")), members=("m",))

    got = map_groups(job, 4, 2, Shared(), order=[3, 2, 1, 0])
    assert [list(p) for p in got] == [[f"{i}a", f"{i}b"] for i in range(4)]


def test_an_item_that_raises_raises_as_in_one_process() -> None:
    """Whichever process claims a failing item first, the error raised is the serial
    run's: the first failing item in item order."""
    from topogen.pipeline.parallel import Shared, map_groups

    def fail(i: int) -> int:
        raise ValueError(f"item {i}")

    with pytest.raises(ValueError, match="item 0"):
        map_groups(fail, 4, 2, Shared(), order=[3, 2, 1, 0])


@pytest.mark.parametrize("procs", [1, 2])
def test_meanwhile_runs_once_in_the_parent_beside_the_workers(procs: int) -> None:
    """The parent's own work runs in the parent (what it changes is the caller's), once,
    whether the items are shared out or not."""
    from topogen.pipeline.parallel import Shared, map_groups

    ran: list[int] = []
    got = map_groups(
        lambda i: i * i, 6, procs, Shared(), order=[5, 4, 3, 2, 1, 0],
        meanwhile=lambda: ran.append(os.getpid()),
    )  # fmt: skip
    assert got == [i * i for i in range(6)]
    assert ran == [os.getpid()]


def test_meanwhile_error_comes_before_the_items() -> None:
    """What the parent's own work raises is raised (it comes before the items in one
    process), after the workers are in, whether or not an item fails too."""
    from topogen.pipeline.parallel import Shared, map_groups

    def meanwhile() -> None:
        raise KeyError("the parent's own work")

    def fail(i: int) -> int:
        raise ValueError(f"item {i}")

    for func in (fail, lambda i: i):
        for procs in (1, 2):
            with pytest.raises(KeyError, match="parent's own work"):
                map_groups(func, 4, procs, Shared(), order=[3, 2, 1, 0], meanwhile=meanwhile)


def test_domain_checks_shared_by_shape_are_each_jobs_own(tmp_path: Path) -> None:
    """Jobs of one shape share a multi-zone domain's blocked paths (domains._shape): each
    job gets the checks it gets alone, in a context of its own. Each job is followed by
    copies that differ from it in one part of the shape: its members held to one zone
    (fewer zones in the domain), moved to a namespace no isolation policy selects (other
    families), or of two replicas each (two coordinators talk too)."""
    fleet.write_fleet(fleet.FleetSpec("f", 150, 6, 150, 120, seed=3), tmp_path)
    cfg = load_config(tmp_path / "snapshot" / "topogen.yaml")
    (cluster,) = cfg.clusters
    loaded = load_workload_inputs(cfg)
    inputs = load_cluster_inputs(cfg, cluster)
    namespaces = {**loaded.namespaces, **inputs.namespaces}
    groups = cfg.groups_for(cluster.name)
    open_ns = next(g.namespaces[0] for g in groups if not g.identity_label)

    def index() -> ClusterIndex:
        return ClusterIndex(inputs.topology, PolicyIndex(inputs.policies, namespaces), namespaces)

    def member(m: Member, nodes: Any, **changes: Any) -> Member:
        t = dataclasses.replace(m.template, **changes.get("template", {}))
        w = dataclasses.replace(m.workload, **changes.get("workload", {}))
        return Member(m.role, w, t, place(t, nodes))

    shared = index()
    checked, differs = 0, {"held": 0, "moved": 0, "doubled": 0}
    for group in groups:
        if group.colocate != "domain":
            continue
        ctx = AnalysisContext(shared, group, domain_label=cluster.domain_label)
        candidates = ctx.cluster.candidates(ctx.colocate, ctx.domain_label)
        for job in find_groups(group, loaded.workloads):
            members = members_of(job, shared.nodes)
            zone = {"node_selector": {ctx.topology.zone_label: members[0].placement.zones[0]}}
            variants = {
                "job": members,
                "held": [member(m, shared.nodes, template=zone) for m in members],
                "moved": [
                    member(m, shared.nodes, workload={"namespace": open_ns}) for m in members
                ],
                "doubled": [member(m, shared.nodes, workload={"replicas": 2}) for m in members],
            }
            results = {}
            for name, v in variants.items():
                results[name] = got = check_domains(v, candidates, ctx)
                alone = AnalysisContext(index(), group, domain_label=cluster.domain_label)
                own = [member(m, alone.cluster.nodes) for m in v]
                assert got == check_domains(own, candidates, alone), (job.key, name)
                checked += 1
            for name in differs:
                ok = [[(d.traffic_ok, d.problems) for d in results[k]] for k in ("job", name)]
                differs[name] += ok[0] != ok[1]
        assert ctx.engine.domain_blocked, "no domain's blocked paths were shared"
    assert checked >= 30
    assert all(differs.values()), f"a copy never changed a domain's verdict: {differs}"


def test_generic_matrices_sharing_cells_across_zones_are_cell_by_cell(tmp_path: Path) -> None:
    """Matrices with a host family: families with the same identities per zone share the
    cells across zones (Engine._generic_matrix); each matrix is the one computed cell by
    cell, and some are shared (the fleet's hostNetwork members)."""
    fleet.write_fleet(fleet.FleetSpec("f", 150, 6, 150, 120, seed=3), tmp_path)
    engines = {}
    for ctx, jobs in _contexts(tmp_path / "snapshot" / "topogen.yaml", naive=False):
        for job in jobs:
            analyze_job("fleet", job, ctx)
        engines[id(ctx.engine)] = ctx.engine
    made = shared = 0
    for eng in engines.values():
        families = {f.fid: f for f in eng._families.values()}
        generic = [
            (a, b, m)
            for (a, b), m in eng._matrices.items()
            if not families[a].pods or not families[b].pods
        ]
        for a, b, m in generic:
            fa, fb = families[a], families[b]
            blocked = [0] * eng.n
            for ia in bits(fa.valid):
                for ib in bits(fb.valid):
                    if eng._generic_cell(fa, ia, fb, ib) is not None:
                        blocked[ia] |= 1 << ib
            assert m.blocked == blocked
            assert m.blocked_t == transpose(blocked, eng.n)
        made += len(generic)
        shared += len(generic) - len(eng._across)
    assert made and shared > 0, "no generic matrix shared its cells: the case is not made"


def test_host_endpoints_kept_per_node_set_are_the_direct_computation(fleet_config: Path) -> None:
    """A set of nodes' host endpoints are kept per nodes and named ports (Engine._hosts):
    each equals the endpoints an engine of its own makes, with the ports asked for."""
    (ctx, _), *_ = _contexts(fleet_config, naive=False)
    (alone, _), *_ = _contexts(fleet_config, naive=False)
    eng, fresh = ctx.engine, alone.engine
    for _ in range(2):  # computed, then kept
        for zone in ctx.topology.zones[:2]:
            nodes = [n for n in ctx.topology.nodes if n.zone == zone]
            same = [n for n in alone.topology.nodes if n.zone == zone]
            for ports in ((), (("nccl", 29500, "TCP"),), (("mpi", 2222, "TCP"),)):
                got = eng._hosts(nodes, ports)
                assert got == fresh._hosts(same, ports)
                assert all(e.ports == ports and e.node in {n.name for n in nodes} for e in got)


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    "config",
    sorted(p.parent.name for p in EXAMPLES.glob("*/topogen.yaml")),
)
def test_analyze_plans_without_denied_pairs_are_the_render_plans_less_them(config: str) -> None:
    """`topogen analyze` skips the zone pairs the validation policies carry (only a render
    reads them): every other part of every plan, and every finding, is the same."""
    from topogen.pipeline.analyze import analyze

    cfg = load_config(EXAMPLES / config / "topogen.yaml")
    full = analyze(cfg)
    lean = analyze(cfg, denied_pairs=False)
    assert all(p.denied_zone_pairs is not None for p in full.plans)
    if config == "zone-split":  # its coordinator and workers are fenced apart by zone
        assert any(p.denied_zone_pairs for p in full.plans)
    assert all(p.denied_zone_pairs is None for p in lean.plans)
    assert [dataclasses.replace(p, denied_zone_pairs=None) for p in full.plans] == list(lean.plans)
    assert full.findings == lean.findings


@pytest.mark.parametrize(
    "config",
    sorted(p.parent.name for p in EXAMPLES.glob("*/topogen.yaml")),
)
def test_a_render_without_findings_renders_the_same_files(config: str) -> None:
    """`topogen render` makes no finding (it shows none): the same files, warnings and
    plans as a render that makes them, and its report refuses to be asked for findings."""
    from topogen.errors import InternalError
    from topogen.pipeline.render import render

    cfg = load_config(EXAMPLES / config / "topogen.yaml")
    full = render(cfg)
    lean = render(cfg, findings=False)
    assert full.report.findings, "every example has a finding (OK at least)"
    assert lean.files == full.files
    assert lean.refused == full.refused
    assert lean.report.warnings == full.report.warnings
    assert lean.report.plans == full.report.plans
    assert all(not ja.findings for c in lean.report.clusters for ja in c.jobs)
    assert not lean.report.notes
    with pytest.raises(InternalError):
        lean.report.findings  # noqa: B018


def test_a_fleet_render_without_findings_makes_no_notes_and_the_same_files(
    fleet_config: Path,
) -> None:
    """The fleets' policies have notes (L7 rules, ...): `topogen render` makes none."""
    from topogen.pipeline.render import render

    cfg = load_config(fleet_config)
    full = render(cfg)
    lean = render(cfg, findings=False)
    assert full.report.notes
    assert not lean.report.notes
    assert lean.files == full.files
    assert lean.report.warnings == full.report.warnings
