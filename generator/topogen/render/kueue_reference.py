"""The reference semantics of the Kueue job policies (kueue_cel.py), in plain Python: what
the mutation does to a job and which checks it fails. Tests hold every engine to it with
the engine's real tool, and tests/live holds both to Kueue's controller."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from topogen.kueue.vocabulary import (
    GROUP_NAME,
    PREFERRED_TOPOLOGY,
    QUEUE_LABEL,
    REQUIRED_TOPOLOGY,
    SLICE_REQUIRED_TOPOLOGY,
    SLICE_SIZE,
    TAS_ANNOTATIONS,
    UNCONSTRAINED_TOPOLOGY,
)
from topogen.plaindata import copy_plain
from topogen.render.kueue_intent import KueueIntent
from topogen.render.vocabulary import NODE_AFFINITY, REQUIRED

__all__ = ["applies", "mutate_job", "templates", "violations"]

Job = dict[str, Any]


def applies(job: Job, ki: KueueIntent) -> bool:
    """The policies' matchConditions (and resource rules)."""
    meta = job.get("metadata") or {}
    if job.get("kind") != ki.kind.kind or job.get("apiVersion") not in ki.kind.api_versions:
        return False
    ns = meta.get("namespace") or "default"
    queue = (meta.get("labels") or {}).get(QUEUE_LABEL, "default")
    return ns in ki.namespaces and f"{ns}/{queue}" in ki.queues


def _entries(job: Job, ki: KueueIntent) -> list[Any]:
    raw = (job.get("spec") or {}).get(ki.kind.field)
    if raw is None:
        return []
    return list(raw.values()) if ki.kind.keyed else list(raw)


def templates(job: Job, ki: KueueIntent) -> Iterator[dict[str, Any]]:
    """Every pod template Kueue makes a PodSet of."""
    for entry in _entries(job, ki):
        t = entry
        for part in ki.kind.template:
            t = t[part]
        yield t


def _count(entry: dict[str, Any], ki: KueueIntent) -> int:
    replicas = int(entry.get("replicas", 1))
    if ki.kind.keyed:
        return replicas
    return replicas * int(((entry.get("template") or {}).get("spec") or {}).get("parallelism", 1))


def _groupable_template(t: dict[str, Any], ki: KueueIntent) -> bool:
    ann = (t.get("metadata") or {}).get("annotations")
    if ann is None:
        return True
    others = (PREFERRED_TOPOLOGY, UNCONSTRAINED_TOPOLOGY, SLICE_REQUIRED_TOPOLOGY, SLICE_SIZE)
    if any(k in ann for k in others):
        return False
    return REQUIRED_TOPOLOGY not in ann or ann[REQUIRED_TOPOLOGY] == ki.level


def groupable(job: Job, ki: KueueIntent) -> bool:
    """Exactly two PodSets, one of a single pod, each asking no topology but the level."""
    entries = _entries(job, ki)
    return (
        len(entries) == 2
        and any(_count(e, ki) == 1 for e in entries)
        and all(_groupable_template(t, ki) for t in templates(job, ki))
    )


def _pin(spec: dict[str, Any], ki: KueueIntent) -> None:
    req = {"key": ki.zone_label, "operator": "In", "values": list(ki.zones)}
    na = spec.setdefault("affinity", {}).setdefault(NODE_AFFINITY, {})
    if REQUIRED not in na:
        na[REQUIRED] = {"nodeSelectorTerms": [{"matchExpressions": [req]}]}
        return
    for term in na[REQUIRED].get("nodeSelectorTerms") or []:
        exprs = term.get("matchExpressions") or []
        if not any(e.get("key") == ki.zone_label and e.get("operator") == "In" for e in exprs):
            term["matchExpressions"] = [*exprs, dict(req)]


def mutate_job(job: Job, ki: KueueIntent) -> Job:
    out = copy_plain(job)
    if not applies(out, ki):
        return out
    group = groupable(out, ki)
    for t in templates(out, ki):
        _pin(t.setdefault("spec", {}), ki)
        wanted: dict[str, str] = {}
        ann = (t.get("metadata") or {}).get("annotations") or {}
        if not any(k in ann for k in TAS_ANNOTATIONS):
            wanted[REQUIRED_TOPOLOGY] = ki.level
        if group and GROUP_NAME not in ann:
            wanted[GROUP_NAME] = ki.group_name
        if wanted:
            meta = t.setdefault("metadata", {})
            meta["annotations"] = {**(meta.get("annotations") or {}), **wanted}
    return out


def _pinned(t: dict[str, Any], ki: KueueIntent) -> bool:
    na = ((t.get("spec") or {}).get("affinity") or {}).get(NODE_AFFINITY) or {}
    terms = (na.get(REQUIRED) or {}).get("nodeSelectorTerms") or []
    return bool(terms) and all(
        any(
            e.get("key") == ki.zone_label
            and e.get("operator") == "In"
            and all(v in ki.zones for v in e.get("values") or [])
            for e in term.get("matchExpressions") or []
        )
        for term in terms
    )


def violations(job: Job, ki: KueueIntent) -> list[int]:
    """The indexes of the validations (kueue_cel.validations) the job fails."""
    if not applies(job, ki):
        return []
    out = []
    ts = list(templates(job, ki))
    if not all(_pinned(t, ki) for t in ts):
        out.append(0)
    anns = [(t.get("metadata") or {}).get("annotations") or {} for t in ts]
    if not all(any(k in a for k in TAS_ANNOTATIONS) for a in anns):
        out.append(1)
    if groupable(job, ki) and not (
        all(GROUP_NAME in a for a in anns) and len({a[GROUP_NAME] for a in anns}) == 1
    ):
        out.append(2)
    return out
