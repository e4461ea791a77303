"""Plain text for terminals."""

from __future__ import annotations

from topogen.diff.changes import DiffReport, ObjectChange
from topogen.diff.first_screen import findings_line, free_line, verdict
from topogen.diff.present import field_lines, finding_label, meaning, summary_parts
from topogen.textui import paint

__all__ = ["to_text"]

_MARK = {"added": "+", "removed": "-", "changed": "~"}
_FINDING_MARK = {"appears": "+", "disappears": "-", "changes": "~"}


def to_text(report: DiffReport, *, fields: bool = True, colour: bool = False) -> str:
    """The report for a terminal; `colour`: + green, - red, ~ yellow."""
    return _painted(_text(report, fields), colour)


_MARK_STYLE = {"+": "green", "-": "red", "~": "yellow"}


def _painted(text: str, colour: bool) -> str:
    if not colour:
        return text
    out = []
    for line in text.split("\n"):
        body = line.lstrip(" ")
        mark = body[:1]
        if mark in _MARK_STYLE and body[1:2] == " ":
            pad = line[: len(line) - len(body)]
            line = pad + paint(mark, _MARK_STYLE[mark], True) + body[1:]
        out.append(line)
    return "\n".join(out)


def _text(report: DiffReport, fields: bool) -> str:
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
    lines.append(f"verdict: {verdict(report)}")
    for r in report.reviews:
        lines += [f"  {r.cluster}:"]
        lines += [
            f"    {row.job} ({row.gpus} GPUs) {row.before or 'none'} -> {row.after or 'none'}: "
            f"{row.status}" + (f" ({row.reason})" if row.reason else "")
            for row in r.rows
        ]
        if r.free:
            lines.append(f"    free GPUs: {free_line(r)}")
        lines += [f"    mutation: {r.mutation}", f"    validation: {r.validation}"]
        lines += [f"    refused: {x}" for x in r.refused]
        lines += [f"    render warns: {w}" for w in r.warnings]
    said = findings_line(report)
    if said is not None:
        lines.append(f"findings: {said}")
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
    fixtures = [o for o in report.objects if _fixture(o)]
    if report.objects:
        lines += ["", "OUTPUT"]
        for o in report.objects:
            if _fixture(o):
                continue
            lines.append(f"  {_MARK[o.status]} {o.key.describe()}  {o.key.location or '.'}")
            lines.append(f"      {meaning(o)}")
            if not fields:
                continue
            for change in o.fields:
                header, old, new = field_lines(change)
                lines.append(f"      @ {header}")
                lines += [f"        - {v}" for v in old] + [f"        + {v}" for v in new]
        lines += _fixture_lines(fixtures)
    return "\n".join(lines) + "\n"


def _fixture(o: ObjectChange) -> bool:
    """An object of a generated CLI test folder (sample pods and their expected results)."""
    return o.key.is_object and "tests" in o.key.location.split("/")


def _fixture_lines(fixtures: list[ObjectChange]) -> list[str]:
    """Test fixtures grouped: one line per folder, change and kind (`-o json` lists each)."""
    groups: dict[tuple[str, str, str], list[ObjectChange]] = {}
    for o in fixtures:
        groups.setdefault((o.key.location, o.status, o.key.kind), []).append(o)
    lines = []
    for (location, status, kind), changes in sorted(groups.items()):
        names = sorted({o.key.name for o in changes})
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        noun = kind if len(changes) == 1 else f"{kind}s"
        lines.append(
            f"  {_MARK[status]} {len(changes)} {noun} {status} (test fixtures: {shown})  {location}"
        )
        said = list(dict.fromkeys(meaning(o) for o in changes))  # what they mean, once each
        lines += [f"      {m}" for m in said[:5]]
        if len(said) > 5:
            lines.append(f"      ... and {len(said) - 5} more (`-o json` lists them all)")
    return lines
