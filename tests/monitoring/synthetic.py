"""Synthetic exporter series for `promtool test rules`, built from topogen's own analysis.

A `World` is the cluster as the exporters would report it, minute by minute:
kube-state-metrics (pod labels, pod info with the node, phase, node labels), the
DCGM exporter (GPU utilisation per pod), the job's progress counter and Hubble
(policy drops and forwarded flows with source/destination pod labels). Values
are functions of the minute, so each scenario says exactly when things change.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from topogen.config import MonitoringConfig
from topogen.pipeline.analyze import ClusterAnalysis
from topogen.render.monitoring_rules import Records, ksm_label, zones_snippet

Timeline = Callable[[int], float | str | None]  # minute -> value (None: no sample)
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
ALERTS = (
    "TopogenGroupIdle",
    "TopogenGroupSplitAcrossZones",
    "TopogenGroupPolicyDrops",
    "TopogenGroupPending",
)
MINUTES = 60


def const(value: float | str | None) -> Timeline:
    return lambda _m: value


def until(minute: int, before: float | str | None, after: float | str | None) -> Timeline:
    """`before` for minutes < `minute`, then `after`."""
    return lambda m: before if m < minute else after


def counter(per_minute: float, start: float = 0.0, stop_at: int | None = None) -> Timeline:
    """A counter increasing by `per_minute` each minute (flat from `stop_at` on)."""
    return lambda m: start + per_minute * (m if stop_at is None else min(m, stop_at))


def duration_minutes(duration: str) -> int:
    value, unit = int(duration[:-1]), duration[-1]
    return {"s": value / 60, "m": value, "h": value * 60}[unit]  # type: ignore[return-value]


@dataclass
class Pod:
    name: str
    namespace: str
    labels: Mapping[str, str]  # Kubernetes pod labels
    role: str  # coordinator | worker
    node: Timeline  # node name, or None while unscheduled
    phase: Timeline
    gpu: Timeline | None = None  # DCGM utilisation, percent
    steps: Timeline | None = None  # the progress counter


@dataclass
class World:
    nodes: Mapping[str, Mapping[str, str]]  # node -> Kubernetes labels
    pods: list[Pod]
    drops: list[tuple[str, str, Timeline]] = field(default_factory=list)  # src, dst, counter
    flows: list[tuple[str, str, Timeline]] = field(default_factory=list)
    drop_reason: str = "POLICY_DENIED"

    def pod(self, name: str) -> Pod:
        return next(p for p in self.pods if p.name == name)

    def input_series(self, mon: MonitoringConfig) -> list[dict[str, str]]:
        m = mon.metrics
        out: list[dict[str, str]] = []
        ksm = {"job": "kube-state-metrics", "instance": "ksm:8080"}
        for node, labels in sorted(self.nodes.items()):
            lbl = {ksm_label(k): v for k, v in labels.items()}
            out.append(_series(m.node_labels, {**ksm, "node": node, **lbl}, const(1)))
        for i, p in enumerate(self.pods):
            ident = {**ksm, "namespace": p.namespace, "pod": p.name, "uid": f"uid-{i}"}
            lbl = {ksm_label(k): v for k, v in p.labels.items()}
            out.append(_series(m.pod_labels, {**ident, **lbl}, const(1)))
            for node in sorted({str(n) for n in map(p.node, range(MINUTES + 1)) if n}):
                out.append(_series(m.pod_info, {**ident, "node": node}, _when(p.node, node)))
            if any(p.node(t) is None for t in range(MINUTES + 1)):
                out.append(_series(m.pod_info, ident, _when(p.node, None)))
            for phase in PHASES:
                out.append(_series(m.pod_phase, {**ident, "phase": phase}, _is(p.phase, phase)))
            if p.gpu is not None:
                host = {
                    "gpu": "0",
                    "UUID": f"GPU-{i}",
                    "modelName": "NVIDIA H100",
                    "container": "worker",
                    "namespace": p.namespace,
                    "pod": p.name,
                    "job": "dcgm-exporter",
                    "instance": f"dcgm-{i}:9400",
                }
                out.append(_series(m.gpu_utilisation, host, p.gpu))
            if p.steps is not None and mon.progress_metric:
                out.append(
                    _series(
                        mon.progress_metric,
                        {
                            "namespace": p.namespace,
                            "pod": p.name,
                            "job": "trainer",
                            "instance": f"{p.name}:8000",
                        },
                        p.steps,
                    )
                )
        for metric, edges, extra in (
            (m.policy_drops, self.drops, {"reason": self.drop_reason, "protocol": "TCP"}),
            (m.flows, self.flows, {"verdict": "FORWARDED", "type": "L3_L4", "protocol": "TCP"}),
        ):
            if metric is None:
                continue
            for j, (src, dst, values) in enumerate(edges):
                s, d = self.pod(src), self.pod(dst)
                out.append(
                    _series(
                        metric,
                        {
                            **extra,
                            "namespace": "kube-system",
                            "pod": f"cilium-{j}",
                            "instance": f"cilium-{j}:9965",
                            "job": "hubble",
                            "source_namespace": s.namespace,
                            "source_pod": s.name,
                            "destination_namespace": d.namespace,
                            "destination_pod": d.name,
                        },
                        values,
                    )
                )
        return out

    def places_at(
        self,
        minute: int,
        namespace: str,
        job_label: str,
        job: str,
        node_label: str = "topology.kubernetes.io/zone",
    ) -> list[str]:
        """Zones (values of `node_label`) of the job's scheduled Pending/Running pods."""
        places = set()
        for p in self.pods:
            node = p.node(minute)
            if (
                p.namespace == namespace
                and p.labels.get(job_label) == job
                and node
                and p.phase(minute) in ("Pending", "Running")
            ):
                places.add(self.nodes[str(node)][node_label])
        return sorted(places)


