"""The reviewer's summary of a diff, per cluster: where each job is before and after, the
GPUs left per domain, what the admission policies now do differently and by which
component, and the risks (re-pins, refusals, fail-open webhooks, Enforce turned on).

Read from the two trees (each render's policies/<cluster>/placements.yaml and its
policies), so it needs no analysis; the new render's refusals, warnings and re-pin
reasons are added when the new side was rendered here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from topogen.diff.changes import (
    ClusterReview,
    PlacementRow,
    RowStatus,
    Tree,
    TreeEntry,
    cluster_of,
)
from topogen.diff.meaning import actions_of
from topogen.model import LAST_PLACEMENTS_FILE
from topogen.render.vocabulary import DENIED_ZONE_PAIRS, GROUP_LABEL, ROLE_LABEL

__all__ = ["Rendered", "cluster_reviews", "rendered_facts"]

ENFORCING = {"Deny": "Enforce", "Enforce": "Enforce", "deny": "Enforce"}
MUTATOR = {
    "kyverno": "Kyverno's webhook (MutatingPolicy)",
    "kyverno-legacy": "Kyverno's webhook (ClusterPolicy)",
    "gatekeeper": "Gatekeeper's mutation webhook (Assign, ModifySet)",
    "native": "the API server (MutatingAdmissionPolicy)",
}


@dataclass(frozen=True)
class Rendered:
    """What the new side's render said beyond its tree (known when it was rendered here)."""

    refused: Mapping[str, tuple[str, ...]]  # cluster -> refusal lines
    refused_groups: Mapping[str, frozenset[str]]  # cluster -> refused groups
    warnings: Mapping[str, tuple[str, ...]]  # cluster -> render's warnings
    # (cluster, ns/job) -> why it moved, or stays: "running in <domain>"
    repins: Mapping[tuple[str, str], str]
    jobs: Mapping[tuple[str, str], tuple[tuple[str, str], ...]]  # (cluster, group) -> jobs, GPUs


def cluster_reviews(old: Tree, new: Tree, rendered: Rendered | None) -> tuple[ClusterReview, ...]:
    clusters = sorted(
        {c for t in (old, new) for e in t.entries.values() if (c := _policy_cluster(e))}
        | set(rendered.refused if rendered else ())
    )
    return tuple(_review(c, old, new, rendered) for c in clusters)


def _policy_cluster(e: TreeEntry) -> str | None:
    return cluster_of(e.key.location) if e.path.startswith("policies/") else None


def _review(cluster: str, old: Tree, new: Tree, rendered: Rendered | None) -> ClusterReview:
    refused = rendered.refused.get(cluster, ()) if rendered else ()
    if refused:
        new = old  # a refused render writes nothing: the cluster keeps what it has
    before, after = _placements(old, cluster), _placements(new, cluster)
    rows = _rows(cluster, before, after, rendered)
    engines = (_engines(old, cluster), _engines(new, cluster))
    actions = (_action(old, cluster), _action(new, cluster))
    failure = (_failure(old, cluster), _failure(new, cluster))
    warnings = rendered.warnings.get(cluster, ()) if rendered else ()
    free = _free(before, after)
    review = ClusterReview(
        cluster=cluster,
        engines=engines,
        actions=actions,
        failure_policies=failure,
        rows=rows,
        free=free,
        mutation="",
        validation="",
        risks=(),
        refused=refused,
        warnings=warnings,
    )
    return _with_words(review, old, new)


# -- placements -----------------------------------------------------------------------------


Placed = dict[tuple[str, str], tuple[str, str, bool]]  # (group, job) -> domain, GPUs, queued


def _placements(tree: Tree, cluster: str) -> tuple[Placed, dict[str, str]]:
    """The tree's placements of one cluster: per job, and the GPUs left per domain."""
    jobs: Placed = {}
    left: dict[str, str] = {}
    for e in tree.entries.values():
        if e.path != f"policies/{cluster}/{LAST_PLACEMENTS_FILE}" or not isinstance(e.data, dict):
            continue
        for g in _list(e.data.get("groups")):
            for j in _list(g.get("jobs")):
                key = (str(g.get("name", "")), str(j.get("job", "")))
                jobs[key] = (
                    str(j.get("domain", "")),
                    str(j.get("gpus", "")),
                    bool(j.get("queued")),
                )
        for d in _list(e.data.get("domains")):
            left[str(d.get("name", ""))] = str(d.get("left", ""))
    return jobs, left


