"""Output that fits: tables sized to the terminal (whole when piped), colour on a terminal
only and never with NO_COLOR, no word said twice, grouped fixtures, progress on stderr."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from topogen import textui
from topogen.cli import main
from topogen.config import load_config
from topogen.diff import diff_dirs, to_text
from topogen.pipeline.analyze import analyze
from topogen.pipeline.format import analysis_table

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "examples" / "zone-split" / "topogen.yaml"
ANSI = re.compile(r"\033\[[0-9;]*[mK]")


def _in_terminal(args: list[str], columns: int, **env: str) -> str:
    """Run topogen with stdout on a pseudo-terminal of `columns` columns."""
    leader, follower = pty.openpty()
    environ = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    environ.update({"COLUMNS": str(columns), "LINES": "50", "TERM": "xterm", **env})
    proc = subprocess.Popen(
        [sys.executable, "-m", "topogen", *args],
        stdout=follower,
        stderr=subprocess.DEVNULL,
        env=environ,
        cwd=REPO,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


EXAMPLES = sorted(REPO.glob("examples/*/topogen*.yaml"))


def _table(text: str) -> list[str]:
    """The table's lines: the header and the rows (up to the first blank line)."""
    lines = ANSI.sub("", text).splitlines()
    return lines[: lines.index("")] if "" in lines else lines


@pytest.mark.parametrize("config", EXAMPLES, ids=lambda p: str(p.relative_to(REPO / "examples")))
def test_at_80_columns_every_job_and_verdict_is_whole(config: Path) -> None:
    """In colour on an 80-column terminal: every row fits, and its JOB and VERDICT are the
    whole words of the piped table (REASON and IDENTITY give way first)."""
    shown = _table(_in_terminal(["analyze", "-c", str(config)], 80))
    piped = CliRunner().invoke(main, ["analyze", "-c", str(config), "-o", "json"]).stdout
    roles = json.loads(piped)["roles"]
    assert len(shown) == 1 + len(roles) and roles
    assert all(len(ln) <= 80 for ln in shown), shown
    assert shown[0].split()[-1] == "VERDICT" or "VERDICT" in shown[0].split()
    for line, role in zip(shown[1:], roles, strict=True):
        cells = line.split()
        assert role["job"] in cells and role["verdict"] in cells, line


def test_table_fits_the_terminal_and_is_whole_when_piped() -> None:
    wide = _in_terminal(["analyze", "-c", str(CONFIG)], 400)
    rows = [ln for ln in ANSI.sub("", wide).splitlines() if ln.startswith("lab ")]
    assert rows and all(90 < len(ln) <= 400 for ln in rows)  # a wide terminal shows all
    assert all(ln.rstrip().endswith("see below") for ln in rows)
    for columns in (100, 90, 70, 40):
        shown = _table(_in_terminal(["analyze", "-c", str(CONFIG)], columns))
        if columns > 40:  # at 40 the columns that never give way alone are wider
            assert all(len(ln) <= columns for ln in shown), (columns, shown)
        assert all("ml-demo/ml-training" in ln and "HARD_BLOCK" in ln for ln in shown[1:])
    piped = CliRunner().invoke(main, ["analyze", "-c", str(CONFIG)]).stdout
    whole = [ln for ln in piped.splitlines() if ln.startswith("lab ")]
    assert whole and not any("..." in ln for ln in whole)
    assert "IDENTITY" in piped and "REASON" in piped
    assert "\033[" not in piped


@pytest.mark.parametrize("config", EXAMPLES, ids=lambda p: str(p.relative_to(REPO / "examples")))
def test_each_reason_is_printed_once(config: Path) -> None:
    """Piped: a problem's reason once, in the block under the table (its rows say `see
    below`); any other reason in the first row of its job (`as above` after it)."""
    piped = CliRunner().invoke(main, ["analyze", "-c", str(config)]).stdout
    report = json.loads(
        CliRunner().invoke(main, ["analyze", "-c", str(config), "-o", "json"]).stdout
    )
    reasons = {r["reason"] for r in report["roles"] if r["reason"]}
    assert reasons
    for reason in reasons:
        assert piped.count(reason) == 1, reason


def test_colour_on_a_terminal_only_and_never_with_no_color() -> None:
    coloured = _in_terminal(["analyze", "-c", str(CONFIG)], 200)
    assert "\033[31mHARD_BLOCK" in coloured
    plain = _in_terminal(["analyze", "-c", str(CONFIG)], 200, NO_COLOR="1")
    assert "\033[" not in plain and "HARD_BLOCK" in plain
    dumb = _in_terminal(["analyze", "-c", str(CONFIG)], 200, TERM="dumb")
    assert "\033[" not in dumb


