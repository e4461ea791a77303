"""Markdown for pull-request comments: the reviewer's summary first (the verdict line, each
cluster's placement table and free GPUs, what mutation and validation now do and by which
component, refusals and render's warnings, the findings in one line), then the file-level
table folded, then details in collapsible sections.

The report is built from whole blocks (a table row, a <details> section) and cut
between blocks when it would pass the size cap, so it stays valid Markdown: a cut
never falls inside a table cell, a code fence or a details block. A notice says
what was cut.
"""

from __future__ import annotations

import html

from topogen.diff.changes import ClusterReview, DiffReport, FindingChange, ObjectChange, PlanChange
from topogen.diff.first_screen import findings_line, free_line, verdict
from topogen.diff.mdtext import cell as _cell
from topogen.diff.mdtext import code as _code
from topogen.diff.mdtext import details as _details
from topogen.diff.mdtext import fence as _fence
from topogen.diff.mdtext import text as _text
from topogen.diff.present import field_lines, finding_label, summary_parts
from topogen.diff.rows import Row, file_rows

__all__ = ["MARKDOWN_CAP", "to_markdown"]

MARKDOWN_CAP = 60_000  # GitHub rejects comments over 65,536 characters; keep a margin
MAX_FIELDS = 40  # field changes shown per object
MAX_VALUE = 160  # characters of one value shown in a field diff (`-o json` has them whole)
MAX_WARNINGS = 5  # render's warnings shown on the first screen
_NOTICE_ROOM = 600


def to_markdown(report: DiffReport, max_chars: int = MARKDOWN_CAP) -> str:
    head = _head(report)
    grouped = file_rows(report)
    findings = _finding_groups(report)
    rows = [*_finding_rows(findings), *_plan_rows(report), *(_object_row(r) for r in grouped)]
    sections = [
        *(_finding_section(g) for g in findings if g[0].new_problem or not g[0].fixed),
        *(_plan_sections(report) if not report.reviews else []),
        *_row_sections(grouped),
    ]
    out = head
    budget = max_chars - _NOTICE_ROOM
    shown_rows = 0
    if rows:
        table = f"<details>\n<summary>{html.escape(_files_summary(report, grouped))}</summary>\n\n"
        table += _TABLE_HEAD
        closing = "\n</details>\n\n"
        for row in rows:
            if len(out) + len(table) + len(row) + len(closing) > budget:
                break
            table += row
            shown_rows += 1
        if shown_rows:
            out += table + closing
    shown_sections = 0
    if shown_rows == len(rows) and sections:
        details = ""
        for section in sections:
            if len(out) + len(details) + len(section) > budget:
                break
            details += section
            shown_sections += 1
        out += details
    cut_rows, cut_sections = len(rows) - shown_rows, len(sections) - shown_sections
    if cut_rows or cut_sections:
        out += _notice(cut_rows, cut_sections, max_chars)
    return out


_TABLE_HEAD = "| Change | Object | Where | What it means |\n|:--|:--|:--|:--|\n"


def _head(report: DiffReport) -> str:
    lines = [
        "## topogen diff",
        "",
        f"**Verdict:** {_text(verdict(report))}",
        "",
        f"{_code(report.old_label, False)}{_what(report.old_what)} → "
        f"{_code(report.new_label, False)}{_what(report.new_what)}",
        "",
    ]
    if report.empty:
        lines += [
            "**No differences**: the generated output means the same"
            + (" and the analysis finds the same." if report.analysis is not None else "."),
            "",
        ]
    for r in report.reviews:
        lines += _cluster_summary(r)
    said = findings_line(report)
    if said is not None:
        lines += [f"**Findings:** {_text(said)}.", ""]
    else:
        lines += [
            "_Findings not compared: the old inputs are not known "
            "(compare with `--against GIT_REF` for them)._",
            "",
        ]
    for w in report.warnings[:20]:
        lines += [f"> **Note:** {_text(w)}", ""]
    if len(report.warnings) > 20:
        lines += [f"> **Note:** {len(report.warnings) - 20} more notes not shown.", ""]
    return "\n".join(lines) + "\n"


