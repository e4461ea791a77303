"""Each engine's reviewed differences from the reference model, as transformations.

A case (cases.py) names the differences an engine shows on it; the expected answer is
the reference's with those applied, in ORDER. `pod` transforms the expected mutated pod
(given the raw one), `checks` the failing checks; `accepts_match_label_keys` says the
engine's checks read a coordinator term that names the job label in matchLabelKeys as
the reference's own term (which is what the API server makes of it).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from topogen.render.cel import toleration_dicts
from topogen.render.intent import AdmissionIntent
from topogen.render.reference import anchor_of, coordinator_term, mutate

Pod = dict[str, Any]


@dataclass(frozen=True)
class Difference:
    """A reviewed way an engine's answer differs from the reference's."""

    why: str
    pod: Callable[[Pod, Pod, AdmissionIntent], Pod] | None = None  # (expected, raw, intent)
    checks: Callable[[list[str], Pod, AdmissionIntent], list[str]] | None = None
    accepts_match_label_keys: bool = False  # the checks read a matchLabelKeys term as ours


def gk_term(intent: AdmissionIntent, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """Gatekeeper's constant coordinator term, written out here as the reviewed form (the
    anchor of the first worker selector `labels` match; without labels, the first one)."""
    sel = anchor_of(labels, intent) if labels is not None else intent.worker_anchors[0][1]
    selector: dict[str, Any] = {}
    if sel.match_labels:
        selector["matchLabels"] = dict(sel.match_labels)
    if sel.match_expressions:
        selector["matchExpressions"] = [
            {"key": r.key, "operator": r.operator, "values": list(r.values)}
            for r in sel.match_expressions
        ]
    return {
        "labelSelector": selector,
        "matchLabelKeys": [intent.job_label, *intent.scope],
        "topologyKey": intent.topology_key,
    }


def _pod_terms(pod: Pod) -> list[dict[str, Any]]:
    terms: list[dict[str, Any]] = (
        pod.setdefault("spec", {})
        .setdefault("affinity", {})
        .setdefault("podAffinity", {})
        .setdefault("requiredDuringSchedulingIgnoredDuringExecution", [])
    )
    return terms


def _term_as_match_label_keys(pod: Pod, raw: Pod, intent: AdmissionIntent) -> Pod:
    terms = _pod_terms(pod)
    ours = coordinator_term(pod, intent)
    theirs = gk_term(intent, pod["metadata"]["labels"])
    terms[:] = [theirs if t == ours else t for t in terms]
    return pod


def _extra_term(pod: Pod, raw: Pod, intent: AdmissionIntent) -> Pod:
    terms = _pod_terms(pod)
    theirs = gk_term(intent, pod["metadata"]["labels"])
    if theirs not in terms:
        terms.append(theirs)
    return pod


def _as_stored(t: dict[str, str]) -> dict[str, str]:
    """A toleration as the API server stores it: empty fields absent."""
    return {k: v for k, v in t.items() if v != ""}


def _identical_tolerations_only(pod: Pod, raw: Pod, intent: AdmissionIntent) -> Pod:
    """The pod's own tolerations, then each wanted one (in order) unless identical to one."""
    base = copy.deepcopy((raw.get("spec") or {}).get("tolerations") or [])
    have = [_as_stored(t) for t in base]
    wanted = [w for w in map(_as_stored, toleration_dicts(intent.tolerations)) if w not in have]
    pod["spec"]["tolerations"] = base + wanted
    return pod


def _identity_kept(pod: Pod, raw: Pod, intent: AdmissionIntent) -> Pod:
    key = intent.identity[0] if intent.identity is not None else intent.identity_label
    assert key is not None
    pod["metadata"]["labels"][key] = raw["metadata"]["labels"][key]
    return pod


def _annotations_unseen(pod: Pod, raw: Pod, intent: AdmissionIntent) -> Pod:
    """Mutated as a role pod: the mutators do not see the Kueue annotation."""
    bare = copy.deepcopy(raw)
    bare["metadata"].pop("annotations")
    out = mutate(bare, intent)
    out["metadata"]["annotations"] = copy.deepcopy(raw["metadata"]["annotations"])
    return out


def _gate_unseen(pod: Pod, raw: Pod, intent: AdmissionIntent) -> Pod:
    """Mutated as a role pod: the mutators do not see Kueue's scheduling gate."""
    bare = copy.deepcopy(raw)
    gates = bare["spec"].pop("schedulingGates")
    out = mutate(bare, intent)
    out["spec"]["schedulingGates"] = gates
    return out


def _zone_terms_kept(pod: Pod, raw: Pod, intent: AdmissionIntent) -> Pod:
    """Terms that already name the zone label (any operator) stay as the user wrote them."""
    raw_terms = raw["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    terms = pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    for n, term in enumerate(raw_terms):
        if any(e.get("key") == intent.zone_label for e in term.get("matchExpressions") or []):
            terms[n] = copy.deepcopy(term)
    return pod


DIFFERENCES: dict[str, Difference] = {
    # Gatekeeper (see render/gatekeeper.py DIFFERENCES)
    "kueue-annotation-mutated": Difference(
        "mutators cannot match annotations", pod=_annotations_unseen
    ),
    "kueue-gate-mutated": Difference("mutators cannot match scheduling gates", pod=_gate_unseen),
    "covered-toleration-added": Difference(
        "ModifySet merge skips identical tolerations only", pod=_identical_tolerations_only
    ),
    "coordinator-term-match-label-keys": Difference(
        "a mutator cannot copy the job name: the term uses matchLabelKeys, which the checks accept",
        pod=_term_as_match_label_keys,
        accepts_match_label_keys=True,
    ),
    "equivalent-term-not-recognised": Difference(
        "ModifySet merge skips an identical term only; the checks accept either",
        pod=_extra_term,
        accepts_match_label_keys=True,
    ),
    "zone-term-other-operator-kept": Difference(
        "the mutator keys a term's expressions by key alone: a term with a NotIn/Exists/"
        "DoesNotExist on the zone label is left as is (the checks then find it unpinned)",
        pod=_zone_terms_kept,
    ),
    "identity-label-kept": Difference(
        "AssignMetadata never replaces a label; the identity check then reports it",
        pod=_identity_kept,
    ),
    "match-label-keys-term-accepted": Difference(
        "the checks accept a matchLabelKeys coordinator term", accepts_match_label_keys=True
    ),
}
ORDER = list(DIFFERENCES)  # the order differences apply in


def as_reference_term(pod: Pod, intent: AdmissionIntent) -> Pod:
    """A Gatekeeper-form coordinator term read as the reference's (what the API server's
    matchLabelKeys expansion means)."""
    out = copy.deepcopy(pod)
    terms = ((out.get("spec", {}).get("affinity") or {}).get("podAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or []
    for i, t in enumerate(terms):
        if intent.job_label in (t.get("matchLabelKeys") or []) and "labelSelector" in t:
            terms[i] = coordinator_term(out, intent)
    return out
