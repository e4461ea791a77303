"""Plain text for terminals."""

from __future__ import annotations

from topogen.diff.model import DiffReport
from topogen.diff.present import field_lines, finding_label, meaning, summary_parts

__all__ = ["to_text"]

_MARK = {"added": "+", "removed": "-", "changed": "~"}
_FINDING_MARK = {"appears": "+", "disappears": "-", "changes": "~"}


def to_text(report: DiffReport, *, fields: bool = True) -> str:
    lines = [
        "topogen diff",
        f"  old: {report.old_label}" + (f" ({report.old_what})" if report.old_what else ""),
        f"  new: {report.new_label}" + (f" ({report.new_what})" if report.new_what else ""),
    ]
    analysis, output = summary_parts(report)
    if report.empty:
        lines.append("no differences")
    lines.append(
        f"analysis: {analysis}"
        if analysis is not None
        else "analysis: not compared (the old inputs are not known; use --against GIT_REF)"
    )
    lines.append(f"output: {output}")
    lines += [f"note: {w}" for w in report.warnings]
    if report.analysis is not None and not report.analysis.empty:
        lines += ["", "ANALYSIS"]
        for f in report.analysis.findings:
            lines.append(
                f"  {_FINDING_MARK[f.status]} {f.kind}  {f.cluster}/{f.group}  "
                f"job {f.namespace}/{f.job}  ({finding_label(f)})"
            )
            lines.append(f"      {f.headline}: {f.message}")
            if f.status == "changes":
                lines.append(f"      before: {f.old_message}")
        for p in report.analysis.plans:
            lines.append(f"  ~ plan  {p.cluster}/{p.group}: {p.headline}")
            lines.append(f"      before: {p.old}")
            lines.append(f"      now:    {p.new}")
    if report.objects:
        lines += ["", "OUTPUT"]
        for o in report.objects:
            lines.append(f"  {_MARK[o.status]} {o.key.describe()}  {o.key.location or '.'}")
            lines.append(f"      {meaning(o)}")
            if not fields:
                continue
            for change in o.fields:
                header, old, new = field_lines(change)
                lines.append(f"      @ {header}")
                lines += [f"        - {v}" for v in old] + [f"        + {v}" for v in new]
    return "\n".join(lines) + "\n"
