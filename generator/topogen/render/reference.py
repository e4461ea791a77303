"""The reference semantics of topogen's admission policies, in plain Python.

Every engine's generated policies are tested against this model with the real
tool (kyverno test/apply, gator, ...): the expected patched pods and verdicts in
the generated CLI tests come from here, the actual ones from the engine.
"""

from __future__ import annotations

from typing import Any

from topogen.model import LabelSelector
from topogen.plaindata import copy_plain
from topogen.render.cel import toleration_dicts
from topogen.render.intent import (
    AdmissionIntent,
    anti_affinity_term,
    excludes_for,
    identity_for,
    zones_for,
)
from topogen.render.requirements import selector
from topogen.render.vocabulary import NODE_AFFINITY, POD_AFFINITY, POD_ANTI_AFFINITY, REQUIRED

__all__ = [
    "anchor_of",
    "coordinator_term",
    "mutate",
    "mutate_own",
    "role_of",
    "sample_pods",
    "violations",
]

Pod = dict[str, Any]


def _labels(pod: Pod) -> dict[str, str]:
    return dict(pod.get("metadata", {}).get("labels") or {})


def role_of(pod: Pod, intent: AdmissionIntent) -> str | None:
    meta = pod.get("metadata", {})
    if meta.get("namespace", "default") not in intent.namespaces:
        return None
    labels = _labels(pod)
    annotations = meta.get("annotations") or {}
    if any(k in labels or k in annotations for k in intent.skip_keys):
        return None
    gates = [g.get("name") for g in (pod.get("spec") or {}).get("schedulingGates") or []]
    if intent.skip_gate in gates:  # Kueue's TAS places it
        return None
    if intent.job_label not in labels:
        # a detached pod of a job (KubeRay's submitter) is pinned like the coordinator
        return "coordinator" if any(s.matches(labels) for s in intent.detached) else None
    if any(s.matches(labels) for s in intent.coordinator):
        return "coordinator"
    if any(s.matches(labels) for s in intent.worker):
        return "worker"
    return None


def anchor_of(labels: dict[str, str], intent: AdmissionIntent) -> LabelSelector:
    """What a worker's co-location term adds to its job labels: the anchor of the first
    worker selector it matches."""
    return next(a for w, a in intent.worker_anchors if w.matches(labels))


def _tolerates(t: dict[str, Any], w: dict[str, Any]) -> bool:
    if t.get("effect") and t["effect"] != w["effect"]:
        return False
    if t.get("operator") == "Exists":
        return not t.get("key") or t["key"] == w["key"]
    return bool(
        w["operator"] != "Exists"
        and t.get("key", "") == w["key"]
        and t.get("value", "") == w.get("value", "")
    )


def _zone_req(intent: AdmissionIntent, zones: tuple[str, ...]) -> dict[str, Any]:
    return {"key": intent.zone_label, "operator": "In", "values": list(zones)}


def _pin_node_affinity(
    spec: dict[str, Any], intent: AdmissionIntent, zones: tuple[str, ...]
) -> None:
    aff = spec.setdefault("affinity", {})
    na = aff.setdefault(NODE_AFFINITY, {})
    req = na.get(REQUIRED)
    if req is None:
        na[REQUIRED] = {"nodeSelectorTerms": [{"matchExpressions": [_zone_req(intent, zones)]}]}
        return
    for term in req.get("nodeSelectorTerms") or []:
        exprs = term.get("matchExpressions") or []
        if not any(e.get("key") == intent.zone_label and e.get("operator") == "In" for e in exprs):
            term["matchExpressions"] = [*exprs, _zone_req(intent, zones)]


def coordinator_term(pod: Pod, intent: AdmissionIntent) -> dict[str, Any]:
    labels = _labels(pod)
    sel = anchor_of(labels, intent)
    own = {k: labels[k] for k in (intent.job_label, *intent.scope)}
    written = selector(sel)
    written["matchLabels"] = {**own, **dict(sel.match_labels)}
    return {"labelSelector": written, "topologyKey": intent.topology_key}


