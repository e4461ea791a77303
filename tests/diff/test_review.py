"""The pull-request comment for the reviewer's five cases (issue 33), golden, and what its
first screen says: the verdict line, the placement table, what mutation and validation now
do, refusals and render's warnings; "new problem" only for a new or worse verdict."""

from __future__ import annotations

import json

import pytest

from diff.kit import GOLDEN, check_golden, markdown_problems
from diff.prs import PULL_REQUESTS, build
from diff.test_git import pytestmark as needs_git

pytestmark = [needs_git]

CCNP_BEFORE = 24_828  # the CCNP pull request's comment before issue 33, in characters


@pytest.fixture(scope="module")
def prs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    with pytest.MonkeyPatch.context() as mp:
        return build(tmp_path_factory.mktemp("prs"), mp)


def first_screen(md: str) -> str:
    """What GitHub shows before the first folded section."""
    return md.split("<details>", 1)[0]


def row(md: str, job: str) -> str:
    (line,) = [ln for ln in first_screen(md).splitlines() if ln.startswith(f"| `{job}` |")]
    return line


@pytest.mark.parametrize("name", [n for n, _, _ in PULL_REQUESTS])
def test_golden(name: str, prs: dict[str, dict[str, str]]) -> None:
    md = prs[name]["markdown"]
    assert not markdown_problems(md)
    assert "/tmp" not in md and "pytest-of" not in md
    check_golden(GOLDEN / "review" / f"{name}.md", md)


@pytest.mark.parametrize("name", [n for n, _, _ in PULL_REQUESTS])
def test_opens_with_the_verdict_and_the_placement_table(
    name: str, prs: dict[str, dict[str, str]]
) -> None:
    lines = [ln for ln in first_screen(prs[name]["markdown"]).splitlines() if ln]
    assert lines[0] == "## topogen diff"
    assert lines[1].startswith("**Verdict:** prod-east · ")
    assert "| Job | GPUs | Before | After | Change |" in lines
    assert any(ln.startswith("- **Mutation**: ") for ln in lines)
    assert any(ln.startswith("- **Validation**: ") for ln in lines)


def test_adding_a_job_keeps_resnet(prs: dict[str, dict[str, str]]) -> None:
    md = prs["bert-large"]["markdown"]
    assert row(md, "research/resnet") == (
        "| `research/resnet` | 6 | us-east-1a | us-east-1a | kept |"
    )
    assert row(md, "research/bert-large").endswith("| none | us-east-1b | **new** |")
    assert "**Verdict:** prod-east · Audit · risk: none" in md
    assert "us-east-1b 8 -> 0" in first_screen(md)
    # the job joins a group HARD_BLOCK before, with the same rendered fix: known, not new
    assert "new problem" not in md.replace("no new problem", "")
    summary = json.loads(prs["bert-large"]["json"])["summary"]
    assert summary["newProblems"] == 0 and summary["unfixedProblems"] == 0
    assert summary["repins"] == 0
    assert "resnet" not in md.split("MutatingPolicy", 1)[1].split("</details>", 1)[0]


def test_ingress_deny_repins_with_the_reason(prs: dict[str, dict[str, str]]) -> None:
    md = prs["ccnp-ingress-deny"]["markdown"]
    assert len(md) < CCNP_BEFORE / 3, len(md)
    assert "risk: 1 re-pin (research/bert-large)" in md.splitlines()[2]
    moved = row(md, "research/bert-large")
    assert "| us-east-1b | us-east-1a | **moved**: us-east-1b no longer allows its traffic" in moved
    assert "quarantine-us-east-1b" in moved
    assert row(md, "research/resnet").endswith("| kept |")
    assert "new problem" not in md.replace("no new problem", "")
    # noise folded: tests, alert text and the rules file are one row each, no section
    assert "test fixtures" in md and "<summary>changed: Pod " not in md
    assert "alert text" in md and "rules.yaml · monitoring" not in md
    assert "[0].path" not in md  # JSON patch operations matched by path, not by index
    doc = json.loads(prs["ccnp-ingress-deny"]["json"])
    (moved_job,) = [p for c in doc["clusters"] for p in c["placements"] if p["change"] == "moved"]
    assert moved_job["job"] == "research/bert-large" and moved_job["old"] == "us-east-1b"


def test_enforce_names_the_component_and_the_words(prs: dict[str, dict[str, str]]) -> None:
    screen = first_screen(prs["enforce"]["markdown"])
    assert "Audit -> Enforce" in screen.splitlines()[2]
    assert "Enforce turned on" in screen
    validation = next(ln for ln in screen.splitlines() if ln.startswith("- **Validation**"))
    assert "now refused by the API server's ValidatingAdmissionPolicy" in validation
    assert "reported by Kyverno's policy reports (Audit refuses nothing)" in validation
    assert "(Audit reports, Deny refuses)" in prs["enforce"]["markdown"]


def test_refused_render_says_why_and_removes_nothing(prs: dict[str, dict[str, str]]) -> None:
    p = prs["refused"]
    assert p["render"] == "1" and p["check"] == "1" and p["diff"] == "0"
    md = p["markdown"]
    assert "render refused (1), nothing written" in md.splitlines()[2]
    assert "- **Refused**: group pytorch: no domain can hold it" in first_screen(md)
    assert row(md, "research/gpt-huge").startswith(
        "| `research/gpt-huge` | 10 | none | none | **refused**: no allowed domain holds its 10 GPUs"
    )
    # the jobs it had keep their domain: nothing is written, the cluster keeps its policies
    assert row(md, "research/resnet").startswith(
        "| `research/resnet` | 6 | us-east-1a | us-east-1a | kept: the render is refused"
    )
    assert "| removed |" not in md and "no longer rendered" not in md
    summary = json.loads(p["json"])["summary"]
    assert summary["refused"] == 1 and summary["objects"]["removed"] == 0


def test_engine_switch_is_one_row_with_the_fail_open_warning(
    prs: dict[str, dict[str, str]],
) -> None:
    md = prs["gatekeeper"]["markdown"]
    screen = first_screen(md)
    assert "fail-open (gatekeeper: failure policy Ignore)" in screen.splitlines()[2]
    assert "Gatekeeper's webhooks fail open" in screen
    assert "engine kyverno -> gatekeeper" in md
    assert "failure policy Fail -> Ignore" in md
    assert md.count("| switched |") == 1 and "| added |" not in md
