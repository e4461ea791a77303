"""Monitoring backend: per cluster, Prometheus rules and a Grafana dashboard for its groups.

The rules answer one question per training job: does it do useful work? Recording
rules (monitoring_rules.py builds the PromQL) and four alerts per config group: idle,
split across zones, policy drops, Pending too long; each alert's description names
the group, the zones and a runbook step. The templates in templates/monitoring/ hold
the layout and the prose; values enter them only through |tojson and |toyaml.

Files, under monitoring/<cluster>/: prometheusrule.yaml (monitoring.coreos.com/v1),
rules.yaml (the same groups as a Prometheus rule file, for promtool), dashboard.json
(Grafana, sorted keys) and dashboard-configmap.yaml (for the Grafana sidecar).
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from topogen.config import MonitoringConfig, TopogenConfig
from topogen.errors import InternalError
from topogen.plan.group_plan import GroupPlan
from topogen.render.base import RenderedFile, render_documents, render_text
from topogen.render.monitoring_rules import (
    GROUP_LABELS,
    GroupRules,
    Records,
    go_text,
    zones_snippet,
)
from topogen.render.planned import PlannedCluster
from topogen.render.vocabulary import CLUSTER_LABEL, MANAGED_BY

__all__ = ["DASHBOARD_SCHEMA_VERSION", "render_monitoring"]

DASHBOARD_SCHEMA_VERSION = 39
_BY_GROUP = ", ".join(GROUP_LABELS)
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# --- prose values (Go-template-safe) -------------------------------------------


def _plan_text(plan: GroupPlan) -> str:
    if plan.refused:
        return f"topogen could not plan a domain for it ({plan.refused})"
    if plan.domain is None:
        return "topogen found no jobs of this group to plan for"
    zones = ", ".join(plan.zones)
    where = plan.domain if zones == plan.domain else f"{plan.domain} ({zones})"
    return f"topogen's plan confines it to {where}"


def _port_text(plan: GroupPlan) -> str:
    ports = plan.group.ports or []
    if not ports:
        return ""
    first = ports[0]
    return (
        f" --port {first}/TCP" if isinstance(first, int) or "/" not in first else f" --port {first}"
    )


def _text(plan: GroupPlan, cluster: str, cfg: MonitoringConfig) -> dict[str, str]:
    return {
        k: go_text(v)
        for k, v in {
            "group": plan.group.name,
            "cluster": cluster,
            "plan": _plan_text(plan),
            "port": _port_text(plan),
            "progress": cfg.progress_metric or "",
            "gpu_threshold": f"{cfg.idle_gpu_utilisation:g}",
            "drops_threshold": f"{cfg.policy_drops_per_second:g}",
            "reasons": ", ".join(cfg.policy_drop_reasons),
            "place": "zone" if plan.topology_key == plan.zone_label else "domain",
        }.items()
    }


def _group_values(plan: GroupPlan, cluster: str, cfg: MonitoringConfig) -> dict[str, Any]:
    rules = GroupRules(plan, cfg)
    r = rules.r
    place = r.domain_pods if rules.domain else r.zone_pods
    return {
        "name": f"topogen.{cluster}.{plan.group.name}",
        "records": rules.records(),
        "alerts": rules.alerts(),
        # alert labels are Go templates too (recording rule labels are not)
        "alert_labels": {
            "severity": "warning",
            "topogen_cluster": go_text(cluster),
            "topogen_group": go_text(plan.group.name),
        },
        "text": _text(plan, cluster, cfg),
        "go": {
            "job": "{{ $labels.namespace }}/{{ $labels.training_job }}",
            "namespace": "{{ $labels.namespace }}",
            "zones": zones_snippet(r.zone_pods, "zone"),
            "places": zones_snippet(place, "domain" if rules.domain else "zone"),
        },
    }


def _allowlist(cluster: PlannedCluster) -> str:
    pods: set[str] = set()
    nodes: set[str] = set()
    for plan in cluster.plans:
        prof = plan.profile
        pods.update((prof.job_label, prof.role_label))
        for sel in (*prof.coordinator, *prof.worker):
            pods.update(sel.keys())
        nodes.update((plan.zone_label, plan.topology_key))
    parts = [
        f"{kind}=[{','.join(sorted(keys))}]"
        for kind, keys in (("nodes", nodes), ("pods", pods))
        if keys
    ]
    return ",".join(parts)


# --- dashboard -----------------------------------------------------------------


def _dashboard_uid(cluster: str) -> str:
    uid = f"topogen-{cluster}"
    if len(uid) <= 40:
        return uid
    import hashlib  # only for a long cluster name (OpenSSL takes milliseconds to load)

    digest = hashlib.sha256(cluster.encode()).hexdigest()[:8]
    return f"{uid[:31]}-{digest}"


def _dashboard(cluster: PlannedCluster, cfg: MonitoringConfig) -> str:
    r = Records(cfg.rate_window)
    sel = 'topogen_group=~"$group", training_job=~"$training_job"'
    by = f"sum by ({_BY_GROUP}, pod)"
    q: dict[str, str | None] = {
        "pods": f"{r.pod_zone}{{{sel}}}",
        "pod_gpu": f"{by} ({r.pod_gpu}{{{sel}}})",
        "pod_drops": f"{by} ({r.pod_drops}{{{sel}}})",
        "gpu": f"{r.gpu}{{{sel}}}",
        "progress": f"{r.progress}{{{sel}}}" if cfg.progress_metric else None,
        "phases": f"{r.pods_by_phase}{{{sel}}}",
        "zones": f"{r.zones}{{{sel}}}",
        "drops": f"{r.drops}{{{sel}}}",
        "alerts": 'ALERTS{alertname=~"TopogenGroup.*", alertstate="firing", '
        'topogen_group=~"$group"}',
        "group_values": f"label_values({r.pod}, topogen_group)",
        "job_values": f'label_values({r.pod}{{topogen_group=~"$group"}}, training_job)',
    }
    flows = bool(cfg.metrics.flows)
    q |= {
        "pod_peers": f"{r.pod_peer_flows}{{{sel}}}" if flows else None,
        "cross_zone": f"{r.cross_zone}{{{sel}}}" if flows else None,
        "zone_flows": f"{r.zone_flows}{{{sel}}}" if flows else None,
    }
    text = render_text(
        "monitoring/dashboard.json.j2",
        cluster=cluster.cluster,
        uid=_dashboard_uid(cluster.cluster),
        q=q,
        schema_version=DASHBOARD_SCHEMA_VERSION,
    )
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InternalError(
            f"template monitoring/dashboard.json.j2 rendered invalid JSON: {exc}"
        ) from None
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# --- entry point -----------------------------------------------------------------


def render_monitoring(cluster: PlannedCluster, cfg: TopogenConfig) -> list[RenderedFile]:
    """Rule files and dashboard for one cluster; [] when monitoring is disabled."""
    mon = cfg.monitoring
    if not mon.enabled:
        return []
    base = f"monitoring/{cluster.cluster}"
    values: dict[str, Any] = {
        "cluster": cluster.cluster,
        "mon": mon,
        "metrics": mon.metrics,
        "allowlist": _allowlist(cluster),
        "groups": [_group_values(p, cluster.cluster, mon) for p in cluster.plans],
    }
    rules_text = render_text("monitoring/rules.yaml.j2", **values)
    try:
        parsed = yaml.load(rules_text, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise InternalError(
            f"template monitoring/rules.yaml.j2 rendered invalid YAML: {exc}"
        ) from None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("groups"), list):
        raise InternalError("template monitoring/rules.yaml.j2 rendered no rule groups")
    common = {MANAGED_BY[0]: MANAGED_BY[1], CLUSTER_LABEL: cluster.cluster}
    rule_text, rule_objs = render_documents(
        "monitoring/prometheusrule.yaml.j2",
        name=f"topogen-{cluster.cluster}",
        namespace=mon.namespace,
        labels={**common, **mon.rule_labels},
        spec={"groups": parsed["groups"]},
        allowlist=values["allowlist"],
    )
    dashboard = _dashboard(cluster, mon)
    cm_text, cm_objs = render_documents(
        "monitoring/dashboard-configmap.yaml.j2",
        name=f"topogen-{cluster.cluster}-dashboard",
        namespace=mon.namespace,
        labels={**common, "grafana_dashboard": "1"},
        data={f"topogen-{cluster.cluster}.json": dashboard},
    )
    return [
        RenderedFile(f"{base}/dashboard-configmap.yaml", cm_text, cm_objs),
        RenderedFile(f"{base}/dashboard.json", dashboard, header=False),
        RenderedFile(f"{base}/prometheusrule.yaml", rule_text, rule_objs),
        RenderedFile(f"{base}/rules.yaml", rules_text),
    ]