def _has_coordinator_term(pod: Pod, intent: AdmissionIntent) -> bool:
    job = _labels(pod).get(intent.job_label)
    terms = (((pod.get("spec") or {}).get("affinity") or {}).get(POD_AFFINITY) or {}).get(
        REQUIRED
    ) or []
    return any(
        t.get("topologyKey") == intent.topology_key
        and ((t.get("labelSelector") or {}).get("matchLabels") or {}).get(intent.job_label) == job
        for t in terms
    )


def same_exclusion(have: dict[str, Any], want: dict[str, Any]) -> bool:
    """Does an existing anti-affinity term already say what `want` (an exclusion's term)
    says: the topology key, the namespaces, and the one requirement on the job label?"""
    sel = have.get("labelSelector") or {}
    return bool(
        have.get("topologyKey") == want["topologyKey"]
        and have.get("namespaces") == want["namespaces"]
        and sel.get("matchExpressions") == want["labelSelector"]["matchExpressions"]
    )


def _exclude(spec: dict[str, Any], intent: AdmissionIntent, namespace: str, job: str) -> None:
    wanted = [anti_affinity_term(intent, e) for e in excludes_for(intent, namespace, job)]
    if not wanted:
        return
    anti = spec.setdefault("affinity", {}).setdefault(POD_ANTI_AFFINITY, {})
    terms = anti.setdefault(REQUIRED, [])
    have = list(terms)
    terms += [w for w in wanted if not any(same_exclusion(t, w) for t in have)]


def mutate(pod: Pod, intent: AdmissionIntent) -> Pod:
    """The pod as topogen's mutating policies leave it (unchanged if they do not match)."""
    role = role_of(pod, intent)
    if role is None:
        return pod
    return _mutated(copy_plain(pod), role, intent)


def mutate_own(pod: Pod, intent: AdmissionIntent) -> Pod:
    """mutate() on a pod the caller owns and no longer needs as it was: changed in place
    (no copy of it), and returned."""
    role = role_of(pod, intent)
    return pod if role is None else _mutated(pod, role, intent)


def _mutated(out: Pod, role: str, intent: AdmissionIntent) -> Pod:
    spec = out.setdefault("spec", {})
    if role == "coordinator":
        existing = spec.get("tolerations")
        missing = [
            w
            for w in toleration_dicts(intent.tolerations)
            if not any(_tolerates(t, w) for t in existing or [])
        ]
        if missing:
            spec["tolerations"] = [*(existing or []), *missing]
    else:
        if not _has_coordinator_term(out, intent):
            pa = spec.setdefault("affinity", {}).setdefault(POD_AFFINITY, {})
            terms = pa.setdefault(REQUIRED, [])
            terms.append(coordinator_term(out, intent))
    namespace = out.get("metadata", {}).get("namespace", "default")
    job = _labels(out).get(intent.job_label)  # None: a detached pod (never per job)
    zones = intent.zones if job is None else zones_for(intent, namespace, job)
    _pin_node_affinity(spec, intent, zones)
    if job is not None:
        _exclude(spec, intent, namespace, job)
    identity = identity_for(intent, zones)
    if identity is not None:
        out["metadata"].setdefault("labels", {})[identity[0]] = identity[1]
    return out


def _pinned_zone_sets(pod: Pod, intent: AdmissionIntent) -> list[list[str]] | None:
    """Zone values of each required node-affinity term (None: the pod is not pinned)."""
    spec = pod.get("spec") or {}
    selector = spec.get("nodeSelector") or {}
    if intent.zone_label in selector:
        return [[selector[intent.zone_label]]]
    terms = (((spec.get("affinity") or {}).get(NODE_AFFINITY) or {}).get(REQUIRED) or {}).get(
        "nodeSelectorTerms"
    ) or []
    if not terms:
        return None
    sets = []
    for t in terms:
        reqs = [
            e
            for e in t.get("matchExpressions") or []
            if e.get("key") == intent.zone_label and e.get("operator") == "In"
        ]
        if not reqs:
            return None
        sets.append([v for e in reqs for v in e.get("values") or []])
    return sets


