"""PromQL for the monitoring backend: escaping, record names, one config group's rules.

Recording rules select each config group's pods by the profile's job/role labels and
its namespaces (kube-state-metrics), place them in zones (kube_pod_info joined to
kube_node_labels) and add GPU utilisation (DCGM exporter), training progress (a
configurable counter), policy-denied drops and peer flows (Hubble). Every recorded
series carries topogen_group, namespace and training_job (the job label's value).

Every value embedded in PromQL goes through `promql_string` (and `regex_quote` inside
regex matchers); static text embedded in alert annotations and alert labels (Go
templates) goes through `go_text`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from topogen.config import MonitoringConfig
from topogen.model import LabelSelector
from topogen.plan.group_plan import GroupPlan

__all__ = [
    "GROUP_LABELS",
    "GroupRules",
    "Records",
    "go_text",
    "ksm_label",
    "promql_string",
    "regex_quote",
    "zones_snippet",
]

GROUP_LABELS = ("topogen_group", "namespace", "training_job")
_BY_GROUP = ", ".join(GROUP_LABELS)
_ACTIVE_PHASES = ("Pending", "Running", "Unknown")


# --- escaping ---------------------------------------------------------------


def promql_string(value: str) -> str:
    """A single-quoted PromQL string literal (Go escapes: backslash, quote, controls)."""
    out = []
    for ch in value:
        if ch in ("\\", "'"):
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "'" + "".join(out) + "'"


_REGEX_META = re.compile(r"([\\.+*?()|\[\]{}^$])")


def regex_quote(value: str) -> str:
    """Go's regexp.QuoteMeta: the value matches itself literally in an RE2 matcher."""
    return _REGEX_META.sub(r"\\\1", value)


def ksm_label(key: str) -> str:
    """The label kube-state-metrics exposes for a Kubernetes label key (label_<sanitised>)."""
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", key)


def go_text(text: str) -> str:
    """Static text inside an alert annotation: neutralise Go template delimiters."""
    return text.replace("{{", '{{ "{{" }}')


def _eq(label: str, value: str) -> str:
    return f"{label}={promql_string(value)}"


def _in(label: str, values: Iterable[str], negate: bool = False) -> list[str]:
    vals = sorted(set(values))
    if not vals:  # `In ()` selects nothing, `NotIn ()` everything
        return [] if negate else [f"{label}=''", f"{label}!=''"]
    if len(vals) == 1:
        return [f"{label}{'!=' if negate else '='}{promql_string(vals[0])}"]
    alt = "|".join(regex_quote(v) for v in vals)
    return [f"{label}{'!~' if negate else '=~'}{promql_string(alt)}"]


def _sel(metric: str, matchers: Sequence[str]) -> str:
    return f"{metric}{{{', '.join(matchers)}}}" if matchers else metric


def _relabel(expr: str, dst: str, src: str) -> str:
    return f"label_replace({expr}, '{dst}', '$1', '{src}', '(.*)')"


def zones_snippet(record: str, label: str = "zone") -> str:
    """Go template listing the zones (values of `label`) of the alert's job, or `none`."""
    query = f"{record}{{topogen_group=%q,namespace=%q,training_job=%q}}"
    return (
        f"{{{{ with printf `{query}` $labels.topogen_group $labels.namespace "
        f"$labels.training_job | query | sortByLabel `{label}` }}}}"
        f"{{{{ range $i, $s := . }}}}{{{{ if $i }}}}, {{{{ end }}}}"
        f"{{{{ $s.Labels.{label} }}}}{{{{ end }}}}{{{{ else }}}}none{{{{ end }}}}"
    )


# --- record names ------------------------------------------------------------


