"""What `connectivity` and `explain` read: workloads, namespaces and policies.

Two ways in: a topogen.yaml (its workloads, and one cluster's networkPolicies and
namespaces, read exactly as `analyze` reads them), or plain paths.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from topogen.errors import InputError
from topogen.model import Namespace, PolicySet, Workload
from topogen.sources.loader import load_cluster_inputs, load_workload_inputs, read_objects
from topogen.sources.policies import POLICY_KINDS, read_policies, read_services
from topogen.sources.workloads import read_namespaces, read_workloads

__all__ = ["ConnectivityInputs", "IdentityHint", "InputSpec", "load_inputs"]


@dataclass(frozen=True)
class IdentityHint:
    """A config group's identity label: stamped at binding unless a template sets it."""

    label: str
    namespaces: tuple[str, ...]


@dataclass(frozen=True)
class InputSpec:
    """Where to read from, as the command line said it."""

    config: str | None = None  # a topogen.yaml; None: use the paths
    cluster: str | None = None  # with config: the cluster (default: the first)
    policies: tuple[str, ...] = ()
    workloads: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    allow_outside: bool = False  # with config: read input paths outside its folder
    # where namespaced inputs without a namespace apply (-n); None: the config's, or default
    default_namespace: str | None = None


@dataclass(frozen=True)
class ConnectivityInputs:
    workloads: tuple[Workload, ...]
    namespaces: Mapping[str, Namespace]
    policies: PolicySet
    skipped: tuple[str, ...] = ()
    identity_hints: tuple[IdentityHint, ...] = ()


def load_inputs(spec: InputSpec) -> ConnectivityInputs:
    """Read the inputs `spec` names; InputError on a bad combination or bad files."""
    paths_given = bool(spec.policies or spec.workloads or spec.namespaces)
    if spec.config is not None and paths_given:
        raise InputError("give either -c/--config or --policies/--workloads/--namespaces, not both")
    if spec.config is not None:
        return _from_config(spec.config, spec.cluster, spec.allow_outside, spec.default_namespace)
    if spec.cluster is not None:
        raise InputError("--cluster needs -c/--config")
    if not spec.workloads or not spec.policies:
        missing = "--workloads" if not spec.workloads else "--policies"
        raise InputError(
            f"{missing} is missing",
            hint="give --policies PATH and --workloads PATH, or -c topogen.yaml",
        )
    return _from_paths(
        spec.policies, spec.workloads, spec.namespaces, spec.default_namespace or "default"
    )


def _from_config(
    path: str, cluster_name: str | None, allow_outside: bool, namespace: str | None
) -> ConnectivityInputs:
    # pydantic: only when a config is read
    from topogen.config import load_config, with_default_namespace

    cfg = with_default_namespace(load_config(path, allow_outside=allow_outside), namespace)
    cluster = cfg.cluster(cluster_name) if cluster_name else cfg.clusters[0]
    loaded = load_workload_inputs(cfg)
    cluster_inputs = load_cluster_inputs(cfg, cluster, loaded.services)
    hints = tuple(
        IdentityHint(g.identity_label, tuple(g.namespaces))
        for g in cfg.groups_for(cluster.name)
        if g.identity_label
    )
    return ConnectivityInputs(
        workloads=loaded.workloads,
        namespaces={**loaded.namespaces, **cluster_inputs.namespaces},
        policies=cluster_inputs.policies,
        skipped=loaded.skipped + cluster_inputs.skipped,
        identity_hints=hints,
    )


def _from_paths(
    policies: Sequence[str],
    workloads: Sequence[str],
    namespaces: Sequence[str],
    default_namespace: str,
) -> ConnectivityInputs:
    here = Path(".")
    dns = default_namespace
    policy_objs = read_objects(list(policies), here, "--policies", default_namespace=dns)
    workload_objs = read_objects(list(workloads), here, "--workloads", default_namespace=dns)
    namespace_objs = read_objects(list(namespaces), here, "--namespaces", default_namespace=dns)
    skipped: list[str] = []
    found = read_workloads(
        [o for o in workload_objs if (o.group, o.kind) not in POLICY_KINDS], skipped
    )
    # later sources win: --namespaces over the namespaces found beside workloads or policies
    ns = {n.name: n for n in read_namespaces(workload_objs + policy_objs + namespace_objs)}
    return ConnectivityInputs(
        workloads=tuple(found),
        namespaces=ns,
        policies=read_policies(policy_objs, services=read_services(workload_objs + namespace_objs)),
        skipped=tuple(skipped),
    )