_ORDER = {"refused": 0, "moved": 1, "new": 2, "removed": 3, "kept": 4}


def _cluster_summary(r: ClusterReview) -> list[str]:
    engines = ", ".join(r.engines[1] or r.engines[0]) or "no engine"
    lines = [f"#### {_text(r.cluster)} · {_text(engines)}", ""]
    if r.rows:
        lines += ["| Job | GPUs | Before | After | Change |", "|:--|--:|:--|:--|:--|"]
        for row in sorted(r.rows, key=lambda x: (_ORDER[x.status], x.job)):
            status = row.status if row.status == "kept" else f"**{row.status}**"
            if row.reason:
                status += f": {_cell(row.reason)}"
            if row.queued:
                status += " (queued: waits for GPUs)"
            lines.append(
                f"| {_code(row.job)} | {_cell(row.gpus)} | {_cell(row.before or 'none')} | "
                f"{_cell(row.after or 'none')} | {status} |"
            )
        lines.append("")
    if r.free:
        lines += [f"**Free GPUs** once the known jobs run: {_text(free_line(r))}", ""]
    lines += [f"- **Mutation**: {_text(r.mutation)}", f"- **Validation**: {_text(r.validation)}"]
    lines += [f"- **Refused**: {_cell(x)}" for x in r.refused]
    lines += [f"- **Render warns**: {_cell(w)}" for w in r.warnings[:MAX_WARNINGS]]
    if len(r.warnings) > MAX_WARNINGS:
        more = len(r.warnings) - MAX_WARNINGS
        lines.append(f"- {more} more warnings: `topogen render` prints them all")
    return [*lines, ""]


def _files_summary(report: DiffReport, rows: list[Row]) -> str:
    _, output = summary_parts(report)
    cats: dict[str, int] = {}
    for r in rows:
        cats[r.category] = cats.get(r.category, 0) + len(r.objects)
    said = ", ".join(f"{c} {n}" for c, n in cats.items())
    return f"Files: {output}" + (f" ({said})" if said else "")


def _what(what: str) -> str:
    return f" ({_text(what)})" if what else ""


def _notice(rows: int, sections: int, cap: int) -> str:
    parts = []
    if rows:
        parts.append(f"{rows} summary row{'s' if rows != 1 else ''}")
    if sections:
        parts.append(f"{sections} detail section{'s' if sections != 1 else ''}")
    return (
        f"> **Report cut** to stay under {cap:,} characters: {' and '.join(parts)} not shown. "
        "Run `topogen diff -o text` (or `-o json`) for the whole report.\n"
    )


# -- file-level rows ------------------------------------------------------------------------


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |\n"


FindingGroup = list[FindingChange]


def _finding_groups(report: DiffReport) -> list[FindingGroup]:
    """Findings of one group that say the same (status, kind, message) share a row."""
    if report.analysis is None:
        return []
    groups: dict[tuple[str, ...], FindingGroup] = {}
    for f in report.analysis.findings:
        key = (finding_label(f), f.kind, f.cluster, f.group, f.message)
        groups.setdefault(key, []).append(f)
    return list(groups.values())


def _jobs(group: FindingGroup) -> str:
    return ", ".join(f"{f.namespace}/{f.job}" for f in group)


def _finding_rows(groups: list[FindingGroup]) -> list[str]:
    out = []
    for g in groups:
        f = g[0]
        label = finding_label(f)
        out.append(
            _row(
                f"**{label}**" if f.new_problem else label,
                _code(f.kind),
                _cell(f"{f.cluster}/{f.group}, job{'s' if len(g) > 1 else ''} {_jobs(g)}"),
                _cell(f"{f.headline}: {f.message}"),
            )
        )
    return out


def _plan_rows(report: DiffReport) -> list[str]:
    if report.analysis is None:
        return []
    return [
        _row("plan", _cell(f"group {p.group}"), _cell(p.cluster), _cell(p.headline))
        for p in report.analysis.plans
    ]