@dataclass(frozen=True)
class Records:
    """Names of the recorded series (rate windows are part of the name)."""

    window: str

    pod = "topogen:group_pod:info"
    pod_zone = "topogen:group_pod_zone:info"
    pods_by_phase = "topogen:group_pods_by_phase:count"
    running_ratio = "topogen:group_pods_running:ratio"
    zone_pods = "topogen:group_zone_pods:count"
    zones = "topogen:group_zones_occupied:count"
    domain_pods = "topogen:group_domain_pods:count"
    domains = "topogen:group_domains_occupied:count"
    pod_gpu = "topogen:group_pod_gpu_utilisation:avg"
    gpu = "topogen:group_gpu_utilisation:avg"

    @property
    def progress(self) -> str:
        return f"topogen:group_progress:rate{self.window}"

    @property
    def pod_drops(self) -> str:
        return f"topogen:group_pod_policy_drops:rate{self.window}"

    @property
    def drops(self) -> str:
        return f"topogen:group_policy_drops:rate{self.window}"

    @property
    def peer_flows(self) -> str:
        return f"topogen:group_peer_flows:rate{self.window}"

    @property
    def pod_peer_flows(self) -> str:
        return f"topogen:group_pod_peer_flows:rate{self.window}"

    @property
    def zone_flows(self) -> str:
        return f"topogen:group_zone_flows:rate{self.window}"

    @property
    def cross_zone(self) -> str:
        return f"topogen:group_cross_zone_flows:rate{self.window}"


# --- one config group's rules ------------------------------------------------


def _selector_matchers(sel: LabelSelector) -> list[str]:
    out = [_eq(ksm_label(k), v) for k, v in sel.match_labels]
    for req in sel.match_expressions:
        label = ksm_label(req.key)
        if req.operator in ("In", "NotIn"):
            out.extend(_in(label, req.values, negate=req.operator == "NotIn"))
        elif req.operator == "Exists":
            out.append(f"{label}!=''")
        elif req.operator == "DoesNotExist":
            out.append(f"{label}=''")
        else:  # unknown operators select nothing (model.LabelSelector.matches)
            out.extend([f"{label}=''", f"{label}!=''"])
    return out


def _role_alternatives(plan: GroupPlan) -> tuple[list[list[str]], list[list[str]]]:
    """PromQL matcher sets (ORed) for the coordinator and for the workers."""
    prof = plan.profile
    return (
        [_selector_matchers(s) for s in prof.coordinator],
        [_selector_matchers(s) for s in prof.worker],
    )


