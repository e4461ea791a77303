"""Config (below sources): topogen.yaml, strict, and every rule that depends on it alone."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from topogen.autoscaling import AutoscalingConfig
from topogen.cilium.labelfilter import LabelPrefixError, parse_prefix
from topogen.configerrors import config_error, key_line
from topogen.errors import InputError
from topogen.fields import PATTERN_WORDS, InputPath, LabelKey, LabelValue, Name, Strict
from topogen.model import CiliumSettings
from topogen.names import dns_label_problem, name_limit
from topogen.operators.registry import PROFILES, operator
from topogen.yamltext import display_path, load_yaml_text

__all__ = [
    "API_VERSION",
    "CiliumConfig",
    "ClusterConfig",
    "GatekeeperConfig",
    "GroupConfig",
    "KyvernoConfig",
    "MonitoringConfig",
    "MonitoringMetrics",
    "TopogenConfig",
    "engine_version_problem",
    "load_config",
    "parse_port",
    "with_default_namespace",
]

API_VERSION = "topogen.io/v1alpha1"

Engine = Literal["kyverno", "kyverno-legacy", "gatekeeper", "native"]


_CILIUM = CiliumSettings()  # the defaults: Cilium's


class CiliumConfig(Strict):
    """`clusters[].cilium`: the cilium-agent options that change verdicts, as the model's
    CiliumSettings has them (its docstring says what each means). Each key set here
    overrides what the cluster's cilium-config ConfigMap says (sources/cilium_config.py),
    which overrides Cilium's defaults. identityLabels is the agent's `labels` option,
    verbatim."""

    # the agent's `labels` option (Helm `labels`, `--labels`), verbatim: [source:]regexp
    # prefixes, `!` after the source excludes (default: Cilium's own label filter)
    identity_labels: list[Annotated[str, StringConstraints(min_length=1)]] = Field(
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

    def settings(self, cluster: Mapping[str, Any] | None = None) -> CiliumSettings:
        """The model's CiliumSettings: Cilium's defaults, then what the cluster's
        cilium-config sets (`cluster`: CiliumSettings fields), then the keys set here."""
        values: dict[str, Any] = dict(cluster or {})
        for f in dataclasses.fields(CiliumSettings):
            if f.name in self.model_fields_set:
                value = getattr(self, f.name)
                values[f.name] = tuple(value) if isinstance(value, list) else value
        return dataclasses.replace(_CILIUM, **values)


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
    kubernetes_version: Annotated[str, StringConstraints(pattern=_VERSION)] = Field(
        "1.36", alias="kubernetesVersion"
    )
    engines: list[Engine] | None = None  # this cluster's, instead of the top level's
    # this cluster's, instead of the top level's
    validation_action: Literal["Audit", "Enforce"] | None = Field(None, alias="validationAction")
    cilium: CiliumConfig = Field(default_factory=lambda: CiliumConfig.model_validate({}))
    autoscaling: AutoscalingConfig = Field(
        default_factory=lambda: AutoscalingConfig.model_validate({})
    )


_PORT = re.compile(r"^(\d{1,5})(?:-(\d{1,5}))?(?:/(TCP|UDP|SCTP))?$")


def parse_port(p: Any) -> tuple[str, int, int]:
    """A port of groups[].ports (1-65535, "LO-HI", optionally "/TCP", "/UDP" or "/SCTP") as
    (protocol, low, high); TCP unless it says otherwise. ValueError: not a port."""
    if isinstance(p, int) and not isinstance(p, bool):
        lo = hi = p
        protocol = "TCP"
    else:
        m = _PORT.match(p) if isinstance(p, str) else None
        if m is None:
            raise ValueError(f"{p!r} is not a port: use 1-65535, LO-HI or PORT/PROTOCOL")
        lo, hi, protocol = int(m[1]), int(m[2] or m[1]), m[3] or "TCP"
    if not 1 <= lo <= hi <= 65535:
        raise ValueError(f"{p!r} is not a port range within 1-65535")
    return protocol, lo, hi


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

    def port_ranges(self) -> dict[str, list[tuple[int, int]]] | None:
        """protocol -> (low, high) of each port of `ports`, in order; None: not given."""
        if not self.ports:
            return None
        out: dict[str, list[tuple[int, int]]] = {}
        for p in self.ports:
            protocol, lo, hi = parse_port(p)
            out.setdefault(protocol, []).append((lo, hi))
        return out

    @model_validator(mode="after")
    def _required_keys(self) -> GroupConfig:
        """The keys the profile's operator needs (custom: the labels and role values)."""
        by_alias = {f.alias or name: name for name, f in type(self).model_fields.items()}
        needed = operator(self.profile).required
        missing = [k for k in needed if not getattr(self, by_alias[k])]
        if missing:
            raise ValueError(f"profile {self.profile} needs {', '.join(missing)}")
        return self


