"""What a reviewer reads first, in words any format prints: the verdict line, each
cluster's placement table (before -> after, GPUs left per domain), what mutation and
validation now do differently, the refusals, render's warnings, and the findings in one
line. Markdown and text format the same parts."""

from __future__ import annotations

from topogen.diff.changes import ClusterReview, DiffReport, FindingChange

__all__ = ["findings_line", "free_line", "unfixed", "verdict", "verdict_of"]

MARK = {"new": "new", "kept": "kept", "moved": "moved", "removed": "removed", "refused": "refused"}


def verdict_of(r: ClusterReview) -> str:
    """`prod-east · Audit · risk: 1 re-pin (research/bert-large)`."""
    action = r.actions[1] or r.actions[0] or "no policies"
    if r.actions[0] and r.actions[1] and r.actions[0] != r.actions[1]:
        action = f"{r.actions[0]} -> {r.actions[1]}"
    risk = "; ".join(r.risks) if r.risks else "none"
    if r.refused:
        risk = f"render refused ({len(r.refused)}), nothing written" + (
            "; " + "; ".join(x for x in r.risks if not x.startswith("refused: "))
            if len(r.risks) > len(r.refused)
            else ""
        )
    return f"{r.cluster} · {action} · risk: {risk}"


def verdict(report: DiffReport) -> str:
    if not report.reviews:
        if report.refused:
            return f"render refused: {'; '.join(report.refused)}"
        return "no cluster's policies in either tree" if report.empty else "no cluster's policies"
    return " | ".join(verdict_of(r) for r in report.reviews)


def free_line(r: ClusterReview) -> str:
    """`us-east-1a 2 -> 2 · us-east-1b 8 -> 0` (the GPUs left once the known jobs run)."""
    parts = []
    for domain, before, after in r.free:
        if before and after and before != after:
            parts.append(f"{domain} {before} -> {after}")
        else:
            parts.append(f"{domain} {after or before}")
    return " · ".join(parts)


def unfixed(f: FindingChange) -> bool:
    """A problem the new side renders no fix for, that this change brings or changes."""
    return f.problem and not f.fixed and f.status in ("appears", "changes")


def findings_line(report: DiffReport) -> str | None:
    """None when the analyses were not compared."""
    if report.analysis is None:
        return None
    fs = report.analysis.findings
    new = [f for f in fs if f.problem and f.new_problem]
    known = [f for f in fs if f.problem and f.status == "appears" and not f.new_problem]
    changed = [f for f in fs if f.problem and f.status == "changes" and not f.new_problem]
    gone = [f for f in fs if f.problem and f.status == "disappears"]
    parts = []
    if new:
        named = ", ".join(
            f"{f.kind} {f.cluster}/{f.group} job {f.namespace}/{f.job}" for f in new[:3]
        )
        parts.append(f"{len(new)} new problem{'s' if len(new) != 1 else ''} ({named})")
    else:
        parts.append("no new problem")
    if known:
        covered = sum(1 for f in known if f.fixed)
        parts.append(
            f"{len(known)} known problem{'s' if len(known) != 1 else ''} "
            f"({covered} covered by the rendered fix)"
        )
    if changed:
        parts.append(f"{len(changed)} known problem{'s' if len(changed) != 1 else ''} reworded")
    if gone:
        parts.append(f"{len(gone)} resolved")
    bad = [f for f in fs if unfixed(f)]
    if bad:
        parts.append(f"{len(bad)} without a rendered fix")
    return "; ".join(parts)
