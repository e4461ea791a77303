"""Helpers for the diff tests: scenario reports, golden files, a Markdown structure check."""

from __future__ import annotations

import os
import re
from pathlib import Path

from diff.scenarios import SCENARIOS, build
from topogen.diff import DiffReport, Tree, diff, render_side

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("TOPOGEN_UPDATE_GOLDEN") == "1"


def policies_only(tree: Tree) -> Tree:
    """The admission policies and their tests: the goldens do not follow other backends."""
    entries = {k: e for k, e in tree.entries.items() if e.path.startswith("policies/")}
    return Tree(entries, tree.warnings)


def scenario_report(name: str, tmp_path: Path) -> DiffReport:
    old_edit, new_edit, _ = SCENARIOS[name]
    old = render_side(build(tmp_path / "old", old_edit) / "topogen.yaml")
    new = render_side(build(tmp_path / "new", new_edit) / "topogen.yaml")
    return diff(
        policies_only(old.tree),
        policies_only(new.tree),
        old_analysis=old.analysis,
        new_analysis=new.analysis,
        old_label=f"zone-split ({name}: before)",
        new_label=f"zone-split ({name}: after)",
        old_what="rendered",
        new_what="rendered",
    )


def check_golden(path: Path, actual: str) -> None:
    """Compare with the golden file; TOPOGEN_UPDATE_GOLDEN=1 rewrites it instead."""
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    assert path.is_file(), f"{path.name} is missing: run with TOPOGEN_UPDATE_GOLDEN=1"
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, (
        f"{path.name} differs from the golden file; if the change is intended, "
        "rerun with TOPOGEN_UPDATE_GOLDEN=1 and review the diff"
    )


_FENCE = re.compile(r"^(`{3,})")
_PIPE = re.compile(r"(?<!\\)\|")


def markdown_problems(text: str) -> list[str]:
    """Structural checks a GitHub comment needs: closed fences and details, whole tables."""
    problems: list[str] = []
    fence: str | None = None
    details = 0
    table_cells: int | None = None
    lines = text.split("\n")
    for n, line in enumerate(lines, 1):
        m = _FENCE.match(line)
        if fence is not None:
            if m and line.strip() == fence:
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        if line.startswith("<details>"):
            details += 1
            if details > 1:
                problems.append(f"line {n}: nested <details>")
        elif line.startswith("</details>"):
            details -= 1
            if details < 0:
                problems.append(f"line {n}: </details> without <details>")
        if line.startswith("|"):
            cells = len(_PIPE.findall(_without_code(line)))
            if table_cells is None:
                table_cells = cells
                if n > 1 and lines[n - 2].strip():
                    problems.append(f"line {n}: a table needs a blank line before it")
            elif cells != table_cells:
                problems.append(f"line {n}: {cells - 1} cells, the table has {table_cells - 1}")
        else:
            table_cells = None
    if fence is not None:
        problems.append("a code fence is not closed")
    if details:
        problems.append("a <details> block is not closed")
    return problems


def _without_code(line: str) -> str:
    """A table row with its code spans blanked (their escaped pipes stay escaped anyway)."""
    return re.sub(r"(`+)(.*?)\1", lambda m: "x", line)
