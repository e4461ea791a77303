"""Wording and value display shared by the formatters (no format-specific syntax here)."""

from __future__ import annotations

import json
import re
from difflib import SequenceMatcher
from typing import Any

from topogen.diff.changes import DiffReport, FieldChange, FindingChange, ObjectChange

__all__ = [
    "excerpt_pair",
    "field_lines",
    "finding_label",
    "meaning",
    "show",
    "summary_parts",
]

_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
CONTEXT = 32  # characters of unchanged text kept around a change
MAX_VALUE = 300  # characters of one value shown (JSON keeps everything)
MAX_HUNKS = 4
SHORT = 120  # strings up to this long are shown whole


def show(value: Any, limit: int = MAX_VALUE) -> str:
    """A value on one line: strings as they are, anything else as compact JSON."""
    if isinstance(value, str) and value and "\n" not in value and value.strip() == value:
        text = value
    else:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return _cut(text, limit)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit} more characters)"


def excerpt_pair(old: str, new: str) -> tuple[str, str]:
    """The changed parts of two long strings (CEL expressions), with a little context."""
    if len(old) <= SHORT and len(new) <= SHORT:
        return old, new
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    head = 0  # common leading and trailing tokens: no need to match them
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    matcher = SequenceMatcher(
        None, a[head : len(a) - tail], b[head : len(b) - tail], autojunk=False
    )
    ops = [
        (tag, i1 + head, i2 + head, j1 + head, j2 + head)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]
    if not ops:
        return _cut(old, MAX_VALUE), _cut(new, MAX_VALUE)
    apos, bpos = _offsets(a), _offsets(b)
    hunks: list[list[int]] = []  # [a_start, a_end, b_start, b_end] in characters
    for _, i1, i2, j1, j2 in ops:
        span = [apos[i1], apos[i2], bpos[j1], bpos[j2]]
        if hunks and span[0] - hunks[-1][1] <= 2 * CONTEXT:
            hunks[-1][1], hunks[-1][3] = span[1], span[3]
        else:
            hunks.append(span)
    more = len(hunks) - MAX_HUNKS
    shown = hunks[:MAX_HUNKS]
    olds = [_window(old, h[0], h[1]) for h in shown]
    news = [_window(new, h[2], h[3]) for h in shown]
    rest = f" (+{more} more changes)" if more > 0 else ""
    return " ".join(olds) + rest, " ".join(news) + rest


def _offsets(tokens: list[str]) -> list[int]:
    out, pos = [0], 0
    for t in tokens:
        pos += len(t)
        out.append(pos)
    return out


def _window(text: str, start: int, end: int) -> str:
    lo, hi = max(0, start - CONTEXT), min(len(text), end + CONTEXT)
    middle = text[lo:hi]
    if len(middle) > MAX_VALUE:
        middle = middle[:MAX_VALUE] + f"… ({len(middle) - MAX_VALUE} more characters)"
    return ("…" if lo > 0 else "") + middle + ("…" if hi < len(text) else "")


def field_lines(
    change: FieldChange, limit: int = MAX_VALUE, excerpt: int = 10 * MAX_VALUE
) -> tuple[str, list[str], list[str]]:
    """(header, old lines, new lines) for one field change; values cut to `limit`, the
    changed parts of two long strings to `excerpt`."""
    if change.op == "reordered":
        return f"{change.path or '(the list)'} (order changed)", [], []
    if change.op == "added":
        return f"{change.path} (added)", [], [show(change.new, limit)]
    if change.op == "removed":
        return f"{change.path} (removed)", [show(change.old, limit)], []
    if isinstance(change.old, str) and isinstance(change.new, str):
        o, n = excerpt_pair(change.old, change.new)
        return change.path, [show(o, excerpt)], [show(n, excerpt)]
    return change.path, [show(change.old, limit)], [show(change.new, limit)]


def meaning(change: ObjectChange, max_fields: int = 3) -> str:
    """One line: what the change means, or which fields changed; the subject leads when it
    says more than the object's name (`coordinator of ml-training`)."""
    if change.notes:
        what = "; ".join(change.notes)
    elif change.status == "added":
        what = "new"
    elif change.status == "removed":
        what = "no longer rendered"
    else:
        paths = [f.path for f in change.fields]
        listed = ", ".join(paths[:max_fields]) + (", …" if len(paths) > max_fields else "")
        n = len(paths)
        what = f"{n} field{'s' if n != 1 else ''} changed ({listed})"
    return what if change.subject == change.key.describe() else f"{change.subject}: {what}"


FINDING_STATUS = {
    ("appears", True): "new problem",
    ("disappears", True): "resolved",
    ("changes", True): "problem changed",
    ("appears", False): "new finding",
    ("disappears", False): "finding gone",
    ("changes", False): "finding changed",
}


def finding_label(f: FindingChange) -> str:
    if f.problem and f.status == "appears" and not f.new_problem:
        return "known problem"
    return FINDING_STATUS[(f.status, f.problem)]


def summary_parts(report: DiffReport) -> tuple[str | None, str]:
    """(analysis summary or None when unknown, output summary)."""
    analysis = None
    if report.analysis is not None:
        counts: dict[str, int] = {}
        for f in report.analysis.findings:
            label = finding_label(f)
            counts[label] = counts.get(label, 0) + 1
        parts = [f"{n} {label}" for label, n in counts.items()]
        if report.analysis.plans:
            n = len(report.analysis.plans)
            parts.append(f"{n} plan change{'s' if n != 1 else ''}")
        analysis = ", ".join(parts) if parts else "no change"
    output = (
        ", ".join(f"{report.count(s)} {s}" for s in ("added", "removed", "changed"))
        if report.objects
        else "no change"
    )
    return analysis, output
