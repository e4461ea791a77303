"""The spread plan: every allowed domain, known jobs packed onto the cluster's GPUs."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import yaml

from helpers import GPU_TAINT, GPU_TOLERATION, config_doc, deployment, node_doc, write_tree
from topogen.cilium.labelfilter import LabelFilter
from topogen.config import load_config
from topogen.identity import identity_source
from topogen.packing import JobNeed, assign
from topogen.pipeline import analyze
from topogen.render.intent import buckets, intent_for, zones_for
from topogen.render.reference import mutate
from topogen.report import analysis_json

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
    out = mutate(pod, intent)
    assert out["metadata"]["labels"]["zone"] == "zone-b"
    terms = out["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["zone-b"]
    assert [b.jobs is None for b in buckets(intent)][-1]
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
    # a group without an identity label: a later job may land in any of the domains
    assert {p.identity_source for p in report.plans} == {"none"}
    assert all("may land in any of them" in p.fallback for p in report.plans)
    assert intent_for(report.plans[0], "Audit").fallback_zones == ("zone-a", "zone-b")


def test_a_pinned_group_takes_its_gpus_before_spread_groups_are_packed(tmp_path: Path) -> None:
    jobs = _job("left", 8, "team-a") + _job("right", 8, "team-b")
    groups = [{"name": "team-a", "namespaces": ["team-a"], "placement": "pin"},
              {"name": "team-b", "namespaces": ["team-b"]}]  # fmt: skip
    pinned, spread = analyze(load_config(_three_zones(tmp_path, jobs, groups))).plans
    assert pinned.domain == "zone-a"
    (job,) = spread.job_domains
    assert job.domain == "zone-b" and job.reason.startswith("packed")
