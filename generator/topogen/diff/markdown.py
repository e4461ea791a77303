"""Markdown for pull-request comments: a summary table first, details in collapsible sections.

The report is built from whole blocks (a table row, a <details> section) and cut
between blocks when it would pass the size cap, so it stays valid Markdown: a cut
never falls inside a table cell, a code fence or a details block. A notice says
what was cut.
"""

from __future__ import annotations

import html
import re

from topogen.diff.changes import DiffReport, FindingChange, ObjectChange, PlanChange
from topogen.diff.present import field_lines, finding_label, meaning, summary_parts

__all__ = ["MARKDOWN_CAP", "to_markdown"]

MARKDOWN_CAP = 60_000  # GitHub rejects comments over 65,536 characters; keep a margin
MAX_FIELDS = 40  # field changes shown per object
MAX_CELL = 300
_NOTICE_ROOM = 600
_ESCAPE = re.compile(r"([\\`*_\[\]<|$~])")
_LINE_START = re.compile(r"^(\d*)([>#=+.)-])")


def to_markdown(report: DiffReport, max_chars: int = MARKDOWN_CAP) -> str:
    head = _head(report)
    rows = [*_finding_rows(report), *_plan_rows(report), *_object_rows(report)]
    sections = [*_finding_sections(report), *_plan_sections(report), *_object_sections(report)]
    out = head
    budget = max_chars - _NOTICE_ROOM
    shown_rows = 0
    if rows:
        table = _TABLE_HEAD
        for row in rows:
            if len(out) + len(table) + len(row) + 1 > budget:
                break
            table += row
            shown_rows += 1
        if shown_rows:
            out += table + "\n"
    shown_sections = 0
    if shown_rows == len(rows) and sections:
        details = "### Details\n\n"
        for section in sections:
            if len(out) + len(details) + len(section) > budget:
                break
            details += section
            shown_sections += 1
        if shown_sections:
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
        f"**Old:** {_code(report.old_label, False)}{_what(report.old_what)} · "
        f"**New:** {_code(report.new_label, False)}{_what(report.new_what)}",
        "",
    ]
    if report.empty:
        lines += [
            "**No differences**: the generated output means the same"
            + (" and the analysis finds the same." if report.analysis is not None else ".")
        ]
    else:
        analysis, output = summary_parts(report)
        summary = f"**Generated output:** {_text(output)}."
        if analysis is not None:
            summary = f"**Analysis:** {_text(analysis)}. " + summary
        lines.append(summary)
    if report.analysis is None:
        lines += [
            "",
            "_No analysis delta: the old inputs are not known "
            "(compare with `--against GIT_REF` for one)._",
        ]
    for w in report.warnings[:20]:
        lines += ["", f"> **Note:** {_text(w)}"]
    if len(report.warnings) > 20:
        lines += ["", f"> **Note:** {len(report.warnings) - 20} more notes not shown."]
    return "\n".join(lines) + "\n\n"


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


# -- summary rows ---------------------------------------------------------------------------


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |\n"


def _finding_rows(report: DiffReport) -> list[str]:
    if report.analysis is None:
        return []
    return [
        _row(
            f"**{finding_label(f)}**" if f.problem and f.status == "appears" else finding_label(f),
            _code(f.kind),
            _cell(f"{f.cluster}/{f.group}, job {f.namespace}/{f.job}"),
            _cell(f"{f.headline}: {f.message}"),
        )
        for f in report.analysis.findings
    ]


def _plan_rows(report: DiffReport) -> list[str]:
    if report.analysis is None:
        return []
    return [
        _row("plan", _cell(f"group {p.group}"), _cell(p.cluster), _cell(p.headline))
        for p in report.analysis.plans
    ]


def _object_groups(report: DiffReport) -> list[list[ObjectChange]]:
    """Neighbouring objects of one folder whose change means the same share a row."""
    groups: list[list[ObjectChange]] = []
    for o in report.objects:
        last = groups[-1][0] if groups else None
        if (
            last is not None
            and last.status == o.status
            and last.key.location == o.key.location
            and last.subject == last.key.describe()
            and o.subject == o.key.describe()
            and meaning(last) == meaning(o)
        ):
            groups[-1].append(o)
        else:
            groups.append([o])
    return groups


def _object_rows(report: DiffReport) -> list[str]:
    rows = []
    for group in _object_groups(report):
        o = group[0]
        if len(group) == 1:
            what = _object_cell(o)
        else:
            names = ", ".join(_object_cell(g) for g in group[:3])
            what = f"{len(group)} objects: {names}" + (", …" if len(group) > 3 else "")
        rows.append(_row(o.status, what, _code(o.key.location or "."), _cell(meaning(o))))
    return rows


def _object_cell(o: ObjectChange) -> str:
    k = o.key
    if not k.is_object:
        return _code(k.file)
    ns = f"{k.namespace}/" if k.namespace else ""
    extra = f" ({_text(k.file)})" if k.file else ""
    return f"{_text(k.kind)} {_code(ns + k.name)}{extra}"


# -- details --------------------------------------------------------------------------------


def _details(summary: str, body: str) -> str:
    return f"<details>\n<summary>{summary}</summary>\n\n{body.rstrip()}\n\n</details>\n\n"


def _finding_sections(report: DiffReport) -> list[str]:
    if report.analysis is None:
        return []
    return [_finding_section(f) for f in report.analysis.findings]


def _finding_section(f: FindingChange) -> str:
    summary = html.escape(
        f"{finding_label(f)}: {f.kind} · {f.cluster}/{f.group} · job {f.namespace}/{f.job}"
    )
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


def _object_sections(report: DiffReport) -> list[str]:
    out = []
    for group in _object_groups(report):
        if len(group) > 1 and not any(o.fields for o in group):
            out.append(_group_section(group))
        else:
            out += [_object_section(o) for o in group]
    return out


def _group_section(group: list[ObjectChange]) -> str:
    first = group[0]
    where = first.key.location or "."
    summary = html.escape(f"{first.status}: {len(group)} objects · {where}")
    body = [f"**{_text(meaning(first))}**", ""]
    body += [
        f"- {_object_cell(o)} in {_code(o.new_path or o.old_path or '', False)}" for o in group
    ]
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
    if o.fields:
        lines: list[str] = []
        for change in o.fields[:MAX_FIELDS]:
            header, old, new = field_lines(change)
            lines.append(f"@@ {header} @@")
            lines += [f"- {v}" for v in old] + [f"+ {v}" for v in new]
        body.append(_fence("\n".join(lines), "diff"))
        more = len(o.fields) - MAX_FIELDS
        if more > 0:
            body += ["", f"… and {more} more field changes (`-o json` lists them all)."]
    return _details(summary, "\n".join(body))


# -- escaping -------------------------------------------------------------------------------


def _text(s: str) -> str:
    """Literal text in Markdown: punctuation escaped, HTML neutralised, one line."""
    s = " ".join(s.split()).replace("&", "&amp;")
    return _LINE_START.sub(r"\1\\\2", _ESCAPE.sub(r"\\\1", s))


def _cell(s: str) -> str:
    s = " ".join(s.split())
    if len(s) > MAX_CELL:
        s = s[:MAX_CELL].rsplit(" ", 1)[0] + " …"
    return _text(s)


def _code(s: str, cell: bool = True) -> str:
    """An inline code span that survives any backticks in s (and, in a table, its pipes)."""
    s = " ".join(s.split())
    if cell:
        s = s.replace("|", "\\|")
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


def _fence(body: str, lang: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`{3,}", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{body}\n{fence}"