def _list(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _rows(
    cluster: str,
    before: tuple[Placed, dict[str, str]],
    after: tuple[Placed, dict[str, str]],
    rendered: Rendered | None,
) -> tuple[PlacementRow, ...]:
    old, new = before[0], after[0]
    refused = rendered.refused_groups.get(cluster, frozenset()) if rendered else frozenset()
    out = []
    status: RowStatus
    for group, job in sorted(old.keys() | new.keys(), key=lambda k: (k[1], k[0])):
        b, a = old.get((group, job)), new.get((group, job))
        if group in refused:
            continue  # listed below, from the render
        if a is None:
            status, why = "removed", "no longer in the rendered jobs"
        elif b is None or a[0] == b[0]:
            status = "new" if b is None else "kept"
            why = rendered.repins.get((cluster, job), "") if rendered else ""
        else:
            status = "moved"
            why = (rendered.repins.get((cluster, job), "") if rendered else "") or "re-pinned"
        gpus = (a or b or ("", "", False))[1]
        queued = bool(a and a[2])
        out.append(
            PlacementRow(
                group, job, gpus, b[0] if b else "", a[0] if a else "", status, why, queued
            )
        )
    for group in sorted(refused):  # nothing is written: its known jobs keep their domain
        listed = rendered.jobs.get((cluster, group), ()) if rendered else ()
        for job, gpus in listed:
            b = old.get((group, job))
            if b is not None:
                row = PlacementRow(group, job, gpus, b[0], b[0], "kept",
                                   "the render is refused: its policies stay", b[2])  # fmt: skip
            else:
                why = f"no allowed domain holds its {gpus} GPUs ({cluster} keeps its policies)"
                row = PlacementRow(group, job, gpus, "", "", "refused", why)
            out.append(row)
    return tuple(out)


def _free(
    before: tuple[Placed, dict[str, str]], after: tuple[Placed, dict[str, str]]
) -> tuple[tuple[str, str, str], ...]:
    b, a = before[1], after[1]
    return tuple((d, b.get(d, ""), a.get(d, "")) for d in sorted(b.keys() | a.keys()))


# -- engines, actions, failure policy ------------------------------------------------------


def _engine_entries(tree: Tree, cluster: str, engine: str | None = None) -> Iterable[TreeEntry]:
    for e in tree.entries.values():
        parts = e.key.location.split("/")
        if parts[:2] != ["policies", cluster] or len(parts) < 3 or "tests" in parts:
            continue
        if engine is None or parts[2] == engine:
            yield e


def _engines(tree: Tree, cluster: str) -> tuple[str, ...]:
    return tuple(sorted({e.key.location.split("/")[2] for e in _engine_entries(tree, cluster)}))


def _action(tree: Tree, cluster: str) -> str:
    """Audit or Enforce, as the cluster's validating objects say it ("" with none)."""
    found = {a for e in _engine_entries(tree, cluster) for a in actions_of(e.data)}
    if not found:
        return ""
    return "Enforce" if any(a in ENFORCING for a in found) else "Audit"


def _failure(tree: Tree, cluster: str) -> dict[str, str]:
    """Per engine: what the API server does while its webhooks cannot answer."""
    out = {}
    for engine in _engines(tree, cluster):
        if engine == "gatekeeper":
            closed = any(
                e.key.location.startswith("kustomize/components/gatekeeper-fail-closed")
                for e in tree.entries.values()
            )
            out[engine] = "Fail" if closed else "Ignore"
            continue
        values = {
            str(e.data["spec"].get("failurePolicy"))
            for e in _engine_entries(tree, cluster, engine)
            if isinstance(e.data, dict)
            and isinstance(e.data.get("spec"), dict)
            and e.data["spec"].get("failurePolicy")
        }
        if values:
            out[engine] = "/".join(sorted(values))
    return out


# -- what mutation and validation now do ---------------------------------------------------


def _with_words(review: ClusterReview, old: Tree, new: Tree) -> ClusterReview:
    return replace(
        review,
        mutation=_mutation(review),
        validation=_validation(review, old, new),
        risks=_risks(review),
    )


def _mutation(r: ClusterReview) -> str:
    who = ", ".join(MUTATOR.get(e, e) for e in r.engines[1]) or "nothing (no policies)"
    said = []
    for row in r.rows:
        if row.status == "new":
            said.append(f"{row.job}'s pods get node affinity and the zone label of {row.after}")
        elif row.status == "moved":
            said.append(f"new pods of {row.job} go to {row.after}, no longer {row.before}")
        elif row.status == "removed":
            said.append(f"{row.job} is no longer constrained")
    if r.refused:
        return f"{who}: unchanged (the render is refused and writes nothing)"
    if r.engines[0] != r.engines[1] and r.engines[0]:
        said.insert(0, f"engine {', '.join(r.engines[0])} -> {', '.join(r.engines[1])}")
    return f"{who}: " + ("; ".join(said) if said else "unchanged for every job")


_VALIDATOR_AUDIT = {
    "kyverno": "Kyverno's policy reports",
    "kyverno-legacy": "Kyverno's policy reports",
    "gatekeeper": "Gatekeeper's audit",
    "native": "the API server's ValidatingAdmissionPolicy (audit annotations)",
}
_VALIDATOR_ENFORCE = {
    "kyverno": "Kyverno's webhook",
    "kyverno-legacy": "Kyverno's webhook",
    "gatekeeper": "Gatekeeper's webhook",
    "native": "the API server's ValidatingAdmissionPolicy",
}


def _validator(tree: Tree, cluster: str, engine: str, action: str) -> str:
    """`reported by X (Audit refuses nothing)` or `refused by X`."""
    if action != "Enforce":
        return f"reported by {_VALIDATOR_AUDIT.get(engine, engine)} (Audit refuses nothing)"
    if engine == "kyverno" and any(
        _dig(e.data, "spec", "autogen", "validatingAdmissionPolicy", "enabled") is True
        for e in _engine_entries(tree, cluster, engine)
    ):
        return "refused by the API server's ValidatingAdmissionPolicy (Kyverno generates it)"
    return f"refused by {_VALIDATOR_ENFORCE.get(engine, engine)}"


def _dig(doc: Any, *keys: str) -> Any:
    for k in keys:
        doc = doc.get(k) if isinstance(doc, dict) else None
    return doc


def _denied(tree: Tree, cluster: str) -> set[str]:
    out: set[str] = set()
    for e in _engine_entries(tree, cluster):
        value = _dig(e.data, "metadata", "annotations", DENIED_ZONE_PAIRS)
        if isinstance(value, str):
            out |= {p.replace("/", " and ") for p in value.split(",") if p}
    return out


def _groups(tree: Tree, cluster: str) -> list[str]:
    return sorted(
        {
            str(g)
            for e in _engine_entries(tree, cluster)
            if _dig(e.data, "metadata", "labels", ROLE_LABEL) == "validate"
            and (g := _dig(e.data, "metadata", "labels", GROUP_LABEL))
        }
    )


def _validation(r: ClusterReview, old: Tree, new: Tree) -> str:
    if r.refused:
        return "unchanged (the render is refused and writes nothing)"
    if not r.engines[1]:
        return "no policies"
    action_b, action_a = r.actions
    who = "; ".join(_validator(new, r.cluster, e, action_a) for e in r.engines[1])
    groups = ", ".join(_groups(new, r.cluster)) or "the groups"
    what = (
        f"pods of group {groups} not pinned to their job's domain, workers without their "
        "co-location term, an identity label naming another zone"
    )
    denied_b, denied_a = _denied(old, r.cluster), _denied(new, r.cluster)
    if denied_a:
        what += ", node affinity spanning zones whose traffic is denied"
    if action_b and action_b != action_a:
        was = "; ".join(_validator(old, r.cluster, e, action_b) for e in r.engines[0])
        return f"{action_b} -> {action_a}: {what} are now {who} (before: {was})"
    changes = []
    if denied_a - denied_b:
        changes.append(f"denied now: {', '.join(sorted(denied_a - denied_b))}")
    if denied_b - denied_a:
        changes.append(f"no longer denied: {', '.join(sorted(denied_b - denied_a))}")
    if r.engines[0] != r.engines[1]:
        changes.insert(0, "the same checks on the new engine")
    head = f"{action_a or 'Audit'}: {what} are {who}"
    return head + (f" ({'; '.join(changes)})" if changes else " (unchanged)")


def _risks(r: ClusterReview) -> tuple[str, ...]:
    risks = [f"refused: {line}" for line in r.refused]
    moved = [row for row in r.rows if row.status == "moved"]
    if moved:
        names = ", ".join(row.job for row in moved)
        risks.append(f"{len(moved)} re-pin{'s' if len(moved) != 1 else ''} ({names})")
    if r.actions[0] == "Audit" and r.actions[1] == "Enforce":
        risks.append("Enforce turned on")
    opened = [
        e
        for e, f in r.failure_policies[1].items()
        if f == "Ignore" and r.failure_policies[0].get(e) != "Ignore"
    ]
    if opened:
        risks.append(f"fail-open ({', '.join(opened)}: failure policy Ignore)")
    queued = [row.job for row in r.rows if row.queued and row.status in ("new", "moved")]
    if queued:
        risks.append(f"{len(queued)} queued ({', '.join(queued)} waits for GPUs)")
    return tuple(risks)


def rendered_facts(
    refusals: Sequence[tuple[str, str | None, str]],
    warnings: Sequence[tuple[str, str]],
    repins: Mapping[tuple[str, str], str],
    jobs: Mapping[tuple[str, str], tuple[tuple[str, str], ...]],
) -> Rendered:
    """Rendered from plain facts: refusals (cluster, group, line), warnings (cluster, line)."""
    refused: dict[str, list[str]] = {}
    groups: dict[str, set[str]] = {}
    for cluster, group, line in refusals:
        refused.setdefault(cluster, []).append(line)
        if group is not None:
            groups.setdefault(cluster, set()).add(group)
    said: dict[str, list[str]] = {}
    for cluster, line in warnings:
        said.setdefault(cluster, []).append(line)
    return Rendered(
        {c: tuple(v) for c, v in refused.items()},
        {c: frozenset(v) for c, v in groups.items()},
        {c: tuple(dict.fromkeys(v)) for c, v in said.items()},
        dict(repins),
        dict(jobs),
    )
