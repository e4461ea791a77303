"""The spread plan: every allowed domain, known jobs packed onto the cluster's GPUs."""

from __future__ import annotations

import copy
import itertools
import json
import random
from fractions import Fraction
from pathlib import Path

import yaml

from helpers import GPU_TAINT, GPU_TOLERATION, config_doc, deployment, node_doc, write_tree
from topogen.cilium.labelfilter import LabelFilter
from topogen.config import load_config
from topogen.pipeline.analyze import analyze
from topogen.pipeline.format import analysis_json
from topogen.plan.assignment import Assignment, JobNeed, assign
from topogen.plan.fallback import choose
from topogen.plan.identity_source import identity_source
from topogen.render.intent import buckets, intent_for, zones_for
from topogen.render.reference import mutate, mutate_own

F = Fraction


def test_packing_the_issues_example_runs_two_jobs_at_once() -> None:
    """Six jobs of 6 GPUs, zones of 8, 8 and 2: two run at once, the others queue evenly."""
    jobs = [JobNeed(f"j{i}", F(6), ("a", "b")) for i in range(6)]
    got = assign(jobs, {"a": F(8), "b": F(8), "c": F(2)})
    packed = {got.domain[k] for k in got.runs_at_once}
    assert len(got.runs_at_once) == 2 and packed == {"a", "b"}
    queued = [got.domain[f"j{i}"] for i in range(6) if f"j{i}" not in got.runs_at_once]
    assert sorted(queued) == ["a", "a", "b", "b"]
    assert got.free == {"a": F(2), "b": F(2), "c": F(2)}


def test_packing_fills_a_domain_with_the_jobs_that_fit_it_best() -> None:
    """Largest first would put the 17 in z and leave 7 idle; 12 + 12 fill it."""
    jobs = [JobNeed("big", F(17), ("z",)), JobNeed("m1", F(12), ("z", "y")),
            JobNeed("m2", F(12), ("z",)), JobNeed("s", F(8), ("y",))]  # fmt: skip
    got = assign(jobs, {"z": F(24), "y": F(8)})
    assert got.runs_at_once == {"m1", "m2", "s"}
    assert got.free == {"z": F(0), "y": F(0)}


def test_packing_is_deterministic_and_every_job_gets_one_of_its_domains() -> None:
    jobs = [JobNeed(f"j{i}", F(1 + i % 5), ("a", "b", "c")[: 1 + i % 3]) for i in range(40)]
    cap = {"a": F(10), "b": F(7), "c": F(3)}
    first, second = assign(jobs, cap), assign(list(reversed(jobs)), cap)
    assert first == second
    assert all(first.domain[j.key] in j.domains for j in jobs)


def _runs_together_at_most(got: Assignment, jobs: list[JobNeed], domain: str) -> Fraction:
    """The most GPUs a set of the domain's jobs that exclude none of each other needs."""
    mine = [j for j in jobs if got.domain.get(j.key) == domain]
    apart = {(a, b) for a, bs in got.excludes.items() for b in bs}
    most = Fraction(0)
    for n in range(1, len(mine) + 1):
        for combo in itertools.combinations(mine, n):
            keys = [j.key for j in combo]
            if not any(
                (a, b) in apart or (b, a) in apart for a, b in itertools.combinations(keys, 2)
            ):
                most = max(most, sum((j.gpus for j in combo), Fraction(0)))
    return most


