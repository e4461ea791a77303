"""Config: topogen.yaml as pydantic models, the schema of its keys. They publish the JSON
schema (init/schema.py) and the reference (docs/gen_reference.py), and word every error of
a config the fast reader (records.py) cannot vouch for; commands run on records.py's
records, so a config that reads cleanly never imports pydantic."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from topogen.autoscaling import (
    AutoscalingConfig,
    InstanceTypeConfig,
    NodeGroupConfig,
    TaintConfig,
)
from topogen.cilium.labelfilter import LabelPrefixError, parse_prefix
from topogen.config.rules import (
    DEFAULT_RUNBOOK_URL,
    DROP_REASON_PATTERN,
    DURATION_PATTERN,
    METRIC_PATTERN,
    URL_PATTERN,
    VERSION_PATTERN,
    parse_port,
)
from topogen.config.rules import Engine as _Engine
from topogen.fields import PATTERN_WORDS, InputPath, LabelKey, LabelValue, Name, Strict
from topogen.model import CiliumSettings
from topogen.operators.registry import PROFILES, operator

__all__ = [
    "PATTERN_WORDS_ALL",
    "AutoscalingConfig",
    "CiliumConfig",
    "ClusterConfig",
    "Engine",
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

Engine = _Engine

_CILIUM = CiliumSettings()  # the defaults: Cilium's


class CiliumConfig(Strict):
    """`clusters[].cilium`: the cilium-agent options that change verdicts, as the model's
    CiliumSettings has them (its docstring says what each means). Each key set here
    overrides what the cluster's cilium-config ConfigMap says (sources/cilium_config.py),
    which overrides Cilium's defaults. identityLabels is the agent's `labels` option,
    verbatim."""

    # the agent's `labels` option (Helm `labels`, `--labels`), verbatim: [source:]regexp
    # prefixes, `!` after the source excludes (default: Cilium's own label filter)
    identity_labels: list[LabelFilter] = Field(
        default_factory=lambda: list(_CILIUM.identity_labels), alias="identityLabels"
    )
    # enable-host-firewall: host (nodeSelector) policies apply
    host_firewall: bool = Field(_CILIUM.host_firewall, alias="hostFirewall")
    # enable-policy
    policy_enforcement: Literal["default", "always", "never"] = Field(
        _CILIUM.policy_enforcement,  # type: ignore[arg-type]
        alias="policyEnforcement",
    )
    # cluster-name (io.cilium.k8s.policy.cluster, the cluster entity)
    cluster_name: Name = Field(_CILIUM.cluster_name, alias="clusterName")
    # enable-node-selector-labels: fromNodes/toNodes accepted
    node_selector_labels: bool = Field(_CILIUM.node_selector_labels, alias="nodeSelectorLabels")

    @field_validator("identity_labels")
    @classmethod
    def _valid_prefixes(cls, value: list[str]) -> list[str]:
        for entry in value:
            try:
                parse_prefix(entry)
            except LabelPrefixError as exc:
                raise ValueError(str(exc)) from None
        return value


class ClusterConfig(Strict):
    """`clusters[]`: one cluster, its inputs (files or folders, relative to topogen.yaml's
    folder) and what topogen renders for it under policies/<name>/."""

    name: Name
    # Nodes: `kubectl get nodes -o yaml`, multi-document YAML, a `topogen snapshot`
    # (NodePools and node groups too)
    nodes: list[InputPath] = Field(min_length=1)
    # CiliumNetworkPolicy, CiliumClusterwideNetworkPolicy, NetworkPolicy
    network_policies: list[InputPath] = Field(default_factory=list, alias="networkPolicies")
    namespaces: list[InputPath] = Field(default_factory=list)  # Namespace objects (labels)
    zone_label: LabelKey = Field("topology.kubernetes.io/zone", alias="zoneLabel")
    # a node label grouping zones that may talk freely (groups with `colocate: domain`)
    domain_label: LabelKey | None = Field(None, alias="domainLabel")
    gpu_resources: list[LabelKey] = Field(
        ["nvidia.com/gpu", "amd.com/gpu"], alias="gpuResources"
    )  # resource names have the syntax of label keys
    # GPU nodes that show no allocatable GPUs, by label
    gpu_node_selector: dict[LabelKey, LabelValue] = Field(
        default_factory=dict, alias="gpuNodeSelector"
    )
    # the cluster's minor version: the native engine writes MutatingAdmissionPolicy v1 from
    # 1.36 (the default), v1beta1 before; Gatekeeper needs 1.31
    kubernetes_version: KubernetesVersion = Field("1.36", alias="kubernetesVersion")
    engines: list[Engine] | None = None  # this cluster's, instead of the top level's
    # this cluster's, instead of the top level's
    validation_action: Literal["Audit", "Enforce"] | None = Field(None, alias="validationAction")
    cilium: CiliumConfig = Field(default_factory=lambda: CiliumConfig.model_validate({}))
    autoscaling: AutoscalingConfig = Field(
        default_factory=lambda: AutoscalingConfig.model_validate({})
    )


class GroupConfig(Strict):
    """`groups[]`: a training group, the jobs of one operator (`profile`) in its namespaces,
    kept each inside one domain where its traffic is allowed."""

    name: Name
    profile: str  # an operator's name (operators/registry.py)
    namespaces: list[Name] = Field(min_length=1)
    # custom: the label whose value names one job
    group_label: LabelKey | None = Field(None, alias="groupLabel")
    role_label: LabelKey | None = Field(None, alias="roleLabel")  # custom: the role's label
    coordinator_roles: list[LabelValue] | None = Field(None, alias="coordinatorRoles")
    worker_roles: list[LabelValue] | None = Field(None, alias="workerRoles")
    # the pod label the policies use as zone identity (set to the job's zone)
    identity_label: LabelKey | None = Field(None, alias="identityLabel")
    # the ports the group talks on (default: every TCP port): 29500, "29400-29500", "5353/UDP"
    ports: list[int | str] | None = None
    # zone, or domain: the cluster's domainLabel
    colocate: Literal["zone", "domain"] = "zone"
    # spread: each job inside any allowed domain (known jobs packed onto the capacity);
    # pin: every job of the group inside the one domain the plan chooses
    placement: Literal["spread", "pin"] = "spread"
    # zones the plan prefers where others would do as well (tie-breakers)
    prefer_zones: list[LabelValue] = Field(default_factory=list, alias="preferZones")
    clusters: list[Name] | None = None  # default: every cluster
    # true: the inputs may hold no job of this group (it gets no policies until they do);
    # else a group that matches no workload fails `analyze`
    allow_empty: bool = Field(False, alias="allowEmpty")

    @field_validator("profile")
    @classmethod
    def _known_profile(cls, value: str) -> str:
        if value not in PROFILES:
            names = [repr(p) for p in PROFILES]
            raise ValueError(f"{value!r} must be {', '.join(names[:-1])} or {names[-1]}")
        return value

    @field_validator("ports", mode="before")
    @classmethod
    def _valid_ports(cls, value: Any) -> Any:
        for p in value if isinstance(value, list) else ():
            parse_port(p)
        return value

    @model_validator(mode="after")
    def _required_keys(self) -> GroupConfig:
        """The keys the profile's operator needs (custom: the labels and role values)."""
        by_alias = {f.alias or name: name for name, f in type(self).model_fields.items()}
        needed = operator(self.profile).required
        missing = [k for k in needed if not getattr(self, by_alias[k])]
        if missing:
            raise ValueError(f"profile {self.profile} needs {', '.join(missing)}")
        return self


