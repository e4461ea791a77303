"""Output that fits: tables sized to the terminal (whole when piped), colour on a terminal
only and never with NO_COLOR, no word said twice, grouped fixtures, progress on stderr."""

from __future__ import annotations

import io
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


def test_table_fits_the_terminal_and_is_whole_when_piped() -> None:
    shown = _in_terminal(["analyze", "-c", str(CONFIG)], 100)
    table = [ln for ln in ANSI.sub("", shown).splitlines() if ln.startswith("lab ")]
    assert table and all(len(ln) <= 100 and ln.endswith("...") for ln in table)
    wide = _in_terminal(["analyze", "-c", str(CONFIG)], 400)
    rows = [ln for ln in ANSI.sub("", wide).splitlines() if ln.startswith("lab ")]
    assert rows and all(200 < len(ln) <= 400 for ln in rows)  # a wide terminal shows more
    piped = CliRunner().invoke(main, ["analyze", "-c", str(CONFIG)]).stdout
    whole = [ln for ln in piped.splitlines() if ln.startswith("lab ")]
    assert whole and not any(ln.endswith("...") for ln in whole)
    assert "\033[" not in piped


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
    report = analyze(load_config(CONFIG))
    lines = analysis_table(report, 120).splitlines()
    rows = [ln for ln in lines if ln.startswith("lab ")]
    assert rows and all(len(ln) == 120 for ln in rows)


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