def violations(pod: Pod, intent: AdmissionIntent) -> list[str]:
    """What the validating policy reports for this pod (empty: allowed or not matched)."""
    role = role_of(pod, intent)
    if role is None:
        return []
    out = []
    sets = _pinned_zone_sets(pod, intent)
    if role == "coordinator":
        within = sets is not None and all(s and all(v in intent.zones for v in s) for s in sets)
        if not within:
            out.append("coordinator not pinned within the domain")
    elif not _has_coordinator_term(pod, intent):
        out.append("worker without pod affinity to its coordinator")
    labels = _labels(pod)
    if intent.identity_label and intent.identity_label in labels:
        value = labels[intent.identity_label]
        if sets is None or not all(all(v == value for v in s) for s in sets):
            out.append(f"identity {intent.identity_label}={value} not pinned")
    if sets is not None:
        may = {v for s in sets for v in s}
        for za, zb, _ in intent.denied_zone_pairs:
            if za in may and zb in may:
                out.append(f"spans denied zones {za} and {zb}")
    return out


def _labels_for(selectors: tuple[LabelSelector, ...]) -> dict[str, str]:
    sel = selectors[-1]
    labels = dict(sel.match_labels)
    for r in sel.match_expressions:
        if r.operator == "In":
            labels[r.key] = r.values[0]
        elif r.operator == "Exists":
            labels[r.key] = "true"
    return labels


def _pod(name: str, namespace: str, labels: dict[str, str], **spec: Any) -> Pod:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "registry.example/train:1"}], **spec},
    }


def sample_pods(intent: AdmissionIntent) -> list[Pod]:
    """The admission cases every engine's generated tests cover."""
    ns = intent.namespaces[0]
    job = {intent.job_label: "sample-job"}
    coord = {**job, **_labels_for(intent.coordinator)}
    worker = {**job, **_labels_for(intent.worker)}
    other_ns = next(
        n for n in ("other-namespace", "other-namespace-2") if n not in intent.namespaces
    )
    gpu_tol = {"key": "example.com/spot", "operator": "Exists", "effect": "NoSchedule"}
    user_term = {
        "matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]
    }
    pods = [
        _pod("coordinator", ns, coord),
        _pod(
            "coordinator-with-constraints",
            ns,
            coord,
            tolerations=[gpu_tol],
            affinity={NODE_AFFINITY: {REQUIRED: {"nodeSelectorTerms": [user_term]}}},
        ),
        _pod("worker", ns, worker),
        _pod(
            "worker-with-affinity",
            ns,
            worker,
            affinity={
                POD_AFFINITY: {
                    REQUIRED: [
                        {
                            "labelSelector": {"matchLabels": {"cache": "warm"}},
                            "topologyKey": "kubernetes.io/hostname",
                        }
                    ]
                }
            },
        ),
        _pod("not-training", ns, {"app": "web"}),
        _pod("other-namespace", other_ns, coord),
        _pod("kueue-tas", ns, {**worker, "kueue.x-k8s.io/tas": "true"}),
        # implicit TAS: Kueue's scheduling gate alone marks it
        _pod("kueue-gated", ns, coord, schedulingGates=[{"name": intent.skip_gate}]),
    ]
    # one more worker per further worker selector (each has its own co-location term), and
    # a detached pod per detached selector
    for i, (w, _) in enumerate(intent.worker_anchors[:-1]):
        pods.append(_pod(f"worker-{i + 1}", ns, {**job, **_labels_for((w,))}))
    for i, d in enumerate(intent.detached):
        pods.append(_pod(f"detached-{i}", ns, _labels_for((d,))))
    already = mutate(_pod("coordinator-already-mutated", ns, coord), intent)
    return [*pods, already]
