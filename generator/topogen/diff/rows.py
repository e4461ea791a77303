"""The file-level rows of a report, with the noise taken out: ordered by what they change
(policies, workload patches, kustomize, monitoring, tests), the generated CLI tests folded
to one row per folder, alert text and the rules file that repeats the PrometheusRule
folded to one row, neighbours that mean the same merged, and an engine switch said once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from topogen.diff.changes import ClusterReview, DiffReport, ObjectChange
from topogen.diff.present import meaning
from topogen.model import LAST_PLACEMENTS_FILE

__all__ = ["CATEGORIES", "Row", "file_rows"]

CATEGORIES = ("policies", "workload patches", "kustomize", "monitoring", "tests", "other")


@dataclass(frozen=True)
class Row:
    category: str
    status: str  # added | removed | changed | switched
    what: str  # the object(s), plain text
    where: str  # the folder
    meaning: str
    objects: tuple[ObjectChange, ...]


def category(o: ObjectChange) -> str:
    parts = o.key.location.split("/")
    if "tests" in parts:
        return "tests"
    if parts[0] == "policies":
        return "policies"
    if parts[:3] == ["kustomize", "components", "workload-patches"]:
        return "workload patches"
    if parts[0] in ("kustomize", "monitoring"):
        return parts[0]
    return "other"


def file_rows(report: DiffReport) -> list[Row]:
    switched, rest = _engine_switches(report)
    if report.reviews:  # the placement table says what the placements file changes
        rest = [o for o in rest if not (o.key.file == LAST_PLACEMENTS_FILE and not o.key.kind)]
    rows = [*switched, *_tests(rest), *_monitoring(rest), *_others(rest)]
    order = {c: i for i, c in enumerate(CATEGORIES)}
    return sorted(rows, key=lambda r: (order[r.category], r.where, r.what))


def _engine_switches(report: DiffReport) -> tuple[list[Row], list[ObjectChange]]:
    """Per cluster whose engines changed: one row for both engine folders."""
    rows: list[Row] = []
    taken: set[int] = set()
    for r in report.reviews:
        before, after = r.engines
        if not before or not after or before == after:
            continue
        gone = [e for e in before if e not in after]
        came = [e for e in after if e not in before]
        folders = {f"policies/{r.cluster}/{e}" for e in (*gone, *came)}
        mine = [
            (i, o)
            for i, o in enumerate(report.objects)
            if any(o.key.location == f or o.key.location.startswith(f + "/") for f in folders)
        ]
        taken |= {i for i, _ in mine}
        rows.append(
            Row(
                "policies",
                "switched",
                f"engine {', '.join(gone) or '-'} -> {', '.join(came) or '-'} "
                f"({len(mine)} objects)",
                f"policies/{r.cluster}",
                _switch_meaning(r),
                tuple(o for _, o in mine),
            )
        )
    return rows, [o for i, o in enumerate(report.objects) if i not in taken]


def _switch_meaning(r: ClusterReview) -> str:
    before, after = r.failure_policies
    fb = "/".join(sorted(set(before.values()))) or "?"
    fa = "/".join(sorted(set(after.values()))) or "?"
    same = (
        "same meaning"
        if r.actions[0] == r.actions[1]
        else (f"validation {r.actions[0]} -> {r.actions[1]}")
    )
    failure = f"failure policy {fb} -> {fa}" if fb != fa else f"failure policy {fa}"
    if fa == "Ignore" and fb != "Ignore":
        failure += " (fails open: while the webhook is down pods are admitted unconstrained)"
    return f"{same}; {failure}"


def _tests(objects: Sequence[ObjectChange]) -> list[Row]:
    """One row per test folder (the CLI tests follow the policies they test)."""
    groups: dict[str, list[ObjectChange]] = {}
    for o in objects:
        if category(o) == "tests":
            parts = o.key.location.split("/")
            groups.setdefault("/".join(parts[: parts.index("tests") + 1]), []).append(o)
    rows = []
    for where, changes in sorted(groups.items()):
        counts = {
            s: sum(1 for o in changes if o.status == s) for s in ("added", "changed", "removed")
        }
        said = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
        rows.append(
            Row(
                "tests",
                "changed",
                f"{len(changes)} test fixture{'s' if len(changes) != 1 else ''} ({said})",
                where,
                "the generated CLI tests follow the policies above",
                tuple(changes),
            )
        )
    return rows


def _alert_text_only(o: ObjectChange) -> bool:
    return bool(o.fields) and all(".annotations." in f".{f.path}" for f in o.fields)


def _monitoring(objects: Sequence[ObjectChange]) -> list[Row]:
    """Per folder: the PrometheusRule and the rules file that repeats it, one row."""
    groups: dict[str, list[ObjectChange]] = {}
    for o in objects:
        if category(o) == "monitoring":
            groups.setdefault(o.key.location, []).append(o)
    rows = []
    for where, changes in sorted(groups.items()):
        rule = [o for o in changes if o.key.kind == "PrometheusRule"]
        copy = [o for o in changes if o.key.file == "rules.yaml"]
        rest = [o for o in changes if o not in rule and o not in copy]
        rows += [_single(o) for o in rest]
        pair = rule + copy
        if not pair:
            continue
        names = " and ".join(_name(o) for o in pair)
        if all(_alert_text_only(o) for o in pair):
            n = max(len(o.fields) for o in pair)
            what = f"alert text: {n} description{'s' if n != 1 else ''} name other zones or jobs"
        else:
            what = meaning(pair[0])
        rows.append(Row("monitoring", pair[0].status, names, where, what, tuple(pair)))
    return rows


def _others(objects: Sequence[ObjectChange]) -> list[Row]:
    """The rest, one row per object; neighbours of one folder that mean the same merged."""
    rows: list[Row] = []
    for o in objects:
        if category(o) in ("tests", "monitoring"):
            continue
        row = _single(o)
        last = rows[-1] if rows else None
        if (
            last is not None
            and last.status == row.status
            and last.where == row.where
            and last.meaning == row.meaning
        ):
            merged = (*last.objects, o)
            names = ", ".join(_name(m) for m in merged[:3]) + (", …" if len(merged) > 3 else "")
            rows[-1] = Row(last.category, last.status, f"{len(merged)} objects: {names}",
                           last.where, last.meaning, merged)  # fmt: skip
        else:
            rows.append(row)
    return rows


def _single(o: ObjectChange) -> Row:
    return Row(category(o), o.status, _name(o), o.key.location or ".", meaning(o), (o,))


def _name(o: ObjectChange) -> str:
    k = o.key
    if not k.is_object:
        return k.file
    ns = f"{k.namespace}/" if k.namespace else ""
    return f"{k.kind} {ns}{k.name}" + (f" ({k.file})" if k.file else "")