_DURATION = r"^\d+[smh]$"
Duration = Annotated[str, StringConstraints(pattern=_DURATION)]
# Hubble's drop reasons are enum names (POLICY_DENIED); they enter a PromQL regex
_DROP_REASON = r"^[A-Za-z0-9_]{1,100}$"
DropReason = Annotated[str, StringConstraints(pattern=_DROP_REASON)]
# no braces: the URL enters alert annotations, which Prometheus expands as Go templates
_URL = r"^https?://[^\s{}#]+$"
RunbookUrl = Annotated[str, StringConstraints(pattern=_URL, max_length=2000)]
DEFAULT_RUNBOOK_URL = "https://github.com/topogen/topogen/blob/main/docs/runbooks.md"
_METRIC = r"^[a-zA-Z_:][a-zA-Z0-9_:]*$"
MetricName = Annotated[str, StringConstraints(pattern=_METRIC, max_length=200)]
_VERSION = r"^1\.\d+$"
# each pattern of the model in words, for its errors (configerrors.py)
_PATTERN_WORDS = {
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
    """

    failure_policy: Literal["Ignore", "Fail"] = Field("Ignore", alias="failurePolicy")


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


# the oldest Kubernetes (major, minor) each engine's output works on, and why
ENGINE_MIN_KUBERNETES = {"gatekeeper": ((1, 31), "matchLabelKeys in pod affinity")}
# the API group of the policies each engine names after the group (render/intent.py names
# them topogen-<group>-<suffix>; -validate is the longest suffix every group gets)
_ENGINE_POLICIES = {
    "kyverno": ("policies.kyverno.io/v1", "ValidatingPolicy"),
    "kyverno-legacy": ("kyverno.io/v1", "ClusterPolicy"),
}
_LONGEST_SUFFIX = "-validate"


def engine_version_problem(engine: str, kubernetes_version: str) -> str | None:
    """Why the engine's output does not work on a cluster of this Kubernetes version."""
    oldest = ENGINE_MIN_KUBERNETES.get(engine)
    if oldest is None:
        return None
    (want, why) = oldest
    major, minor = (int(p) for p in kubernetes_version.split("."))
    if (major, minor) >= want:
        return None
    return (
        f"engine {engine} needs Kubernetes {'.'.join(map(str, want))} or later ({why}); "
        f"the cluster is configured as {kubernetes_version}"
    )


def _check_engines(cfg: TopogenConfig, shown: str, text: str | None) -> None:
    """The rules that depend on the engines chosen: each cluster's Kubernetes version, and
    the group names that become the names of policies whose names are limited."""

    def line(*loc: str | int) -> int | None:
        return key_line(text, loc) if text else None

    for i, cluster in enumerate(cfg.clusters):
        for engine in cfg.engines_for(cluster):
            problem = engine_version_problem(engine, cluster.kubernetes_version)
            if problem:
                raise InputError(
                    f"clusters.{cluster.name}.kubernetesVersion: {problem}",
                    path=shown,
                    line=line("clusters", i, "kubernetesVersion"),
                    hint="use engine kyverno or native, or raise kubernetesVersion",
                )
    for i, group in enumerate(cfg.groups):
        for cluster in (
            c for c in cfg.clusters if group.clusters is None or c.name in group.clusters
        ):
            for engine in cfg.engines_for(cluster):
                if engine not in _ENGINE_POLICIES:
                    continue
                api_version, kind = _ENGINE_POLICIES[engine]
                name = f"topogen-{group.name}{_LONGEST_SUFFIX}"
                limit, whose = name_limit(api_version)
                size = len(name.encode())
                if size > limit:
                    raise InputError(
                        f"groups.{group.name}.name: engine {engine} names a {kind} {name} "
                        f"({size} bytes; {whose} allows {limit}): use a group name of at most "
                        f"{len(group.name) - (size - limit)} characters",
                        path=shown,
                        line=line("groups", i, "name"),
                    )


def with_default_namespace(cfg: TopogenConfig, namespace: str | None) -> TopogenConfig:
    """`cfg` with namespaced inputs that name no namespace put in `namespace` (-n)."""
    if not namespace:
        return cfg
    problem = dns_label_problem(namespace)
    if problem:
        raise InputError(f"--namespace: {problem}")
    return cfg.model_copy(update={"default_namespace": namespace})


def load_config(path: str | Path, *, allow_outside: bool = False) -> TopogenConfig:
    """Read and check topogen.yaml. Its input paths are confined to its folder (and the
    folders below it, symlinks resolved) unless `allow_outside`."""
    file = Path(path)
    shown = display_path(file)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(
            "config file not found", path=shown, hint="pass -c PATH or run `topogen init`"
        ) from None
    except UnicodeDecodeError:
        raise InputError("file is not UTF-8 text", path=shown) from None
    except OSError as exc:
        raise InputError(f"cannot read config: {exc.strerror or exc}", path=shown) from None
    docs = [d for d in load_yaml_text(text, shown) if d is not None]
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise InputError("config must be one YAML mapping (kind: TopogenConfig)", path=shown)
    cfg = parse_config(docs[0], shown, file.parent, text)
    if allow_outside:
        return cfg
    return cfg.model_copy(update={"root": file.parent.resolve()})


def parse_config(
    data: dict[str, Any], shown: str, base_dir: Path, text: str | None = None
) -> TopogenConfig:
    """`data` (read from `text`, whose lines errors name) as a TopogenConfig, checked."""
    if data.get("apiVersion") != API_VERSION:
        raise InputError(
            f"apiVersion must be {API_VERSION}, got {data.get('apiVersion')!r}",
            path=shown,
            line=key_line(text, ("apiVersion",)) if text else None,
        )
    try:
        cfg = TopogenConfig.model_validate(data)
    except ValidationError as exc:
        raise config_error(exc, TopogenConfig, data, text, shown, _PATTERN_WORDS) from None
    _check_engines(cfg, shown, text)
    return cfg.model_copy(update={"base_dir": base_dir, "path": shown})