def test_queued_jobs_exclude_the_packed_jobs_whose_gpus_they_would_take() -> None:
    """The issue's example: each queued 6-GPU job shares its slot (the packed job of its
    zone) with the packed job and the other queued one; whichever starts first runs."""
    jobs = [JobNeed(f"j{i}", F(6), ("a", "b")) for i in range(6)]
    got = assign(jobs, {"a": F(8), "b": F(8), "c": F(2)})
    assert got.excludes == {"j2": ("j0", "j4"), "j3": ("j1", "j5"),
                            "j4": ("j0", "j2"), "j5": ("j1", "j3")}  # fmt: skip
    assert not set(got.excludes) & got.runs_at_once
    # a small queued job takes the smallest packed job(s) at or above its size as its slot
    jobs = [JobNeed("p9", F(9), ("z",)), JobNeed("p2", F(2), ("z",)), JobNeed("p1", F(1), ("z",)),
            JobNeed("q2", F(2), ("z",))]  # fmt: skip
    got = assign(jobs, {"z": F(12)})
    assert got.runs_at_once == {"p9", "p2", "p1"} and got.excludes == {"q2": ("p2",)}
    # queued jobs that fit a slot together run together: one alternative
    jobs = [JobNeed("p1", F(8), ("z",)), JobNeed("p2", F(8), ("z",)), JobNeed("q9", F(9), ("z",)),
            JobNeed("q3a", F(3), ("z",)), JobNeed("q3b", F(3), ("z",))]  # fmt: skip
    got = assign(jobs, {"z": F(16)})
    assert got.runs_at_once == {"p1", "p2"}
    assert got.excludes == {"q9": ("p1", "p2"), "q3a": ("p1", "p2"), "q3b": ("p1", "p2")}
    # a job no slot can hold (its domain's GPUs, less a pinned group's, are too few for
    # it) runs alone there: it excludes every other job of the domain
    got = assign([JobNeed("p", F(4), ("z",)), JobNeed("big", F(10), ("z",))], {"z": F(8)})
    assert got.domain["big"] == "z" and got.excludes == {"big": ("p",)}
    # sums too large for bit sets (a node reporting 2^40 GPUs): the slot is every packed job
    huge = F(2**40)
    jobs = [JobNeed("a", huge, ("z",)), JobNeed("b", huge / 2, ("z",)), JobNeed("q", huge, ("z",))]
    got = assign(jobs, {"z": huge + huge / 2})
    assert got.runs_at_once == {"a", "b"} and got.excludes == {"q": ("a", "b")}


def test_no_jobs_that_may_run_together_need_more_gpus_than_their_domain_has() -> None:
    """Random fleets: in every domain, every set of jobs none of which excludes another
    fits the domain's GPUs at once (so no job is ever left partly bound by known jobs); a
    queued job excludes jobs of its own kind only, unless it runs alone."""
    rng = random.Random(7)
    queued = 0
    for _ in range(60):
        cap = {d: F(rng.choice((0, 2, 4, 8, 8, 12, 16))) for d in "abcd"}
        jobs = []
        for i in range(rng.randint(3, 11)):
            gpus = F(rng.randint(1, 12))
            doms = tuple(d for d in "abcd" if cap[d] >= gpus and rng.random() < 0.7)
            jobs.append(JobNeed(f"j{i:02d}", gpus, doms, rng.choice(("x", "x", "y"))))
        got = assign(jobs, cap)
        kind = {j.key: j.kind for j in jobs}
        for d in cap:
            assert _runs_together_at_most(got, jobs, d) <= cap[d], (jobs, cap, d)
        for q, ks in got.excludes.items():
            assert all(got.domain[k] == got.domain[q] for k in ks)
            # a slot holds jobs of one kind; a job alone in its domain excludes all there
            alone = set(ks) == {k for k, d in got.domain.items() if d == got.domain[q]} - {q}
            assert alone or {kind[k] for k in ks} == {kind[q]}
        assert all(got.domain[j.key] in j.domains for j in jobs if j.domains)
        assert set(got.excludes) == {j.key for j in jobs if j.domains} - got.runs_at_once
        queued += len(got.excludes)
    assert queued > 60  # the fleets do queue


def test_identity_follows_placement_only_where_stamped_and_kept() -> None:
    assert identity_source(None, set_in_template=False, host_network=False) == "none"
    assert identity_source("zone", set_in_template=False, host_network=False) == "static"
    assert identity_source("zone", set_in_template=False, host_network=True) == "placement"
    zone = "topology.kubernetes.io/zone"  # stamped by PodTopologyLabels, dropped by Cilium
    default, keeping = LabelFilter(), LabelFilter((f"k8s:{zone}",))
    assert not default.keeps(zone) and default.keeps("zone") and keeping.keeps(zone)
    assert identity_source(zone, set_in_template=False, host_network=False) == "static"
    kept = identity_source(zone, set_in_template=False, host_network=False, label_filter=keeping)
    assert kept == "placement"
    static = identity_source(zone, set_in_template=True, host_network=False, label_filter=keeping)
    assert static == "static"