def _object_row(r: Row) -> str:
    what = _text(r.what) if len(r.objects) != 1 else _object_cell(r.objects[0])
    return _row(r.status, what, _code(r.where), _cell(r.meaning))


def _object_cell(o: ObjectChange) -> str:
    k = o.key
    if not k.is_object:
        return _code(k.file)
    ns = f"{k.namespace}/" if k.namespace else ""
    extra = f" ({_text(k.file)})" if k.file else ""
    return f"{_text(k.kind)} {_code(ns + k.name)}{extra}"


# -- details --------------------------------------------------------------------------------


def _finding_section(g: FindingGroup) -> str:
    f = g[0]
    summary = html.escape(f"{finding_label(f)}: {f.kind} · {f.cluster}/{f.group} · {_jobs(g)}")
    body = [f"**{_text(f.headline)}**", "", _text(f.message)]
    if f.status == "changes":
        body += ["", f"Before: {_text(f.old_message)}"]
    if f.fix and f.status != "disappears":
        body += ["", f"Fix: {_text(f.fix)}"]
    return _details(summary, "\n".join(body))


def _plan_sections(report: DiffReport) -> list[str]:
    if report.analysis is None:
        return []
    return [_plan_section(p) for p in report.analysis.plans]


def _plan_section(p: PlanChange) -> str:
    summary = html.escape(f"plan: group {p.group} · {p.cluster}")
    body = [f"**{_text(p.headline)}**", "", f"Before: {_text(p.old)}", "", f"Now: {_text(p.new)}"]
    return _details(summary, "\n".join(body))


def _row_sections(rows: list[Row]) -> list[str]:
    """Per row: one section for a folded row (its objects listed), else the object's fields;
    a rules file that repeats its PrometheusRule is not shown twice."""
    out = []
    for r in rows:
        if r.category == "tests" or r.meaning.startswith("alert text"):
            continue  # the row says it all; `-o text` or `-o json` list them
        if len(r.objects) > 1 and (r.category == "policies" or not r.objects[0].fields):
            out.append(_group_section(r))
        else:
            out.append(_object_section(r.objects[0]))
    return out


def _group_section(r: Row) -> str:
    summary = html.escape(f"{r.status}: {r.what} · {r.where}")
    body = [f"**{_text(r.meaning)}**", ""]
    body += [
        f"- {o.status}: {_object_cell(o)} in {_code(o.new_path or o.old_path or '', False)}"
        for o in r.objects[:30]
    ]
    if len(r.objects) > 30:
        body.append(f"- … and {len(r.objects) - 30} more (`-o json` lists them all)")
    return _details(summary, "\n".join(body))


def _object_section(o: ObjectChange) -> str:
    where = o.key.location or "."
    summary = html.escape(f"{o.status}: {o.key.describe()} · {where}")
    body = [f"**{_text(o.subject)}**", ""]
    body += [f"- {_text(n)}" for n in o.notes] + ([""] if o.notes else [])
    if o.old_path and o.new_path and o.old_path != o.new_path:
        body += [f"File: {_code(o.old_path, False)} → {_code(o.new_path, False)}", ""]
    else:
        body += [f"File: {_code(o.new_path or o.old_path or '', False)}", ""]
    # fields the notes already say (the intent annotations) are not shown again; outside
    # the policies, where the notes say what changed, the paths are enough
    fields = [f for f in o.fields if not (o.notes and f.path.startswith("metadata.annotations"))]
    if fields and o.notes and not o.key.location.startswith("policies/"):
        fields = []  # the notes say what changed (`-o json` has every field)
    elif fields:
        lines: list[str] = []
        for change in fields[:MAX_FIELDS]:
            header, old, new = field_lines(change, MAX_VALUE, 2 * MAX_VALUE)
            lines.append(f"@@ {header} @@")
            lines += [f"- {v}" for v in old] + [f"+ {v}" for v in new]
        body.append(_fence("\n".join(lines), "diff"))
    more = len(fields) - MAX_FIELDS
    if more > 0:
        body += ["", f"… and {more} more field changes (`-o json` lists them all)."]
    return _details(summary, "\n".join(body))