class GroupRules:
    """PromQL for one config group (one Prometheus rule group)."""

    def __init__(self, plan: GroupPlan, mon: MonitoringConfig) -> None:
        self.plan, self.mon, self.m = plan, mon, mon.metrics
        self.r = Records(mon.rate_window)
        self.g = _eq("topogen_group", plan.group.name)
        self.ns = _in("namespace", plan.group.namespaces)
        self.job = ksm_label(plan.profile.job_label)
        self.zone = ksm_label(plan.zone_label)
        self.domain = ksm_label(plan.topology_key) if plan.topology_key != plan.zone_label else None

    def rec(self, name: str, matchers: Sequence[str] = ()) -> str:
        return _sel(name, [self.g, *matchers])

    def _pods(self, alternatives: list[list[str]]) -> str:
        parts = [
            "max by (namespace, pod, training_job) ("
            + _relabel(
                _sel(self.m.pod_labels, [*self.ns, f"{self.job}!=''", *alt]),
                "training_job",
                self.job,
            )
            + ")"
            for alt in alternatives
        ]
        return parts[0] if len(parts) == 1 else "(" + " or ".join(parts) + ")"

    def pod_roles(self) -> tuple[str, str]:
        coord, work = _role_alternatives(self.plan)
        c = self._pods(coord)
        return c, f"{self._pods(work)} unless on (namespace, pod) {c}"

    def pod_zone(self) -> str:
        keys = [(self.zone, "zone")] + ([(self.domain, "domain")] if self.domain else [])
        nodes = _sel(self.m.node_labels, [f"{k}!=''" for k, _ in keys])
        for key, name in keys:
            nodes = _relabel(nodes, name, key)
        names = ", ".join(n for _, n in keys)
        pods = _sel(self.m.pod_info, [*self.ns, "node!=''"])
        return (
            f"max by (namespace, pod, node) ({pods})"
            f" * on (namespace, pod) group_left (topogen_group, training_job, role) "
            f"{self.rec(self.r.pod)}"
            f" * on (node) group_left ({names}) max by (node, {names}) ({nodes})"
        )

    def pods_by_phase(self) -> str:
        phase = _sel(self.m.pod_phase, self.ns)
        return (
            f"count by ({_BY_GROUP}, phase) (max by (namespace, pod, phase) ({phase} == 1)"
            f" * on (namespace, pod) group_left (topogen_group, training_job) "
            f"{self.rec(self.r.pod)})"
        )

    def running_ratio(self) -> str:
        running = self.rec(self.r.pods_by_phase, [_eq("phase", "Running")])
        active = self.rec(self.r.pods_by_phase, _in("phase", _ACTIVE_PHASES))
        return f"sum by ({_BY_GROUP}) ({running}) / sum by ({_BY_GROUP}) ({active})"

    def place_pods(self, label: str) -> str:
        active = _sel(self.m.pod_phase, [*self.ns, *_in("phase", ("Pending", "Running"))])
        return (
            f"count by ({_BY_GROUP}, {label}) ({self.rec(self.r.pod_zone)}"
            f" and on (namespace, pod) ({active} == 1))"
        )

    def occupied(self, record: str) -> str:
        return f"count by ({_BY_GROUP}) ({self.rec(record)})"

    def pod_gpu(self) -> str:
        gpu = _sel(self.m.gpu_utilisation, self.ns)
        return (
            f"avg by (namespace, pod) ({gpu}) * on (namespace, pod) group_left "
            f"(topogen_group, training_job, role) {self.rec(self.r.pod)}"
        )

    def progress(self) -> str:
        assert self.mon.progress_metric
        rate = f"rate({_sel(self.mon.progress_metric, self.ns)}[{self.mon.rate_window}])"
        return (
            f"sum by ({_BY_GROUP}) (sum by (namespace, pod) ({rate})"
            f" * on (namespace, pod) group_left (topogen_group, training_job) "
            f"{self.rec(self.r.pod)}) or on ({_BY_GROUP}) "
            f"0 * count by ({_BY_GROUP}) ({self.rec(self.r.pod)})"
        )

    def pod_drops(self, side: str) -> str:
        sel = _sel(
            self.m.policy_drops,
            [
                *_in("reason", self.mon.policy_drop_reasons),
                *_in(f"{side}_namespace", self.plan.group.namespaces),
            ],
        )
        moved = _relabel(
            _relabel(f"rate({sel}[{self.mon.rate_window}])", "namespace", f"{side}_namespace"),
            "pod",
            f"{side}_pod",
        )
        return (
            f"sum by (namespace, pod) ({moved}) * on (namespace, pod) group_left "
            f"(topogen_group, training_job, role) {self.rec(self.r.pod)}"
        )

    def peer_flows(self) -> str:
        assert self.m.flows
        ns = self.plan.group.namespaces
        sel = _sel(
            self.m.flows,
            [
                _eq("verdict", "FORWARDED"),
                *_in("source_namespace", ns),
                *_in("destination_namespace", ns),
            ],
        )
        ends = "source_namespace, source_pod, destination_namespace, destination_pod"
        flows = f"sum by ({ends}) (rate({sel}[{self.mon.rate_window}]))"
        src = _relabel(_relabel(flows, "namespace", "source_namespace"), "pod", "source_pod")
        src += (
            " * on (namespace, pod) group_left (topogen_group, training_job, source_zone) "
            + _relabel(self.rec(self.r.pod_zone), "source_zone", "zone")
        )
        dst = _relabel(
            _relabel(src, "namespace", "destination_namespace"), "pod", "destination_pod"
        )
        dst += f" * on ({_BY_GROUP}, pod) group_left (destination_zone) " + _relabel(
            self.rec(self.r.pod_zone), "destination_zone", "zone"
        )
        return (
            f"sum by ({_BY_GROUP}, source_pod, destination_pod, source_zone, "
            f"destination_zone) ({dst})"
        )

    def cross_zone(self) -> str:
        pairs = self.rec(self.r.zone_flows)
        same = _relabel(
            f"group by ({_BY_GROUP}, destination_zone) ({pairs})", "source_zone", "destination_zone"
        )
        return (
            f"sum by ({_BY_GROUP}) ({pairs} unless on ({_BY_GROUP}, source_zone, "
            f"destination_zone) {same})"
        )

    def records(self) -> list[dict[str, Any]]:
        """Recording rules, each labelled with its group (unique across rule groups)."""
        r = self.r
        coord, work = self.pod_roles()
        out: list[dict[str, Any]] = [
            _rule(r.pod, coord, role="coordinator"),
            _rule(r.pod, work, role="worker"),
            _rule(r.pod_zone, self.pod_zone()),
            _rule(r.pods_by_phase, self.pods_by_phase()),
            _rule(r.running_ratio, self.running_ratio()),
            _rule(r.zone_pods, self.place_pods("zone")),
            _rule(r.zones, self.occupied(r.zone_pods)),
        ]
        if self.domain:
            out += [
                _rule(r.domain_pods, self.place_pods("domain")),
                _rule(r.domains, self.occupied(r.domain_pods)),
            ]
        out += [
            _rule(r.pod_gpu, self.pod_gpu()),
            _rule(r.gpu, f"avg by ({_BY_GROUP}) ({self.rec(r.pod_gpu)})"),
        ]
        if self.mon.progress_metric:
            out.append(_rule(r.progress, self.progress()))
        out += [
            _rule(r.pod_drops, self.pod_drops(side), side=side)
            for side in ("destination", "source")
        ]
        out.append(_rule(r.drops, f"sum by ({_BY_GROUP}) ({self.rec(r.pod_drops)})"))
        if self.m.flows:
            to_pod = _relabel(self.rec(r.peer_flows), "pod", "source_pod")
            out += [
                _rule(r.peer_flows, self.peer_flows()),
                _rule(r.pod_peer_flows, f"sum by ({_BY_GROUP}, pod) ({to_pod})"),
                _rule(
                    r.zone_flows,
                    f"sum by ({_BY_GROUP}, source_zone, destination_zone)"
                    f" ({self.rec(r.peer_flows)})",
                ),
                _rule(r.cross_zone, self.cross_zone()),
            ]
        return [
            {**rule, "labels": {**rule["labels"], "topogen_group": self.plan.group.name}}
            for rule in out
        ]

    def alerts(self) -> dict[str, str]:
        r, by = self.r, f"on ({_BY_GROUP})"
        idle = (
            f"{self.rec(r.running_ratio)} == 1 and {by} {self.rec(r.gpu)} < "
            f"{_num(self.mon.idle_gpu_utilisation)}"
        )
        if self.mon.progress_metric:
            idle += f" and {by} {self.rec(r.progress)} <= 0"
        pending = self.rec(r.pods_by_phase, [_eq("phase", "Pending")])
        return {
            "idle": idle,
            "split": f"{self.rec(r.domains if self.domain else r.zones)} > 1",
            "drops": f"{self.rec(r.drops)} > {_num(self.mon.policy_drops_per_second)}",
            "pending": f"sum by ({_BY_GROUP}) ({pending}) > 0",
        }


def _rule(record: str, expr: str, **labels: str) -> dict[str, Any]:
    return {"record": record, "expr": expr, "labels": labels}


def _num(value: float) -> str:
    return repr(float(value))