def _job(name: str, gpus: int, namespace: str = "ml") -> list[dict]:
    return [
        deployment(f"{name}-coord", {"app": name, "role": "coordinator"}, namespace=namespace),
        deployment(f"{name}-workers", {"app": name, "role": "worker"}, replicas=gpus, gpus=1,
                   namespace=namespace, spec={"tolerations": [GPU_TOLERATION]}),
    ]  # fmt: skip


def _three_zones(tmp_path: Path, workloads: list[dict], groups: list[dict]) -> Path:
    nodes = [
        node_doc("a1", "zone-a", gpus=8, taints=[GPU_TAINT]),
        node_doc("b1", "zone-b", gpus=8, taints=[GPU_TAINT]),
        node_doc("c1", "zone-c", gpus=2, taints=[GPU_TAINT]),
        node_doc("c2", "zone-c"),
    ]
    cfg = config_doc()
    base = cfg["groups"][0]
    cfg["groups"] = [{**base, **g} for g in groups]
    write_tree(tmp_path, {"topogen.yaml": yaml.safe_dump(cfg), "nodes.yaml": yaml.safe_dump_all(nodes),
                          "policies/none.yaml": "", "workloads/w.yaml": yaml.safe_dump_all(workloads)})  # fmt: skip
    return tmp_path / "topogen.yaml"


def test_six_jobs_spread_over_both_zones_that_hold_them(tmp_path: Path) -> None:
    jobs = [w for i in range(6) for w in _job(f"job-{i}", 6)]
    spread = analyze(load_config(_three_zones(tmp_path / "s", jobs, [{"identityLabel": "zone"}])))
    (plan,) = spread.plans
    assert plan.spread and [n for n, _ in plan.domains] == ["zone-a", "zone-b"]
    assert plan.zones == ("zone-a", "zone-b") and plan.identity_source == "static"
    packed = [j for j in plan.job_domains if j.reason.startswith("packed")]
    assert sorted(j.domain for j in packed) == ["zone-a", "zone-b"]
    assert "6 jobs fit zone-a, zone-b one at a time" in plan.note
    doc = json.loads(analysis_json(spread))["plans"][0]
    assert doc["placement"] == "spread" and doc["domains"] == ["zone-a", "zone-b"]
    assert len(doc["jobPlacements"]) == 6 and "pinned to zone-a" in doc["fallback"]
    # the intent pins each job to its zone, and a job it does not know to the default
    intent = intent_for(plan, "Audit")
    assert intent.per_job and intent.job_identity and intent.fallback_zones == ("zone-a",)
    one = next(j for j in packed if j.domain == "zone-b")
    assert zones_for(intent, "ml", one.name) == ("zone-b",)
    assert zones_for(intent, "ml", "job-from-later") == ("zone-a",)
    pod = {"metadata": {"name": "p", "namespace": "ml", "labels": {"app": one.name,
                                                                   "role": "worker"}},
           "spec": {"containers": [{"name": "c"}]}}  # fmt: skip
    before = copy.deepcopy(pod)
    out = mutate(pod, intent)
    assert pod == before  # mutate leaves the pod it is given as it was
    own = copy.deepcopy(pod)
    assert mutate_own(own, intent) is own and own == out  # in place, the same pod
    assert out["metadata"]["labels"]["zone"] == "zone-b"
    terms = out["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["zone-b"]
    assert [b.jobs is None for b in buckets(intent)][-1]
    # the queued jobs: each never beside its zone's packed job or the other one queued there
    queued = [j for j in plan.job_domains if j.reason.startswith("queued")]
    assert len(queued) == 4 and all(len(j.excludes) == 2 for j in queued)
    q = queued[0]
    behind = {f"ml/{n}" for _, _, n in q.excludes}
    assert next(j for j in packed if j.domain == q.domain).job in behind
    assert "required pod anti-affinity" in q.reason
    row = next(r for r in doc["jobPlacements"] if r["job"] == q.job)
    assert set(row["excludes"]) == behind
    pod["metadata"]["labels"]["app"] = q.name
    terms = mutate(pod, intent)["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert terms == [{"labelSelector": {"matchExpressions": [
        {"key": "app", "operator": "In", "values": sorted(n for _, _, n in q.excludes)}]},
        "namespaces": ["ml"], "topologyKey": "topology.kubernetes.io/zone"}]  # fmt: skip
    # pin: today's behaviour, one domain for all six
    pin = analyze(load_config(_three_zones(tmp_path / "p", jobs, [{"identityLabel": "zone",
                                                                  "placement": "pin"}])))  # fmt: skip
    (pinned,) = pin.plans
    assert not pinned.spread and pinned.zones == ("zone-a",) and pinned.job_domains == ()
    assert "fit zone-a one at a time" in pinned.note


