"""The pure comparison: two parsed trees (and, when known, two analyses) -> a DiffReport."""

from __future__ import annotations

from collections.abc import Iterable

from topogen.diff.changes import DiffReport, ObjectChange, Tree, TreeEntry
from topogen.diff.compare import compare
from topogen.diff.delta import analysis_delta
from topogen.diff.meaning import added_notes, changed_notes, removed_notes, subject
from topogen.diff.review import Rendered, cluster_reviews
from topogen.pipeline.analyze import AnalysisReport

__all__ = ["diff"]


def diff(
    old: Tree,
    new: Tree,
    *,
    old_analysis: AnalysisReport | None = None,
    new_analysis: AnalysisReport | None = None,
    old_label: str = "old",
    new_label: str = "new",
    old_what: str = "",
    new_what: str = "",
    warnings: Iterable[str] = (),
    rendered: Rendered | None = None,
) -> DiffReport:
    """What differs between two rendered trees, and what it means.

    The analysis delta is computed only when both analyses are given (both
    inputs are known); otherwise the report's `analysis` is None.
    """
    changes: list[ObjectChange] = []
    for key in sorted(old.entries.keys() | new.entries.keys(), key=lambda k: k.sort_key()):
        b, a = old.entries.get(key), new.entries.get(key)
        change = _object_change(b, a)
        if change is not None:
            changes.append(change)
    delta = (
        analysis_delta(old_analysis, new_analysis)
        if old_analysis is not None and new_analysis is not None
        else None
    )
    notes = [*warnings, *(f"old: {w}" for w in old.warnings), *(f"new: {w}" for w in new.warnings)]
    refused = tuple(
        line for lines in (rendered.refused if rendered else {}).values() for line in lines
    )
    return DiffReport(
        old_label,
        new_label,
        tuple(changes),
        delta,
        tuple(dict.fromkeys(notes)),
        old_what,
        new_what,
        cluster_reviews(old, new, rendered),
        refused,
    )


def _object_change(b: TreeEntry | None, a: TreeEntry | None) -> ObjectChange | None:
    if a is not None and b is None:
        return ObjectChange(
            a.key, "added", None, a.path, subject(a.data, a.key.describe()), added_notes(a.data)
        )
    if b is not None and a is None:
        return ObjectChange(
            b.key, "removed", b.path, None, subject(b.data, b.key.describe()), removed_notes(b.data)
        )
    assert a is not None and b is not None
    fields = compare(b.data, a.data)
    if not fields:
        return None
    return ObjectChange(
        a.key,
        "changed",
        b.path,
        a.path,
        subject(a.data, a.key.describe()),
        changed_notes(b.data, a.data),
        fields,
    )