def _when(node: Timeline, value: Any) -> Timeline:
    return lambda m: 1 if node(m) == value else None


def _is(phase: Timeline, value: str) -> Timeline:
    return lambda m: 1 if phase(m) == value else 0


def series_name(metric: str, labels: Mapping[str, str]) -> str:
    """A series in PromQL notation; values are escaped (JSON strings are PromQL strings)."""
    body = ",".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in sorted(labels.items()))
    return f"{metric}{{{body}}}"


def _series(metric: str, labels: Mapping[str, str], values: Timeline) -> dict[str, str]:
    out, seen = [], False
    for minute in range(MINUTES + 1):
        v = values(minute)
        if v is None:
            out.append("stale" if seen else "_")
            seen = False
        else:
            out.append(repr(float(v)) if not isinstance(v, str) else v)
            seen = True
    return {"series": series_name(metric, labels), "values": " ".join(out)}


# --- the example's pods ------------------------------------------------------------------

RUNNING = const("Running")
BUSY = const(85.0)  # GPU utilisation of a job doing work


def example_pods(
    cluster: ClusterAnalysis,
    placement: Mapping[str, Sequence[str | None]],
    phase: Timeline | Mapping[str, Timeline] = RUNNING,
    gpu: Timeline | None = BUSY,
    steps: Timeline | None = None,
) -> list[Pod]:
    """One Pod per replica of each analysed job; nodes are assigned per role, round-robin.

    `placement` maps a role to nodes (None: unscheduled); `phase` is one timeline or
    one per role; GPU utilisation goes to workers, the progress counter to the coordinator.
    """
    pods = []
    for job in cluster.jobs:
        for member in job.members:
            nodes = placement[member.role]
            for i in range(member.replicas):
                node = nodes[i % len(nodes)]
                ph = phase[member.role] if isinstance(phase, Mapping) else phase
                pods.append(
                    Pod(
                        name=f"{member.workload.name}-{i}",
                        namespace=member.workload.namespace,
                        labels=dict(member.template.labels),
                        role=member.role,
                        node=const(node),
                        phase=ph,
                        gpu=gpu if member.role == "worker" else None,
                        steps=steps if member.role == "coordinator" else None,
                    )
                )
    return pods


def nodes_of(cluster: ClusterAnalysis) -> dict[str, dict[str, str]]:
    return {n.name: dict(n.labels) for n in cluster.inputs.topology.nodes}


def dashboard_exprs(dash: dict[str, Any]) -> list[str]:
    """Every PromQL the dashboard runs: panel targets and the selectors of its variables."""
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    for var in dash["templating"]["list"]:
        if var["type"] == "query":
            m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", var["query"]["query"])
            assert m, var
            exprs.append(m.group(1))
    return exprs


# --- expected alerts ---------------------------------------------------------------------


def expand(
    template: str, labels: Mapping[str, str], zones: Sequence[str], domains: Sequence[str] = ()
) -> str:
    """Expand the Go template subset topogen's annotations use (labels, zone lists)."""
    r = Records("5m")
    out = template.replace(zones_snippet(r.zone_pods, "zone"), ", ".join(zones) or "none")
    out = out.replace(zones_snippet(r.domain_pods, "domain"), ", ".join(domains) or "none")
    out = out.replace('{{ "{{" }}', "\0")
    out = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda mt: labels[mt.group(1)], out)
    assert "{{" not in out, out
    return out.replace("\0", "{{")


class Expectations:
    """Expected firing alerts, with annotations expanded from the rendered rules."""

    def __init__(self, rules: dict[str, Any]) -> None:
        self.alerts = {r["alert"]: r for g in rules["groups"] for r in g["rules"] if "alert" in r}

    def alert(
        self,
        name: str,
        group: str,
        namespace: str,
        job: str,
        zones: Sequence[str],
        domains: Sequence[str] = (),
    ) -> dict[str, Any]:
        rule = self.alerts[name]
        labels = {"topogen_group": group, "namespace": namespace, "training_job": job}
        return {
            "exp_labels": {
                **labels,
                **{k: expand(v, labels, zones, domains) for k, v in rule["labels"].items()},
            },
            "exp_annotations": {
                k: expand(v, labels, zones, domains) for k, v in rule["annotations"].items()
            },
        }


def alert_tests(eval_time: str, firing: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One alert_rule_test per topogen alert at `eval_time`; absent names must not fire."""
    return [
        {"eval_time": eval_time, "alertname": name, "exp_alerts": firing.get(name, [])}
        for name in ALERTS
    ]


def run_promtool_tests(
    promtool: Path,
    tmp_path: Path,
    rules_file: Path,
    tests: list[dict[str, Any]],
    name: str = "topogen",
) -> None:
    test_file = tmp_path / f"{name}-test.yaml"
    test_file.write_text(
        yaml.safe_dump(
            {
                "rule_files": [str(rules_file)],
                "evaluation_interval": "1m",
                "tests": tests,
            },
            sort_keys=False,
            allow_unicode=True,
        ),
        encoding="utf-8",
    )
    proc = subprocess.run(
        [str(promtool), "test", "rules", str(test_file)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"promtool test rules {test_file}:\n{proc.stdout}\n{proc.stderr}"
