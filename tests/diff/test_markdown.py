"""Markdown for pull-request comments: capped under GitHub's limit, cut only between blocks."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from diff.kit import markdown_problems
from topogen.diff import MARKDOWN_CAP, DiffReport, diff_dirs, to_markdown, to_text

GITHUB_LIMIT = 65_000


def _policy(i: int, zones: list[str], action: str) -> dict[str, object]:
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "ValidatingPolicy",
        "metadata": {
            "name": f"topogen-group-{i:04d}-validate",
            "labels": {"topogen.io/group": f"group-{i:04d}", "topogen.io/role": "validate"},
            "annotations": {"topogen.io/zones": ",".join(zones), "topogen.io/identity": ""},
        },
        "spec": {
            "validationActions": [action],
            "variables": [
                {
                    "name": "pinnedWithinDomain",
                    "expression": "variables.terms.all(t, t.matchExpressions.exists(e, "
                    f"e.values.all(v, v in {zones!r})))" + " && true" * 40,
                }
            ],
            # hostile text: a table pipe, a fence, HTML, a details tag
            "description": "a | b ``` <details> </details> <script> ~~x~~ $1 and $2",
        },
    }


@pytest.fixture(scope="module")
def big_report(tmp_path_factory: pytest.TempPathFactory) -> DiffReport:
    root = tmp_path_factory.mktemp("big")
    for side, zones, action in (
        ("old", ["zone-a"], "Audit"),
        ("new", ["zone-a", "zone-c"], "Deny"),
    ):
        for i in range(300):
            path = root / side / "policies" / f"c{i % 7}" / "kyverno" / f"p{i:04d}.yaml"
            path.parent.mkdir(parents=True, exist_ok=True)
            doc = _policy(i, zones, action)
            if side == "new":
                doc["spec"]["description"] = f"changed {i} | ``` </details>"  # type: ignore[index]
            path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return diff_dirs(root / "old", root / "new")


def test_uncapped_report_is_larger_than_the_cap(big_report: DiffReport) -> None:
    assert len(to_markdown(big_report, max_chars=10**9)) > GITHUB_LIMIT


def test_capped_report_is_cut_cleanly(big_report: DiffReport) -> None:
    text = to_markdown(big_report)
    assert len(text) <= MARKDOWN_CAP < GITHUB_LIMIT
    assert not markdown_problems(text)
    assert "> **Report cut** to stay under 60,000 characters:" in text
    assert "detail sections not shown" in text or "summary rows" in text
    # whatever is shown is whole: every row that made it ends with its closing pipe
    rows = [ln for ln in text.splitlines() if ln.startswith("| changed |")]
    assert rows and all(ln.endswith(" |") for ln in rows)
    assert "validation Audit -> Deny" in text


def test_cut_inside_the_details(big_report: DiffReport) -> None:
    """A cap that holds the table but not every section: sections are dropped whole."""
    full = to_markdown(big_report, max_chars=10**9)
    table_end = full.index("</details>")  # the folded file table comes first
    cap = table_end + 3000
    text = to_markdown(big_report, max_chars=cap)
    assert len(text) <= cap
    assert not markdown_problems(text)
    lines = text.splitlines()
    shown = lines.count("<details>") - 1  # the file table's
    assert shown + 1 == lines.count("</details>") and shown >= 1
    assert "detail sections not shown" in text and "summary row" not in text
    assert f"{len(big_report.objects) - shown} detail sections not shown" in text


def test_cut_inside_the_table(big_report: DiffReport) -> None:
    text = to_markdown(big_report, max_chars=8000)
    assert len(text) <= 8000
    assert not markdown_problems(text)
    assert text.count("<details>") == 1  # the file table, folded: no section fits
    rows = sum(1 for ln in text.splitlines() if ln.startswith("| changed |"))
    assert 0 < rows < len(big_report.objects)
    assert f"{len(big_report.objects) - rows} summary rows and" in text


def test_hostile_text_cannot_break_the_structure(big_report: DiffReport) -> None:
    text = to_markdown(big_report, max_chars=10**9)
    assert not markdown_problems(text)
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            # outside code, HTML only as topogen writes it; the hostile text is escaped
            assert "<script>" not in line
            if "details>" in line:
                assert line in ("<details>", "</details>") or line.startswith("<summary>")


def test_text_format_is_never_cut(big_report: DiffReport) -> None:
    text = to_text(big_report)
    assert len(text) > GITHUB_LIMIT
    assert text.count("validation Audit -> Deny") == len(big_report.objects)


def test_empty_report(tmp_path: Path) -> None:
    (tmp_path / "a" / "policies").mkdir(parents=True)
    (tmp_path / "b" / "policies").mkdir(parents=True)
    text = to_markdown(diff_dirs(tmp_path / "a", tmp_path / "b"))
    assert "**No differences**" in text
    assert "|" not in text and "<details>" not in text