_DURATION = DURATION_PATTERN
Duration = Annotated[str, StringConstraints(pattern=_DURATION)]
_DROP_REASON = DROP_REASON_PATTERN
DropReason = Annotated[str, StringConstraints(pattern=_DROP_REASON)]
_URL = URL_PATTERN
RunbookUrl = Annotated[str, StringConstraints(pattern=_URL, max_length=2000)]
_METRIC = METRIC_PATTERN
MetricName = Annotated[str, StringConstraints(pattern=_METRIC, max_length=200)]
_VERSION = VERSION_PATTERN
# a Kubernetes minor version such as 1.36
KubernetesVersion = Annotated[str, StringConstraints(pattern=_VERSION)]
# one entry of the cilium-agent's `labels` option: [source:]regexp, `!` excludes
LabelFilter = Annotated[str, StringConstraints(min_length=1)]
# each pattern of the model in words, for its errors (configerrors.py)
PATTERN_WORDS_ALL = {
    **PATTERN_WORDS,
    _DURATION: "is not a duration such as 30s, 15m or 1h",
    _DROP_REASON: "is not a Hubble drop reason such as POLICY_DENIED",
    _URL: "is not an http(s) URL without spaces, braces or '#'",
    _METRIC: "is not a Prometheus metric name",
    _VERSION: "is not a Kubernetes minor version such as 1.36",
}


