"""Config: the records of topogen.yaml, one per pydantic model of models.py (same name,
fields, aliases and defaults: tests/core/test_config_records.py holds them equal), with
the checks the fast reader applies to each value and the methods commands call."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from topogen.cilium.labelfilter import LabelPrefixError, parse_prefix
from topogen.config.base import Key, Record
from topogen.config.checks import (
    BOOL,
    Unsure,
    either,
    integer,
    listof,
    literal,
    mapping,
    number,
    optional,
    text,
)
from topogen.config.rules import (
    DEFAULT_RUNBOOK_URL,
    DROP_REASON_PATTERN,
    DURATION_PATTERN,
    ENGINES,
    METRIC_PATTERN,
    PATH_PATTERN,
    QUANTITY_PATTERN,
    URL_PATTERN,
    VERSION_PATTERN,
    Engine,
    parse_port,
)
from topogen.errors import InputError
from topogen.model import CiliumSettings
from topogen.names import (
    DNS_LABEL_PATTERN,
    LABEL_KEY_PATTERN,
    LABEL_VALUE_PATTERN,
    label_key_problem,
)
from topogen.operators.registry import PROFILES, operator

__all__ = [
    "AutoscalingConfig",
    "CiliumConfig",
    "ClusterConfig",
    "GatekeeperConfig",
    "GroupConfig",
    "InstanceTypeConfig",
    "KyvernoConfig",
    "MonitoringConfig",
    "MonitoringMetrics",
    "NodeGroupConfig",
    "TaintConfig",
    "TopogenConfig",
]

# the field types of fields.py and models.py
NAME = text(DNS_LABEL_PATTERN, max_length=63)
INPUT_PATH = text(PATH_PATTERN, min_length=1, max_length=4096, any_text=True)
LABEL_KEY = text(LABEL_KEY_PATTERN, max_length=317, problem=label_key_problem)
LABEL_VALUE = text(LABEL_VALUE_PATTERN, max_length=63)
QUANTITY = either(integer(ge=0), text(QUANTITY_PATTERN))
METRIC = text(METRIC_PATTERN, max_length=200)
DURATION = text(DURATION_PATTERN)
LABELS = mapping(LABEL_KEY, LABEL_VALUE)

_CILIUM = CiliumSettings()  # the defaults: Cilium's


class InstanceTypeConfig(Record):
    name: str
    zones: list[str]
    capacity_types: list[str]
    resources: dict[str, int | str]
    allocatable: dict[str, int | str] | None
    labels: dict[str, str]
    node_classes: list[str]
    KEYS = (
        Key("name", LABEL_VALUE),
        Key("zones", listof(LABEL_VALUE, min_length=1)),
        Key(
            "capacity_types",
            listof(LABEL_VALUE, min_length=1),
            alias="capacityTypes",
            factory=lambda: ["on-demand"],
        ),
        Key("resources", mapping(LABEL_KEY, QUANTITY, min_length=1)),
        Key("allocatable", optional(mapping(LABEL_KEY, QUANTITY)), None),
        Key("labels", LABELS, factory=dict),
        Key("node_classes", listof(NAME), alias="nodeClasses", factory=list),
    )


class TaintConfig(Record):
    key: str
    value: str
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    KEYS = (
        Key("key", LABEL_KEY),
        Key("value", LABEL_VALUE, ""),
        Key("effect", literal("NoSchedule", "PreferNoSchedule", "NoExecute")),
    )


class NodeGroupConfig(Record):
    name: str
    min_size: int
    max_size: int
    labels: dict[str, str]
    taints: list[TaintConfig]
    allocatable: dict[str, int | str]
    KEYS = (
        Key("name", NAME),
        Key("min_size", integer(ge=0), 0, alias="minSize"),
        Key("max_size", integer(ge=0), alias="maxSize"),
        Key("labels", LABELS, factory=dict),
        Key("taints", listof(TaintConfig.read), factory=list),
        Key("allocatable", mapping(LABEL_KEY, QUANTITY, min_length=1)),
    )


class AutoscalingConfig(Record):
    instance_types: list[InstanceTypeConfig]
    instance_type_files: list[str]
    node_groups: list[NodeGroupConfig]
    KEYS = (
        Key(
            "instance_types",
            listof(InstanceTypeConfig.read),
            alias="instanceTypes",
            factory=list,
        ),
        Key("instance_type_files", listof(INPUT_PATH), alias="instanceTypeFiles", factory=list),
        Key("node_groups", listof(NodeGroupConfig.read), alias="nodeGroups", factory=list),
    )


class CiliumConfig(Record):
    identity_labels: list[str]
    host_firewall: bool
    policy_enforcement: Literal["default", "always", "never"]
    cluster_name: str
    node_selector_labels: bool
    KEYS = (
        Key(
            "identity_labels",
            listof(text(min_length=1, any_text=True)),
            alias="identityLabels",
            factory=lambda: list(_CILIUM.identity_labels),
        ),
        Key("host_firewall", BOOL, _CILIUM.host_firewall, alias="hostFirewall"),
        Key(
            "policy_enforcement",
            literal("default", "always", "never"),
            _CILIUM.policy_enforcement,
            alias="policyEnforcement",
        ),
        Key("cluster_name", NAME, _CILIUM.cluster_name, alias="clusterName"),
        Key("node_selector_labels", BOOL, _CILIUM.node_selector_labels, alias="nodeSelectorLabels"),
    )

    def check(self) -> None:
        for entry in self.identity_labels:
            try:
                parse_prefix(entry)
            except LabelPrefixError:
                raise Unsure from None

    def settings(self, cluster: Mapping[str, Any] | None = None) -> CiliumSettings:
        """The model's CiliumSettings: Cilium's defaults, then what the cluster's
        cilium-config sets (`cluster`: CiliumSettings fields), then the keys set here."""
        values: dict[str, Any] = dict(cluster or {})
        for f in dataclasses.fields(CiliumSettings):
            if f.name in self.model_fields_set:
                value = getattr(self, f.name)
                values[f.name] = tuple(value) if isinstance(value, list) else value
        return dataclasses.replace(_CILIUM, **values)


class ClusterConfig(Record):
    name: str
    nodes: list[str]
    network_policies: list[str]
    namespaces: list[str]
    zone_label: str
    domain_label: str | None
    gpu_resources: list[str]
    gpu_node_selector: dict[str, str]
    kubernetes_version: str
    engines: list[Engine] | None
    validation_action: Literal["Audit", "Enforce"] | None
    cilium: CiliumConfig
    autoscaling: AutoscalingConfig
    KEYS = (
        Key("name", NAME),
        Key("nodes", listof(INPUT_PATH, min_length=1)),
        Key("network_policies", listof(INPUT_PATH), alias="networkPolicies", factory=list),
        Key("namespaces", listof(INPUT_PATH), factory=list),
        Key("zone_label", LABEL_KEY, "topology.kubernetes.io/zone", alias="zoneLabel"),
        Key("domain_label", optional(LABEL_KEY), None, alias="domainLabel"),
        Key(
            "gpu_resources",
            listof(LABEL_KEY),
            alias="gpuResources",
            factory=lambda: ["nvidia.com/gpu", "amd.com/gpu"],
        ),
        Key("gpu_node_selector", LABELS, alias="gpuNodeSelector", factory=dict),
        Key("kubernetes_version", text(VERSION_PATTERN), "1.36", alias="kubernetesVersion"),
        Key("engines", optional(listof(literal(*ENGINES))), None),
        Key(
            "validation_action",
            optional(literal("Audit", "Enforce")),
            None,
            alias="validationAction",
        ),
        Key("cilium", CiliumConfig.read, factory=lambda: CiliumConfig.read({})),
        Key("autoscaling", AutoscalingConfig.read, factory=lambda: AutoscalingConfig.read({})),
    )


class GroupConfig(Record):
    name: str
    profile: str
    namespaces: list[str]
    group_label: str | None
    role_label: str | None
    coordinator_roles: list[str] | None
    worker_roles: list[str] | None
    identity_label: str | None
    ports: list[int | str] | None
    colocate: Literal["zone", "domain"]
    placement: Literal["spread", "pin"]
    prefer_zones: list[str]
    clusters: list[str] | None
    allow_empty: bool
    KEYS = (
        Key("name", NAME),
        Key("profile", text(any_text=True)),
        Key("namespaces", listof(NAME, min_length=1)),
        Key("group_label", optional(LABEL_KEY), None, alias="groupLabel"),
        Key("role_label", optional(LABEL_KEY), None, alias="roleLabel"),
        Key("coordinator_roles", optional(listof(LABEL_VALUE)), None, alias="coordinatorRoles"),
        Key("worker_roles", optional(listof(LABEL_VALUE)), None, alias="workerRoles"),
        Key("identity_label", optional(LABEL_KEY), None, alias="identityLabel"),
        Key("ports", optional(listof(either(integer(), text(any_text=True)))), None),
        Key("colocate", literal("zone", "domain"), "zone"),
        Key("placement", literal("spread", "pin"), "spread"),
        Key("prefer_zones", listof(LABEL_VALUE), alias="preferZones", factory=list),
        Key("clusters", optional(listof(NAME)), None),
        Key("allow_empty", BOOL, False, alias="allowEmpty"),
    )

    def check(self) -> None:
        if self.profile not in PROFILES:
            raise Unsure
        try:
            self.port_ranges()
        except ValueError:
            raise Unsure from None
        by_key = {k.key: k.name for k in self.KEYS}
        if any(not getattr(self, by_key[k]) for k in operator(self.profile).required):
            raise Unsure

    def port_ranges(self) -> dict[str, list[tuple[int, int]]] | None:
        """protocol -> (low, high) of each port of `ports`, in order; None: not given."""
        if not self.ports:
            return None
        out: dict[str, list[tuple[int, int]]] = {}
        for p in self.ports:
            protocol, lo, hi = parse_port(p)
            out.setdefault(protocol, []).append((lo, hi))
        return out


class MonitoringMetrics(Record):
    pod_labels: str
    pod_info: str
    pod_phase: str
    node_labels: str
    gpu_utilisation: str
    policy_drops: str
    flows: str | None
    KEYS = (
        Key("pod_labels", METRIC, "kube_pod_labels", alias="podLabels"),
        Key("pod_info", METRIC, "kube_pod_info", alias="podInfo"),
        Key("pod_phase", METRIC, "kube_pod_status_phase", alias="podPhase"),
        Key("node_labels", METRIC, "kube_node_labels", alias="nodeLabels"),
        Key("gpu_utilisation", METRIC, "DCGM_FI_DEV_GPU_UTIL", alias="gpuUtilisation"),
        Key("policy_drops", METRIC, "hubble_drop_total", alias="policyDrops"),
        Key("flows", optional(METRIC), "hubble_flows_processed_total"),
    )


class MonitoringConfig(Record):
    enabled: bool
    idle_gpu_utilisation: float
    idle_for: str
    pending_for: str
    split_for: str
    drops_for: str
    rate_window: str
    progress_metric: str | None
    policy_drops_per_second: float
    policy_drop_reasons: list[str]
    namespace: str
    rule_labels: dict[str, str]
    runbook_url: str
    metrics: MonitoringMetrics
    KEYS = (
        Key("enabled", BOOL, True),
        Key(
            "idle_gpu_utilisation",
            number(ge=0, le=100),
            10.0,
            alias="idleGpuUtilisationPercent",
        ),
        Key("idle_for", DURATION, "15m", alias="idleFor"),
        Key("pending_for", DURATION, "10m", alias="pendingFor"),
        Key("split_for", DURATION, "5m", alias="splitFor"),
        Key("drops_for", DURATION, "2m", alias="dropsFor"),
        Key("rate_window", DURATION, "5m", alias="rateWindow"),
        Key("progress_metric", optional(METRIC), "training_step_total", alias="progressMetric"),
        Key("policy_drops_per_second", number(ge=0), 0.0, alias="policyDropsPerSecond"),
        Key(
            "policy_drop_reasons",
            listof(text(DROP_REASON_PATTERN), min_length=1),
            alias="policyDropReasons",
            factory=lambda: ["POLICY_DENIED", "POLICY_DENY"],
        ),
        Key("namespace", NAME, "monitoring"),
        Key("rule_labels", LABELS, alias="ruleLabels", factory=dict),
        Key(
            "runbook_url",
            text(URL_PATTERN, max_length=2000),
            DEFAULT_RUNBOOK_URL,
            alias="runbookUrl",
        ),
        Key("metrics", MonitoringMetrics.read, factory=lambda: MonitoringMetrics.read({})),
    )


class GatekeeperConfig(Record):
    failure_policy: Literal["Ignore", "Fail"]
    audit_at_admission: bool
    KEYS = (
        Key("failure_policy", literal("Ignore", "Fail"), "Ignore", alias="failurePolicy"),
        Key("audit_at_admission", BOOL, False, alias="auditAtAdmission"),
    )


class KyvernoConfig(Record):
    generate_validating_admission_policy: bool
    audit_at_admission: bool
    KEYS = (
        Key(
            "generate_validating_admission_policy",
            BOOL,
            True,
            alias="generateValidatingAdmissionPolicy",
        ),
        Key("audit_at_admission", BOOL, False, alias="auditAtAdmission"),
    )


class TopogenConfig(Record):
    api_version: Literal["topogen.io/v1alpha1"]
    kind: Literal["TopogenConfig"]
    clusters: list[ClusterConfig]
    workloads: list[str]
    groups: list[GroupConfig]
    engines: list[Engine]
    validation_action: Literal["Audit", "Enforce"]
    default_namespace: str
    monitoring: MonitoringConfig
    gatekeeper: GatekeeperConfig
    kyverno: KyvernoConfig
    base_dir: Path
    path: str
    root: Path | None
    KEYS = (
        Key("api_version", literal("topogen.io/v1alpha1"), alias="apiVersion"),
        Key("kind", literal("TopogenConfig")),
        Key("clusters", listof(ClusterConfig.read, min_length=1)),
        Key("workloads", listof(INPUT_PATH), factory=list),
        Key("groups", listof(GroupConfig.read, min_length=1)),
        Key("engines", listof(literal(*ENGINES)), factory=lambda: ["kyverno"]),
        Key(
            "validation_action",
            literal("Audit", "Enforce"),
            "Audit",
            alias="validationAction",
        ),
        Key("default_namespace", NAME, "default", alias="defaultNamespace"),
        Key("monitoring", MonitoringConfig.read, factory=lambda: MonitoringConfig.read({})),
        Key("gatekeeper", GatekeeperConfig.read, factory=lambda: GatekeeperConfig.read({})),
        Key("kyverno", KyvernoConfig.read, factory=lambda: KyvernoConfig.read({})),
        # set by load_config, not read from the file
        Key("base_dir", None, Path(".")),
        Key("path", None, "topogen.yaml"),
        Key("root", None, None),
    )
    EXCLUDED = frozenset({"base_dir", "path", "root"})

    def check(self) -> None:
        for names in ([c.name for c in self.clusters], [g.name for g in self.groups]):
            if len(set(names)) != len(names):
                raise Unsure
        known = {c.name for c in self.clusters}
        if any(c not in known for g in self.groups for c in g.clusters or ()):
            raise Unsure

    def cluster(self, name: str) -> ClusterConfig:
        for c in self.clusters:
            if c.name == name:
                return c
        names = ", ".join(c.name for c in self.clusters)
        raise InputError(f"no cluster named {name!r} (have: {names})", path=self.path)

    def groups_for(self, cluster: str) -> list[GroupConfig]:
        return [g for g in self.groups if g.clusters is None or cluster in g.clusters]

    def engines_for(self, cluster: ClusterConfig) -> list[Engine]:
        return list(cluster.engines or self.engines)

    def validation_action_for(self, cluster: ClusterConfig) -> str:
        return cluster.validation_action or self.validation_action

    def audit_at_admission_for(self, engine: str) -> bool:
        """Whether an engine's Audit is judged on its admission webhook: its own key
        (gatekeeper.auditAtAdmission; kyverno.auditAtAdmission for the others)."""
        if engine == "gatekeeper":
            return self.gatekeeper.audit_at_admission
        return self.kyverno.audit_at_admission