def test_groups_planned_together_do_not_count_the_same_gpus(tmp_path: Path) -> None:
    """Two groups, one 8-GPU job each, two 8-GPU zones: one job in each zone."""
    jobs = _job("left", 8, "team-a") + _job("right", 8, "team-b")
    groups = [{"name": "team-a", "namespaces": ["team-a"]},
              {"name": "team-b", "namespaces": ["team-b"]}]  # fmt: skip
    report = analyze(load_config(_three_zones(tmp_path, jobs, groups)))
    domains = [j.domain for p in report.plans for j in p.job_domains]
    assert sorted(domains) == ["zone-a", "zone-b"]
    assert all(j.reason.startswith("packed") for p in report.plans for j in p.job_domains)
    # a group without an identity label: a later job may land in any domain that keeps room
    # for one of its jobs once the known jobs run; none does here, so the most left over
    assert {p.identity_source for p in report.plans} == {"none"}
    assert all("pinned to zone-a (no domain keeps room" in p.fallback for p in report.plans)
    assert [p.fallback_domains for p in report.plans] == [("zone-a",), ("zone-a",)]
    assert intent_for(report.plans[0], "Audit").fallback_zones == ("zone-a",)


def _fallback_plan(tmp_path: Path, group: dict) -> object:
    """A 6-GPU and a 2-GPU job on zones of 8, 8 and 2 GPUs: packed together into zone-a
    (the first of the equals it fills), leaving 0, 8 and 2 GPUs."""
    jobs = _job("big", 6) + _job("small", 2)
    (plan,) = analyze(load_config(_three_zones(tmp_path, jobs, [group]))).plans
    assert {j.name: j.domain for j in plan.job_domains} == {"big": "zone-a", "small": "zone-a"}
    return plan


def test_a_later_static_job_goes_where_the_packing_leaves_the_most_gpus(tmp_path: Path) -> None:
    """Not the domain with the most GPUs (zone-a, first of the 8s, which the known jobs
    fill): the one with the most left over once they are packed (zone-b, 8), and
    preferZones first among those that still hold a job of the group (2 GPUs)."""
    plan = _fallback_plan(tmp_path / "s", {"identityLabel": "zone"})
    assert plan.identity_source == "static" and plan.fallback_domains == ("zone-b",)
    assert plan.fallback.startswith("a job that appears after the render is pinned to zone-b")
    assert "zone-a 0, zone-b 8, zone-c 2" in plan.fallback
    intent = intent_for(plan, "Audit")
    assert zones_for(intent, "ml", "job-from-later") == ("zone-b",)
    assert buckets(intent)[-1].identity == ("zone", "zone-b")
    doc = json.loads(analysis_json(analyze(load_config(tmp_path / "s" / "topogen.yaml"))))
    assert doc["plans"][0]["fallbackDomains"] == ["zone-b"]
    assert doc["plans"][0]["fallbackZones"] == ["zone-b"]
    preferred = _fallback_plan(tmp_path / "p", {"identityLabel": "zone",
                                                "preferZones": ["zone-a", "zone-b"]})  # fmt: skip
    assert preferred.fallback_domains == ("zone-b",)  # zone-a is preferred but full
    # zone-c (2 GPUs left) keeps room for the small job but could not hold the big one
    assert "among the domains that hold each of its known jobs (zone-a, zone-b)" in plan.fallback


