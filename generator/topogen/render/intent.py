"""What every admission backend enforces for one config group: engine-neutral, from the plan."""

from __future__ import annotations

from dataclasses import dataclass

from topogen.model import LabelSelector, Toleration
from topogen.plan import GroupPlan
from topogen.sources.profiles import KUEUE_TAS_KEYS

__all__ = ["AdmissionIntent", "intent_for"]


@dataclass(frozen=True)
class AdmissionIntent:
    name: str  # base name of the generated policies
    cluster: str
    group: str
    namespaces: tuple[str, ...]
    job_label: str
    coordinator: tuple[LabelSelector, ...]  # ORed
    worker: tuple[LabelSelector, ...]  # ORed
    coordinator_selector: LabelSelector  # plus job_label=<the pod's job>: a worker's affinity
    zone_label: str
    zones: tuple[str, ...]
    topology_key: str
    tolerations: tuple[Toleration, ...]  # for the coordinator
    identity: tuple[str, str] | None  # (label, zone) set on every role
    identity_label: str | None
    denied_zone_pairs: tuple[tuple[str, str, tuple[str, ...]], ...]
    validation_action: str  # Audit | Enforce
    skip_keys: tuple[str, ...] = KUEUE_TAS_KEYS

    @property
    def roles(self) -> tuple[str, ...]:
        return ("coordinator", "worker")


def intent_for(plan: GroupPlan, validation_action: str) -> AdmissionIntent:
    assert plan.domain is not None, "only enforceable plans have an intent"
    p = plan.profile
    return AdmissionIntent(
        name=f"topogen-{plan.group.name}",
        cluster=plan.cluster,
        group=plan.group.name,
        namespaces=tuple(sorted(plan.group.namespaces)),
        job_label=p.job_label,
        coordinator=p.coordinator,
        worker=p.worker,
        coordinator_selector=p.coordinator[-1],
        zone_label=plan.zone_label,
        zones=plan.zones,
        topology_key=plan.topology_key,
        tolerations=plan.tolerations,
        identity=plan.identity,
        identity_label=plan.group.identity_label,
        denied_zone_pairs=plan.denied_zone_pairs,
        validation_action=validation_action,
    )
