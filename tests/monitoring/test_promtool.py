"""The generated rules under the real promtool: `check rules`, and `test rules` with synthetic
series for each state of the problem and each threshold's edge."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from topogen.config import TopogenConfig, load_config
from topogen.model import LabelSelector, Requirement
from topogen.pipeline.analyze import ClusterAnalysis, analyze
from topogen.render.base import RenderedFile
from topogen.render.monitoring import render_monitoring

from .conftest import EXAMPLE
from .synthetic import (
    MINUTES,
    Expectations,
    Pod,
    Timeline,
    World,
    alert_tests,
    const,
    counter,
    dashboard_exprs,
    duration_minutes,
    example_pods,
    nodes_of,
    run_promtool_tests,
    series_name,
    until,
)

pytestmark = pytest.mark.tools

GROUP, NS, JOB = "ml-training", "ml-demo", "ml-training"
SPLIT = {"coordinator": ["cpu-b1"], "worker": ["gpu-a1", "gpu-a2"]}  # the example's "before"
TOGETHER = {"coordinator": ["gpu-a1"], "worker": ["gpu-a1", "gpu-a2"]}
FLAT: Timeline = const(120.0)  # a progress counter that stopped


def _pairs(
    world: World, src_role: str, dst_role: str, values: Timeline
) -> list[tuple[str, str, Timeline]]:
    return [
        (s.name, d.name, values)
        for s in world.pods
        if s.role == src_role
        for d in world.pods
        if d.role == dst_role and d.name != s.name
    ]


def world(
    cluster: ClusterAnalysis,
    placement: Mapping[str, Sequence[str | None]],
    *,
    drops: Timeline | None = None,
    flows: Timeline | None = None,
    **pods: Any,
) -> World:
    """The example's job: drops and forwarded flows go from workers to the coordinator;
    forwarded flows also between workers and from the coordinator to the workers."""
    w = World(nodes_of(cluster), example_pods(cluster, placement, **pods))
    if drops is not None:
        w.drops = _pairs(w, "worker", "coordinator", drops)
    if flows is not None:
        w.flows = [
            *_pairs(w, "worker", "coordinator", flows),
            *_pairs(w, "coordinator", "worker", flows),
            *_pairs(w, "worker", "worker", flows),
        ]
    return w


class Harness:
    """Renders the rules for a config and runs promtool test groups against them."""

    def __init__(
        self, promtool: Path, tmp_path: Path, cluster: ClusterAnalysis, cfg: TopogenConfig
    ) -> None:
        self.promtool, self.tmp, self.cfg, self.cluster = promtool, tmp_path, cfg, cluster
        self.files = {f.path: f for f in render_monitoring(cluster, cfg)}
        text = self.files[f"monitoring/{cluster.cluster}/rules.yaml"].text
        self.rules_file = tmp_path / "rules.yaml"
        self.rules_file.write_text(text, encoding="utf-8")
        self.expect = Expectations(yaml.safe_load(text))

    def alert(self, name: str, w: World, minute: int) -> dict[str, Any]:
        plan = self.cluster.plans[0]
        job_label = plan.profile.job_label
        zones = w.places_at(minute, NS, job_label, JOB, plan.zone_label)
        domains = (
            w.places_at(minute, NS, job_label, JOB, plan.topology_key)
            if plan.topology_key != plan.zone_label
            else []
        )
        return self.expect.alert(name, GROUP, NS, JOB, zones, domains)

    def run(
        self, w: World, alerts: list[dict[str, Any]], exprs: list[dict[str, Any]] | None = None
    ) -> None:
        group: dict[str, Any] = {
            "interval": "1m",
            "input_series": w.input_series(self.cfg.monitoring),
            "alert_rule_test": alerts,
        }
        if exprs:
            group["promql_expr_test"] = exprs
        run_promtool_tests(self.promtool, self.tmp, self.rules_file, [group])

    def firing(self, w: World, minute: int, *names: str) -> list[dict[str, Any]]:
        """alert_rule_tests at `minute`: exactly `names` fire (once, for the example's job)."""
        return alert_tests(f"{minute}m", {n: [self.alert(n, w, minute)] for n in names})


@pytest.fixture
def h(promtool: Path, tmp_path: Path, cluster: ClusterAnalysis, cfg: TopogenConfig) -> Harness:
    return Harness(promtool, tmp_path, cluster, cfg)


def value(expr: str, v: float | None, at: str = "30m") -> dict[str, Any]:
    """promql_expr_test: `expr` is one sample with no labels and value `v` (None: empty)."""
    samples = [] if v is None else [{"labels": "{}", "value": v}]
    return {"expr": expr, "eval_time": at, "exp_samples": samples}


def group_sel(record: str) -> str:
    return f"sum({record}{{topogen_group='{GROUP}', namespace='{NS}', training_job='{JOB}'}})"


# --- promtool check rules ---------------------------------------------------------------------


def _variants(cfg: TopogenConfig, cluster: ClusterAnalysis) -> dict[str, list[RenderedFile]]:
    after = load_config(EXAMPLE.parent / "topogen-after.yaml")
    bare = cfg.model_copy(
        update={
            "monitoring": cfg.monitoring.model_copy(
                update={
                    "progress_metric": None,
                    "metrics": cfg.monitoring.metrics.model_copy(update={"flows": None}),
                }
            )
        }
    )
    profiles = []
    for name in (
        "kubeflow-training-operator",
        "kubeflow-trainer",
        "mpi-operator",
        "jobset",
        "volcano",
    ):
        g = cfg.groups[0].model_copy(
            update={
                "name": name,
                "profile": name,
                "group_label": None,
                "role_label": None,
                "coordinator_roles": None,
                "worker_roles": None,
            }
        )
        profiles.append(g)
    many = cfg.model_copy(update={"groups": [cfg.groups[0], *profiles]})
    return {
        "before": render_monitoring(cluster, cfg),
        "after": render_monitoring(analyze(after).clusters[0], after),
        "no-flows-no-progress": render_monitoring(cluster, bare),
        "every-profile": render_monitoring(analyze(many).clusters[0], many),
        "hostile": render_monitoring(hostile_cluster(cluster), cfg),
        "domain": render_monitoring(domain_cluster(cluster), cfg),
    }


def test_promtool_check_rules_on_every_generated_rule_file(
    promtool: Path, tmp_path: Path, cfg: TopogenConfig, cluster: ClusterAnalysis
) -> None:
    checked = 0
    for variant, files in _variants(cfg, cluster).items():
        for f in files:
            if f.path.endswith("rules.yaml"):
                text = f.text
            elif f.path.endswith("prometheusrule.yaml"):
                (obj,) = f.objects
                text = yaml.safe_dump(obj["spec"], allow_unicode=True)
            else:
                continue
            path = tmp_path / variant / Path(f.path).name
            path.parent.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
            proc = subprocess.run(
                [str(promtool), "check", "rules", str(path)],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert proc.returncode == 0, f"{variant} {f.path}:\n{proc.stdout}{proc.stderr}"
            assert "SUCCESS" in proc.stdout and not proc.stderr.strip(), proc.stderr
            checked += 1
    assert checked == 12


# --- the problem's states ---------------------------------------------------------------------


def test_hard_block_split_fires_idle_drops_and_split(h: Harness, cluster: ClusterAnalysis) -> None:
    """The example as analysed: coordinator in zone-b, GPU workers in zone-a, the zone
    policies drop the rendezvous; everything Running, GPUs idle, no progress counter at all."""
    w = world(cluster, SPLIT, gpu=const(0.0), steps=None, drops=counter(30), flows=counter(30))
    h.run(
        w,
        h.firing(
            w, 30, "TopogenGroupIdle", "TopogenGroupPolicyDrops", "TopogenGroupSplitAcrossZones"
        ),
        [
            value(group_sel("topogen:group_pods_running:ratio"), 1),
            value(group_sel("topogen:group_zones_occupied:count"), 2),
            value(group_sel("topogen:group_progress:rate5m"), 0),
            # 4 worker->coordinator series at 0.5/s, counted at both ends
            value(f"round(1000 * {group_sel('topogen:group_policy_drops:rate5m')})", 4000),
        ],
    )


def test_hard_block_colocated_fires_idle_and_drops_only(
    h: Harness, cluster: ClusterAnalysis
) -> None:
    """Same zone, but a static identity label makes the policy deny the path: a hard block
    without a split. The progress counter exists and is flat."""
    w = world(cluster, TOGETHER, gpu=const(0.0), steps=FLAT, drops=counter(30), flows=counter(30))
    h.run(
        w,
        h.firing(w, 30, "TopogenGroupIdle", "TopogenGroupPolicyDrops"),
        [value(group_sel("topogen:group_zones_occupied:count"), 1)],
    )


def test_cross_zone_split_progressing_fires_only_split(
    h: Harness, cluster: ClusterAnalysis
) -> None:
    w = world(cluster, SPLIT, gpu=const(85.0), steps=counter(10), flows=counter(60))
    h.run(
        w,
        h.firing(w, 30, "TopogenGroupSplitAcrossZones"),
        [
            value(group_sel("topogen:group_gpu_utilisation:avg"), 85),
            value(f"round(6000 * {group_sel('topogen:group_progress:rate5m')})", 1000),
            # worker->coordinator and coordinator->worker: 8 series at 1/s cross zones
            value(f"round(1000 * {group_sel('topogen:group_cross_zone_flows:rate5m')})", 8000),
            value(
                "count(topogen:group_zone_flows:rate5m{source_zone='zone-a', "
                "destination_zone='zone-a'})",
                1,
            ),
        ],
    )


def test_colocated_healthy_fires_nothing(h: Harness, cluster: ClusterAnalysis) -> None:
    w = world(cluster, TOGETHER, gpu=const(85.0), steps=counter(10), flows=counter(60))
    h.run(
        w,
        alert_tests("30m", {}),
        [
            value(group_sel("topogen:group_zones_occupied:count"), 1),
            value(group_sel("topogen:group_cross_zone_flows:rate5m"), None),
            value("count(topogen:group_pod_zone:info{role='worker', zone='zone-a'})", 4),
        ],
    )


def test_too_strict_constraint_pending_fires_only_pending(
    h: Harness, cluster: ClusterAnalysis
) -> None:
    """Confined to a zone without the GPU capacity: the coordinator runs, workers stay
    Pending and unscheduled, nothing exports GPU utilisation or progress."""
    w = world(
        cluster,
        {"coordinator": ["gpu-a1"], "worker": [None]},
        phase={"coordinator": const("Running"), "worker": const("Pending")},
        gpu=None,
        steps=None,
    )
    h.run(
        w,
        h.firing(w, 30, "TopogenGroupPending"),
        [
            value(f"{group_sel('topogen:group_pods_by_phase:count')}", 5),
            value(group_sel("topogen:group_zones_occupied:count"), 1),
        ],
    )


# --- thresholds: just under, just over ----------------------------------------------------------


@pytest.mark.parametrize(
    ("delta", "fires"),
    [(-0.1, True), (0.0, False), (0.1, False)],
    ids=["just-under", "at", "just-over"],
)
def test_idle_gpu_threshold_edge(
    h: Harness, cluster: ClusterAnalysis, delta: float, fires: bool
) -> None:
    util = h.cfg.monitoring.idle_gpu_utilisation + delta
    w = world(cluster, TOGETHER, gpu=const(util), steps=FLAT)
    h.run(w, h.firing(w, 30, *(["TopogenGroupIdle"] if fires else [])))


@pytest.mark.parametrize(
    ("steps", "fires"),
    [(FLAT, True), (counter(1), False)],
    ids=["no-progress", "one-step-a-minute"],
)
def test_idle_progress_edge(
    h: Harness, cluster: ClusterAnalysis, steps: Timeline, fires: bool
) -> None:
    w = world(cluster, TOGETHER, gpu=const(0.0), steps=steps)
    h.run(w, h.firing(w, 30, *(["TopogenGroupIdle"] if fires else [])))


def test_idle_for_edge(h: Harness, cluster: ClusterAnalysis) -> None:
    """GPUs go idle at minute 10: not firing one minute before idleFor, firing at it."""
    start, idle_for = 10, duration_minutes(h.cfg.monitoring.idle_for)
    w = world(cluster, TOGETHER, gpu=until(start, 80.0, 0.0), steps=FLAT)
    h.run(
        w, [*h.firing(w, start + idle_for - 1), *h.firing(w, start + idle_for, "TopogenGroupIdle")]
    )


@pytest.mark.parametrize(
    ("extra", "fires"),
    [(0, False), (1, True)],
    ids=["pending-for-just-under", "pending-for-just-over"],
)
def test_pending_for_edge(h: Harness, cluster: ClusterAnalysis, extra: int, fires: bool) -> None:
    """Workers Pending for pendingFor (+1) minutes, then scheduled and Running."""
    pending_for = duration_minutes(h.cfg.monitoring.pending_for)
    until_min = pending_for + extra
    w = world(
        cluster,
        TOGETHER,
        phase={"coordinator": const("Running"), "worker": until(until_min, "Pending", "Running")},
        gpu=const(85.0),
        steps=counter(10),
    )
    for p in w.pods:
        if p.role == "worker":
            node = p.node(0)
            p.node = until(until_min, None, node)
    at = pending_for
    h.run(
        w,
        [
            *h.firing(w, at - 1),
            *h.firing(w, at, *(["TopogenGroupPending"] if fires else [])),
            *h.firing(w, until_min + 1),
        ],
    )


def test_split_for_edge(h: Harness, cluster: ClusterAnalysis) -> None:
    split_for = duration_minutes(h.cfg.monitoring.split_for)
    w = world(cluster, SPLIT, gpu=const(85.0), steps=counter(10))
    h.run(w, [*h.firing(w, split_for - 1), *h.firing(w, split_for, "TopogenGroupSplitAcrossZones")])


@pytest.mark.parametrize(
    ("threshold", "per_min", "fires"),
    [(0.0, 0, False), (0.0, 1, True), (1.0, 27, False), (1.0, 33, True)],
    ids=["no-drops", "one-drop-a-minute", "0.9/s-under-1/s", "1.1/s-over-1/s"],
)
def test_policy_drops_threshold_edge(
    promtool: Path,
    tmp_path: Path,
    cluster: ClusterAnalysis,
    cfg: TopogenConfig,
    threshold: float,
    per_min: int,
    fires: bool,
) -> None:
    """One worker->coordinator drop series, counted at both ends: group rate 2 * per_min/60."""
    mon = cfg.monitoring.model_copy(update={"policy_drops_per_second": threshold})
    h = Harness(promtool, tmp_path, cluster, cfg.model_copy(update={"monitoring": mon}))
    w = world(cluster, TOGETHER, gpu=const(85.0), steps=counter(10))
    w.drops = [("trainer-workers-0", "trainer-coordinator-0", counter(per_min))]
    h.run(w, h.firing(w, 30, *(["TopogenGroupPolicyDrops"] if fires else [])))


def test_drops_for_edge(h: Harness, cluster: ClusterAnalysis) -> None:
    """Drops start after minute 10 (first non-zero rate at 11)."""
    drops_for = duration_minutes(h.cfg.monitoring.drops_for)
    w = world(
        cluster, TOGETHER, gpu=const(85.0), steps=counter(10), drops=lambda m: 30.0 * max(0, m - 10)
    )
    h.run(
        w,
        [*h.firing(w, 11 + drops_for - 1), *h.firing(w, 11 + drops_for, "TopogenGroupPolicyDrops")],
    )


# --- hostile values, domains, the dashboard's queries -----------------------------------------


HOSTILE_GROUP = 'ml"}\\{{ $x }}'
HOSTILE_NS = "o'k\\.ns"
HOSTILE_ROLE_KEY = "ro.le/x"


def hostile_cluster(cluster: ClusterAnalysis) -> ClusterAnalysis:
    """Quotes, backslashes, regex metacharacters and Go template delimiters everywhere
    a value enters PromQL or an annotation (bypassing config validation on purpose)."""
    plan = cluster.plans[0]
    group = plan.group.model_copy(
        update={"name": HOSTILE_GROUP, "namespaces": [HOSTILE_NS, "ml-demo"]}
    )
    profile = replace(
        plan.profile,
        job_label="app",
        role_label=HOSTILE_ROLE_KEY,
        coordinator=(
            LabelSelector((), (Requirement(HOSTILE_ROLE_KEY, "In", ("co'ord\\", "a.b")),)),
        ),
        worker=(LabelSelector((("tier", 'w"k'),), ()),),
    )
    zone = 'zone"{{ $labels.x }}\\'
    return replace(
        cluster, plans=(replace(plan, group=group, profile=profile, domain=zone, zones=(zone,)),)
    )


def test_hostile_values_select_exactly_and_stay_literal(
    promtool: Path, tmp_path: Path, cluster: ClusterAnalysis, cfg: TopogenConfig
) -> None:
    hostile = hostile_cluster(cluster)
    h = Harness(promtool, tmp_path, hostile, cfg)
    job = 'job"1\\'
    nodes = nodes_of(cluster)

    def pod(name: str, node: str, ns: str = HOSTILE_NS, **labels: str) -> Pod:
        return Pod(
            name,
            ns,
            {"app": job, **labels},
            "x",
            const(node),
            const("Running"),
            gpu=const(90.0),
            steps=counter(5),
        )

    w = World(
        nodes,
        [
            pod("coord", "gpu-a1", **{HOSTILE_ROLE_KEY: "a.b"}),
            pod("work", "cpu-b1", tier='w"k'),
            pod("decoy-regex", "cpu-b2", **{HOSTILE_ROLE_KEY: "aXb"}),  # `.` must be literal
            pod("decoy-ns", "cpu-b2", ns="o'kX.ns", tier='w"k'),  # namespace regex literal too
        ],
    )
    expected = h.expect.alert(
        "TopogenGroupSplitAcrossZones", HOSTILE_GROUP, HOSTILE_NS, job, ["zone-a", "zone-b"]
    )
    assert "{{ $labels.x }}" in expected["exp_annotations"]["description"]
    assert HOSTILE_GROUP in expected["exp_annotations"]["description"]
    h.run(
        w,
        alert_tests("30m", {"TopogenGroupSplitAcrossZones": [expected]}),
        [
            value("count(topogen:group_pod:info)", 2),
            value(f"count({series_name('topogen:group_pod:info', {'pod': 'coord'})})", 1),
            value(f"count({series_name('topogen:group_pod:info', {'role': 'worker'})})", 1),
        ],
    )


def domain_cluster(cluster: ClusterAnalysis) -> ClusterAnalysis:
    plan = replace(cluster.plans[0], topology_key="example.com/domain")
    return replace(cluster, plans=(plan,))


@pytest.mark.parametrize(
    ("domains", "fires"),
    [({"zone-a": "d1", "zone-b": "d1"}, False), ({"zone-a": "d1", "zone-b": "d2"}, True)],
    ids=["two-zones-one-domain", "two-domains"],
)
def test_colocate_by_domain_counts_domains(
    promtool: Path,
    tmp_path: Path,
    cluster: ClusterAnalysis,
    cfg: TopogenConfig,
    domains: dict[str, str],
    fires: bool,
) -> None:
    h = Harness(promtool, tmp_path, domain_cluster(cluster), cfg)
    w = world(cluster, SPLIT, gpu=const(85.0), steps=counter(10))
    w.nodes = {
        n: {**labels, "example.com/domain": domains[labels["topology.kubernetes.io/zone"]]}
        for n, labels in w.nodes.items()
    }
    firing = {"TopogenGroupSplitAcrossZones": [h.alert("TopogenGroupSplitAcrossZones", w, 30)]}
    h.run(
        w,
        alert_tests("30m", firing if fires else {}),
        [
            value(group_sel("topogen:group_zones_occupied:count"), 2),
            value(group_sel("topogen:group_domains_occupied:count"), 2 if fires else 1),
        ],
    )


def test_every_dashboard_query_returns_data(h: Harness, cluster: ClusterAnalysis) -> None:
    """In the hard-block state every query of the dashboard is non-empty: it reads series
    the rules record (or ALERTS, which the alerting rules write)."""
    dash = json.loads(h.files["monitoring/lab/dashboard.json"].text)
    exprs = dashboard_exprs(dash)
    w = world(cluster, SPLIT, gpu=const(0.0), steps=FLAT, drops=counter(30), flows=counter(30))
    tests = []
    for expr in exprs:
        concrete = expr.replace("$group", ".*").replace("$training_job", ".*")
        tests.append(value(f"(count({concrete}) > bool 0) or vector(0)", 1, at=f"{MINUTES}m"))
    h.run(w, [], tests)
