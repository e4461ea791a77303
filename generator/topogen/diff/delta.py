"""The analysis delta: findings and plans that appear, disappear or change between two inputs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from topogen.diff.changes import AnalysisDelta, FindingChange, PlanChange
from topogen.model import Finding, FindingKind
from topogen.pipeline.analyze import AnalysisReport
from topogen.plan.group_plan import GroupPlan

__all__ = ["analysis_delta"]

FindingKey = tuple[str, str, str, str, str]  # cluster, group, namespace, job, kind


# how bad a verdict is: a group's problem is new only where its verdict gets worse
SEVERITY = {
    FindingKind.UNSCHEDULABLE: 4,
    FindingKind.HARD_BLOCK: 3,
    FindingKind.IDENTITY_MISMATCH: 2,
    FindingKind.CROSS_ZONE: 1,
}


def analysis_delta(old: AnalysisReport, new: AnalysisReport) -> AnalysisDelta:
    changes = _finding_changes(old.findings, new.findings)
    worst: dict[tuple[str, str], FindingKind] = {}
    for f in old.findings:
        key = (f.cluster, f.group)
        if SEVERITY.get(f.kind, 0) > SEVERITY.get(worst.get(key, FindingKind.OK), 0):
            worst[key] = f.kind
    fixed = {(p.cluster, p.group.name) for p in new.plans if p.enforceable and not p.refused}
    return AnalysisDelta(
        tuple(_truthful(c, worst, fixed) for c in changes), _plan_changes(old.plans, new.plans)
    )


def _truthful(
    c: FindingChange, worst: dict[tuple[str, str], FindingKind], fixed: set[tuple[str, str]]
) -> FindingChange:
    """New only where the group's verdict is new or worse; fixed where a fix is rendered."""
    if not c.problem or c.status == "disappears":
        return c
    before = worst.get((c.cluster, c.group))
    new = SEVERITY.get(FindingKind(c.kind), 0) > SEVERITY.get(before or FindingKind.OK, 0)
    has_fix = (c.cluster, c.group) in fixed and c.kind != FindingKind.UNSCHEDULABLE.value
    headline = c.headline
    if c.status == "appears" and not new and before is not None:
        fix = ": the rendered fix covers it" if has_fix else ", and nothing fixes it"
        if before.value == c.kind:
            headline = f"job {c.namespace}/{c.job} joins group {c.group}, already {c.kind}{fix}"
        else:
            headline = f"group {c.group} is now {c.kind}, no worse than {before.value} before{fix}"
    return replace(c, new_problem=new, fixed=has_fix, headline=headline)


def _by_key(findings: Iterable[Finding]) -> dict[FindingKey, Finding]:
    out: dict[FindingKey, Finding] = {}
    for f in findings:
        if f.kind is not FindingKind.OK:
            out.setdefault((f.cluster, f.group, f.namespace, f.job, f.kind.value), f)
    return out


def _finding_changes(old: Iterable[Finding], new: Iterable[Finding]) -> tuple[FindingChange, ...]:
    before, after = _by_key(old), _by_key(new)
    out = []
    for key in sorted(before.keys() | after.keys()):
        b, a = before.get(key), after.get(key)
        if a is not None and b is None:
            out.append(_change("appears", a, _appears(a)))
        elif b is not None and a is None:
            out.append(_change("disappears", b, _disappears(b)))
        elif a is not None and b is not None and a.message != b.message:
            out.append(_change("changes", a, _changes(a), old_message=b.message))
    order = {"appears": 0, "changes": 1, "disappears": 2}
    return tuple(
        sorted(
            out,
            key=lambda c: (
                not c.problem,
                order[c.status],
                c.cluster,
                c.group,
                c.namespace,
                c.job,
                c.kind,
            ),
        )
    )


def _change(status: str, f: Finding, headline: str, old_message: str = "") -> FindingChange:
    return FindingChange(
        status=status,  # type: ignore[arg-type]
        kind=f.kind.value,
        problem=f.kind.is_problem,
        cluster=f.cluster,
        group=f.group,
        namespace=f.namespace,
        job=f.job,
        headline=headline,
        message=f.message,
        old_message=old_message,
        fix=f.fix,
    )


def _appears(f: Finding) -> str:
    if f.kind.is_problem:
        return f"this change makes group {f.group} {f.kind.value}"
    return f"group {f.group} is now {f.kind.value}"


def _disappears(f: Finding) -> str:
    return f"group {f.group} is no longer {f.kind.value}"


def _changes(f: Finding) -> str:
    return f"group {f.group} is still {f.kind.value}, for a different reason"


def _plan_changes(old: Iterable[GroupPlan], new: Iterable[GroupPlan]) -> tuple[PlanChange, ...]:
    before = {(p.cluster, p.group.name): p for p in old}
    after = {(p.cluster, p.group.name): p for p in new}
    out = []
    for key in sorted(before.keys() | after.keys()):
        b, a = before.get(key), after.get(key)
        headline = _plan_headline(b, a)
        if headline:
            out.append(PlanChange(key[0], key[1], headline, _fix(b), _fix(a)))
    return tuple(out)


def _fix(p: GroupPlan | None) -> str:
    return p.describe_fix() if p is not None else "none: the group is not in the config"


def _plan_headline(b: GroupPlan | None, a: GroupPlan | None) -> str:
    """Refusals, domain moves, groups coming and going; tolerations and identity show in
    the policies themselves."""
    if a is None:
        return f"group {b.group.name} is no longer in the config" if b is not None else ""
    name = a.group.name
    if a.refused and not (b is not None and b.refused):
        return f"group {name} can no longer be enforced: its policies are not rendered"
    if a.refused or not a.enforceable:
        if b is not None and b.enforceable:
            return f"group {name} has no jobs to plan for: its policies are not rendered"
        return ""
    if b is None:
        return f"group {name} is new: confined to {_where(a)}"
    if b.refused or not b.enforceable:
        return (
            f"group {name} can be enforced again: confined to {_where(a)}"
            if b.refused
            else (f"group {name} has jobs to plan for: confined to {_where(a)}")
        )
    if b.domain == a.domain and b.zones != a.zones:
        return (
            f"domain {a.domain} of group {name} now spans [{', '.join(a.zones)}] "
            f"(was [{', '.join(b.zones)}])"
        )
    if b.domain != a.domain:
        return f"group {name} moves from {_where(b)} to {_where(a)}"
    return ""


def _where(p: GroupPlan) -> str:
    if p.zones == (p.domain,):
        return p.domain or ""
    return f"{p.domain} [{', '.join(p.zones)}]"