def test_a_later_job_with_placement_identity_may_use_the_domains_with_room(tmp_path: Path) -> None:
    """No identity label (the zone changes nothing): the coordinator of a job the render
    did not know may land in a domain that keeps room for a job of the group and could
    hold each known one: zone-b, not zone-a whose GPUs the packing gave away, nor zone-c
    (2 GPUs, too few for the 6-GPU job); every fallback zone is one of the plan's."""
    plan = _fallback_plan(tmp_path / "a", {})
    assert plan.identity_source == "none"
    assert plan.fallback_domains == ("zone-b",)
    assert "may land in zone-b, its workers following" in plan.fallback
    intent = intent_for(plan, "Audit")
    assert intent.fallback_zones == ("zone-b",)
    assert set(intent.fallback_zones) < set(plan.zones) == {"zone-a", "zone-b", "zone-c"}
    assert zones_for(intent, "ml", "small") == ("zone-a",)
    # two 2-GPU jobs: every domain could hold each, and those that keep 2 GPUs are the set
    jobs = _job("one", 2) + _job("two", 2)
    (two,) = analyze(load_config(_three_zones(tmp_path / "b", jobs, [{}]))).plans
    assert {j.name: j.domain for j in two.job_domains} == {"one": "zone-c", "two": "zone-a"}
    assert two.fallback_domains == ("zone-a", "zone-b")  # zone-c's 2 GPUs are taken
    assert "left over once the known jobs are packed: zone-a 6, zone-b 8, zone-c 0" in two.fallback


def test_assignment_left_never_exceeds_the_packed_jobs_room() -> None:
    """What a later job may have: the packed jobs' room less what the queue slots take."""
    got = assign([JobNeed(f"j{i}", F(6), ("a", "b")) for i in range(6)],
                 {"a": F(8), "b": F(8), "c": F(2)})  # fmt: skip
    assert got.left == {"a": F(2), "b": F(2), "c": F(2)}
    for seed in range(20):
        rng = random.Random(seed)
        jobs = [JobNeed(f"j{i}", F(rng.randint(1, 9)), ("a", "b", "c")[: rng.randint(1, 3)],
                        rng.choice("xy")) for i in range(12)]  # fmt: skip
        got = assign(jobs, {"a": F(10), "b": F(7), "c": F(3)})
        assert all(F(0) <= got.left[d] <= got.free[d] for d in got.free)


def test_the_fallback_given_a_packing() -> None:
    """topogen.plan.fallback.choose on left-over GPUs as a packing leaves them."""
    names = ["a", "b", "c", "d"]
    left = {"a": F(0), "b": F(3), "c": F(5), "d": F(9)}
    # d could not hold every known job alone: never chosen, even with the most left over
    assert choose(names, ["a", "b", "c"], left, F(3), (), True)[0] == ("c",)
    assert choose(names, ["a", "b", "c"], left, F(3), ("b",), True)[0] == ("b",)
    assert choose(names, ["a", "b", "c"], left, F(3), ("a",), True)[0] == ("c",)  # a is full
    assert choose(names, ["a", "b", "c"], left, F(3), (), False)[0] == ("b", "c")
    assert choose(names, ["a", "b", "c"], left, F(4), (), False)[0] == ("c",)
    # no domain keeps room: the most left over (ties: the plan's order), either identity
    for static in (True, False):
        where, why = choose(names, names, left, F(10), (), static)
        assert where == ("d",) and "no domain keeps room for a job of the group (10 GPUs)" in why
        assert "a 0, b 3, c 5, d 9" in why
        # the plan's order already puts preferZones first, then the most GPUs
        assert choose(names, names, {n: F(0) for n in names}, F(1), (), static)[0] == ("a",)
    # none could hold every known job: all of them count; fractions as written
    assert choose(["a", "b"], [], {"a": F(1, 2), "b": F(3, 2)}, F(1, 2), (), False) == (
        ("a", "b"),
        "a job that appears after the render may land in any of them, its workers following "
        "its coordinator (the domains that keep room for a job of the group (0.5 GPUs); GPUs "
        "left over once the known jobs are packed: a 0.5, b 1.5)",
    )
