"""Start-up: topogen's own cost on top of its stack's floor, on inputs where start-up is
most of the run (`bench/run.py --startup-only` measures this section alone).

Each round runs the floor (`python -c 'import click, yaml'`: the interpreter and the two
libraries the CLI is built on) and then every command once, so each command's run is
paired with a floor run made at about the same load; a command's cost over the floor is
the median over the rounds of its CPU (user + system) less the floor's of the same round.
topogen keeps the compiled code of its dataclasses and templates in the user's cache
folder: a cold cache is written by a command's first round, so the median is a warm run's.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import netpolgen  # noqa: E402
import race  # noqa: E402
import racebench  # noqa: E402
from measure import PYTHON, Measured, measure  # noqa: E402

__all__ = ["BEGIN", "END", "TARGET_MS", "run", "splice"]

BEGIN, END = "<!-- startup: begin -->", "<!-- startup: end -->"
TARGET_MS = 50.0  # topogen's own CPU over the floor, per command
FLOOR_CODE = "import click, yaml"
EXAMPLE = ROOT / "examples" / "zone-split"


@dataclass(frozen=True)
class Command:
    label: str  # the table's and the target's name
    argv: tuple[str, ...]
    target: bool  # a Targets row holds it to TARGET_MS


def commands(connectivity_root: Path) -> list[Command]:
    topogen = str(race.TOPOGEN)
    return [
        Command("`topogen analyze -c examples/zone-split`",
                (topogen, "analyze", "-c", str(EXAMPLE)), True),
        Command("`topogen render -c examples/zone-split --stdout`",
                (topogen, "render", "-c", str(EXAMPLE), "--stdout"), True),
        Command("`topogen connectivity`, 100 workloads (the race's input, -o csv)",
                tuple(race.topogen_cmd(connectivity_root)), True),
        Command("`topogen --help`", (topogen, "--help"), False),
    ]  # fmt: skip


def checkout(rev: str, work: Path) -> Path:
    """generator/ and templates/ of git revision `rev`, byte-compiled: its import path."""
    out = work / "baseline"
    out.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "generator", "templates"],
                             capture_output=True, check=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    python = PYTHON
    subprocess.run([str(python), "-m", "compileall", "-q", str(out / "generator")], check=True)
    return out / "generator"


def paired(
    cmds: Sequence[Command], runs: int, work: Path, baseline: Path | None = None
) -> tuple[Measured, list[Measured], list[Measured]]:
    """The floor and each command, run in turns (one of each per round); with `baseline`
    (an import path), each command of that code too, right after this code's."""
    floor = Measured()
    results = [Measured() for _ in cmds]
    before = [Measured() for _ in cmds]
    python = PYTHON
    trees = [(ROOT / "generator", results)] + ([(baseline, before)] if baseline else [])
    for _ in range(runs):
        floor.add(measure([python, "-c", FLOOR_CODE], work / "floor.txt"))
        for i, cmd in enumerate(cmds):
            for tree, into in trees:
                r = measure(["env", f"PYTHONPATH={tree}", *cmd.argv], work / "out.txt")
                if r["rc"] not in (0, 1):
                    raise SystemExit(f"start-up: {cmd.label} failed ({tree}, exit {r['rc']}): "
                                     f"{r['stderr']}")  # fmt: skip
                into[i].add(r)
    return floor, results, before


def over_floor(m: Measured, floor: Measured) -> tuple[float, float]:
    """(median CPU over the floor's of the same round, ms; median wall ratio to it)."""
    cpu = statistics.median(c - f for c, f in zip(m.cpu, floor.cpu, strict=True)) * 1000
    ratio = statistics.median(w / f for w, f in zip(m.wall, floor.wall, strict=True))
    return cpu, ratio


def run(runs: int, work: Path, baseline: str = "") -> tuple[str, list[tuple[str, str, bool]]]:
    """The section (Markdown, ending in a newline) and its Targets rows; with `baseline`
    (a git revision), that revision's code measured in the same rounds, for comparison."""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    began = time.monotonic()
    root = racebench.cluster_dir(netpolgen.RaceSpec(netpolgen.SIZES["small"]))
    cmds = commands(root)
    floor, results, before = paired(
        cmds, runs, work, checkout(baseline, work) if baseline else None
    )
    extra = f" | CPU over the floor, `{baseline}` ms | this / `{baseline}`" if baseline else ""
    lines = [
        "## Start-up: topogen over the floor of its stack",
        "",
        f"{__doc__.split(chr(10) + chr(10), 1)[1].strip()} {runs} rounds. Target: at most "
        f"{TARGET_MS:.0f} ms of CPU over the floor."
        + (
            f" Beside this code, revision `{baseline}` (git archive of generator/ and "
            "templates/, on PYTHONPATH) in the same rounds."
            if baseline
            else ""
        ),
        "",
        f"| command | wall s | CPU s | CPU over the floor, ms | wall / floor | peak MB{extra} |",
        "|---|---:|---:|---:|---:|---:|" + "---:|---:|" * bool(baseline),
        f"| floor: `python -c '{FLOOR_CODE}'` | {floor.wall_med:.3f} | {floor.cpu_med:.3f} "
        f"| 0 | 1.00 | {floor.rss_mb:.0f} |" + " | |" * bool(baseline),
    ]
    rows: list[tuple[str, str, bool]] = []
    for cmd, m, b in zip(cmds, results, before, strict=True):
        cpu, ratio = over_floor(m, floor)
        then = ""
        if baseline:
            cpu_b = over_floor(b, floor)[0]
            then = f" {cpu_b:.0f} | {cpu / cpu_b:.2f} |" if cpu_b > 0 else f" {cpu_b:.0f} | |"
        lines.append(f"| {cmd.label} | {m.wall_med:.3f} | {m.cpu_med:.3f} | {cpu:.0f} "
                     f"| {ratio:.2f} | {m.rss_mb:.0f} |{then}")  # fmt: skip
        if cmd.target:
            rows.append((f"start-up: {cmd.label} at most {TARGET_MS:.0f} ms of CPU over the "
                         "floor", f"{cpu:.0f} ms", cpu <= TARGET_MS))  # fmt: skip
    lines += ["", "| target | measured | holds |", "|---|---|---|"]
    lines += [f"| {t} | {v} | {'yes' if ok else '**no**'} |" for t, v, ok in rows]
    lines += [
        "",
        f"Measured in {time.monotonic() - began:.0f} s, load average at start {load}.",
        "",
    ]
    return "\n".join(lines), rows


def splice(text: str, section: str) -> str:
    """RESULTS.md with the start-up section replaced (or put before the race's)."""
    block = f"{BEGIN}\n{section}{END}\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        return head + block + rest.split(END, 1)[1].lstrip("\n")
    if racebench.BEGIN in text:
        head, rest = text.split(racebench.BEGIN, 1)
        return head + block + racebench.BEGIN + rest
    return text.rstrip("\n") + "\n\n" + block if text.strip() else block