class MonitoringMetrics(Strict):
    """Exporter metric names the generated rules read (defaults: kube-state-metrics v2,
    NVIDIA DCGM exporter with Kubernetes pod mapping, Hubble with labelsContext)."""

    pod_labels: MetricName = Field("kube_pod_labels", alias="podLabels")
    pod_info: MetricName = Field("kube_pod_info", alias="podInfo")
    pod_phase: MetricName = Field("kube_pod_status_phase", alias="podPhase")
    node_labels: MetricName = Field("kube_node_labels", alias="nodeLabels")
    gpu_utilisation: MetricName = Field("DCGM_FI_DEV_GPU_UTIL", alias="gpuUtilisation")
    policy_drops: MetricName = Field("hubble_drop_total", alias="policyDrops")
    # None: no flow metrics, so no cross-zone traffic rules
    flows: MetricName | None = Field("hubble_flows_processed_total", alias="flows")


class MonitoringConfig(Strict):
    """`monitoring:` Prometheus rules and a Grafana dashboard per cluster (render/monitoring.py).

    Alerts: idle (all pods Running, GPU utilisation under idleGpuUtilisationPercent and no
    progress for idleFor), split across zones (splitFor), policy drops above
    policyDropsPerSecond (dropsFor), Pending longer than pendingFor.
    """

    enabled: bool = True  # false: no monitoring/ folder
    idle_gpu_utilisation: float = Field(10.0, alias="idleGpuUtilisationPercent", ge=0, le=100)
    idle_for: Duration = Field("15m", alias="idleFor")
    pending_for: Duration = Field("10m", alias="pendingFor")
    split_for: Duration = Field("5m", alias="splitFor")
    drops_for: Duration = Field("2m", alias="dropsFor")
    rate_window: Duration = Field("5m", alias="rateWindow")
    # None: the job exports no step/epoch counter; idle is then Running + GPUs idle
    progress_metric: MetricName | None = Field("training_step_total", alias="progressMetric")
    policy_drops_per_second: float = Field(0.0, alias="policyDropsPerSecond", ge=0)
    policy_drop_reasons: list[DropReason] = Field(
        ["POLICY_DENIED", "POLICY_DENY"], alias="policyDropReasons", min_length=1
    )
    namespace: Name = "monitoring"  # the PrometheusRule's
    # extra labels of the PrometheusRule, for your Prometheus operator's ruleSelector
    rule_labels: dict[LabelKey, LabelValue] = Field(default_factory=dict, alias="ruleLabels")
    # the page with the runbooks (each alert's runbook_url is it plus #<alert name>)
    runbook_url: RunbookUrl = Field(DEFAULT_RUNBOOK_URL, alias="runbookUrl")
    metrics: MonitoringMetrics = Field(default_factory=lambda: MonitoringMetrics.model_validate({}))