def test_fit_row_cuts_only_the_last_column() -> None:
    widths = [5, 3]
    assert (
        textui.fit_row(["a", "b", "x" * 50], [*widths, 0], 30) == "a      b    " + "x" * 15 + "..."
    )
    assert textui.fit_row(["a", "b", "x" * 50], [*widths, 0], None).endswith("x" * 50)


def test_fit_table_gives_way_in_order_and_counts_no_colour_codes() -> None:
    cols = [
        textui.Column("KEEP"),
        textui.Column("CUT", give_way=2),
        textui.Column("DROP", give_way=1, droppable=True),
        textui.Column("VERDICT"),
    ]
    rows = [["job-a", "c" * 20, "d" * 30, "HARD_BLOCK"]]
    styles: list[list[str | None]] = [[None, None, None, "red"]]
    whole = textui.fit_table(cols, rows, None)
    assert whole[1] == "job-a  " + "c" * 20 + "  " + "d" * 30 + "  HARD_BLOCK"
    assert textui.fit_table(cols, rows, 39)[1] == "job-a  " + "c" * 20 + "  HARD_BLOCK"
    narrow = textui.fit_table(cols, rows, 35, styles, colour=True)
    plain = [ANSI.sub("", ln) for ln in narrow]
    assert plain[0].split() == ["KEEP", "CUT", "VERDICT"]  # DROP gave way first, whole
    assert plain[1] == "job-a  " + "c" * 13 + "...  HARD_BLOCK" and len(plain[1]) == 35
    assert "\033[31mHARD_BLOCK\033[0m" in narrow[1]
    tiny = textui.fit_table(cols, rows, 10)
    assert tiny[1] == "job-a  ccccc...  HARD_BLOCK"  # never narrower than that
    report = analyze(load_config(CONFIG))
    lines = analysis_table(report, 120).splitlines()
    rows_shown = [ln for ln in lines if ln.startswith("lab ")]
    assert rows_shown and all(len(ln) <= 120 for ln in rows_shown)


def test_no_word_said_twice() -> None:
    report = analyze(load_config(CONFIG))
    (plan,) = report.plans
    assert plan.describe_fix().startswith("confine to zone-a: coordinator")


def test_init_names_the_existing_file_once(tmp_path: Path) -> None:
    (tmp_path / "topogen.yaml").write_text("# mine\n")
    result = CliRunner().invoke(main, ["init", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr.count("topogen.yaml") == 1
    assert "topogen.yaml: already exists" in result.stderr


def test_text_diff_groups_test_fixtures(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(CONFIG.parent, repo)
    config = repo / "topogen.yaml"
    outs = {}
    for label in ("zone", "zonex"):
        text = CONFIG.read_text(encoding="utf-8")
        config.write_text(text.replace("identityLabel: zone", f"identityLabel: {label}"))
        outs[label] = repo / label
        result = CliRunner().invoke(main, ["render", "-c", str(config), "--out", str(outs[label])])
        assert result.exit_code == 0, result.output
    report = diff_dirs(outs["zone"], outs["zonex"])
    fixtures = [o for o in report.objects if "tests" in o.key.location.split("/")]
    assert len(fixtures) > 5
    text = to_text(report)
    grouped = [ln for ln in text.splitlines() if "(test fixtures: " in ln]
    assert grouped and len(grouped) < len(fixtures)
    assert not [ln for ln in text.splitlines() if ln.startswith("  ~ Pod ")]
    coloured = to_text(report, colour=True)
    assert "\033[33m~\033[0m" in coloured and ANSI.sub("", coloured) == text


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal_after_a_while_only() -> None:
    tty = _Tty()
    clear = textui.install_progress(tty, after=0.0)
    analyze(load_config(CONFIG))
    clear()
    assert "topogen: cluster lab: analysing 1 groups" in tty.getvalue()
    assert tty.getvalue().endswith("\r\033[K")  # the line is cleared at the end
    piped = io.StringIO()
    clear = textui.install_progress(piped, after=0.0)
    textui.step("anything")
    clear()
    assert piped.getvalue() == ""
    slow = _Tty()
    clear = textui.install_progress(slow, after=60.0)
    textui.step("quick work")
    clear()
    assert slow.getvalue() == ""


@pytest.mark.parametrize("value", ["1", "true"])
def test_no_color_means_no_colour(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", value)
    assert textui.use_colour(_Tty()) is False
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("TERM", "xterm")
    assert textui.use_colour(_Tty()) is True
    assert textui.use_colour(io.StringIO()) is False