class GatekeeperConfig(Strict):
    """`gatekeeper:` the Gatekeeper install the rendered policies run on.

    failurePolicy of Gatekeeper's own webhooks (its install sets them, default Ignore: a
    Gatekeeper outage admits pods unconstrained). Fail renders
    kustomize/components/gatekeeper-fail-closed/, a Component for the kustomization that
    installs Gatekeeper.

    auditAtAdmission: under Audit, false (the default) scopes each Constraint to
    Gatekeeper's audit and gator (enforcementAction scoped, dryrun at audit.gatekeeper.sh
    and gator.gatekeeper.sh): its webhook skips it, and the violations reach the
    Constraint's status from Gatekeeper's audit, as they do with dryrun. true: dryrun, also
    judged on the webhook while the pod waits (what --log-denies and
    --emit-admission-events report at admission). Enforce always validates at admission.
    """

    failure_policy: Literal["Ignore", "Fail"] = Field("Ignore", alias="failurePolicy")
    audit_at_admission: bool = Field(False, alias="auditAtAdmission")


class KyvernoConfig(Strict):
    """`kyverno:` how the Kyverno (CEL) engine's policies run.

    generateValidatingAdmissionPolicy: under Enforce, each ValidatingPolicy asks Kyverno to
    generate a native ValidatingAdmissionPolicy and binding from it
    (spec.autogen.validatingAdmissionPolicy.enabled), so the API server validates the
    group's pods itself, Kyverno registers no webhook for the policy and writes no admission
    report for it, and validation holds while Kyverno is down. Audit generates none (see
    auditAtAdmission); a group in a system namespace keeps its Enforce policy on the
    webhook (Kyverno's install leaves those out of its webhooks; a
    ValidatingAdmissionPolicy would not). false: every Enforce ValidatingPolicy stays on
    the webhook.

    auditAtAdmission: under Audit, false (the default) takes each ValidatingPolicy off the
    admission path (spec.evaluation.admission.enabled false): Kyverno registers no webhook
    for it, and its results reach PolicyReports from the background scan of Kyverno's
    reports controller (installed by default) instead of an admission report written while
    the pod waits. true: Audit on Kyverno's webhook, as before; the reports then come from
    admission. Enforce always validates at admission.
    """

    generate_validating_admission_policy: bool = Field(
        True, alias="generateValidatingAdmissionPolicy"
    )
    audit_at_admission: bool = Field(False, alias="auditAtAdmission")


class TopogenConfig(Strict):
    """topogen.yaml. Relative paths resolve against its folder."""

    api_version: Literal["topogen.io/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["TopogenConfig"]
    clusters: list[ClusterConfig] = Field(min_length=1)
    # the training manifests (files or folders), as the API server and kubectl write them
    workloads: list[InputPath] = Field(default_factory=list)
    groups: list[GroupConfig] = Field(min_length=1)
    # kyverno (CEL, Kyverno >= 1.17), kyverno-legacy (ClusterPolicy), gatekeeper, native
    engines: list[Engine] = Field(default_factory=lambda: list[Engine](["kyverno"]))
    # Audit: report what Enforce would reject; Enforce: reject
    validation_action: Literal["Audit", "Enforce"] = Field("Audit", alias="validationAction")
    # where namespaced inputs without metadata.namespace apply, as `kubectl apply -n`
    default_namespace: Name = Field("default", alias="defaultNamespace")
    monitoring: MonitoringConfig = Field(
        default_factory=lambda: MonitoringConfig.model_validate({})
    )
    gatekeeper: GatekeeperConfig = Field(
        default_factory=lambda: GatekeeperConfig.model_validate({})
    )
    kyverno: KyvernoConfig = Field(default_factory=lambda: KyvernoConfig.model_validate({}))

    # set by load_config, not by users
    base_dir: Path = Field(Path("."), exclude=True)
    path: str = Field("topogen.yaml", exclude=True)
    # the folder every input path must resolve into (symlinks resolved); None: anywhere
    root: Path | None = Field(None, exclude=True)

    @model_validator(mode="after")
    def _unique_names(self) -> TopogenConfig:
        for what, names in (
            ("clusters", [c.name for c in self.clusters]),
            ("groups", [g.name for g in self.groups]),
        ):
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise ValueError(f"duplicate {what} name: {', '.join(dupes)}")
        known = {c.name for c in self.clusters}
        for g in self.groups:
            for c in g.clusters or ():
                if c not in known:
                    raise ValueError(f"group {g.name} names unknown cluster {c}")
        return self
