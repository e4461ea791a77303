"""This code against a git revision on the large fleet, in the same rounds
(`bench/run.py --compare REV`; its section of RESULTS.md replaced).

The fleet measure's own commands (`topogen analyze -o json`, `topogen render --partial
--out DIR` on the snapshot input), each round running them with this code and then with
REV's (generator/ and templates/ from `git archive`, on PYTHONPATH), so each pair is
measured at about the same load: the ratio per round, its median, and the medians of wall
time, CPU time and peak RSS. Both parse every input (`TOPOGEN_PARSE_CACHE=0`); the rows
"parses kept" run this code a third time in each round with the parses a run before kept
(topogen/parsecache.py: the input unchanged since the last run). Before the rounds each
writes the tree (`--partial`: the fleet has groups no domain holds, refused without it)
and the JSON: byte-identical or not.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import startup  # noqa: E402
from measure import TOPOGEN, Measured, measure, tree_digest  # noqa: E402

__all__ = ["BEGIN", "END", "run", "splice"]

BEGIN, END = "<!-- compare: begin -->", "<!-- compare: end -->"


KEPT = "this, parses kept"  # this code, the input's parses kept by a run before


def _argv(tree: Path, command: str, config: Path, out: Path, kept: bool) -> list[str | Path]:
    head: list[str | Path] = ["env", f"PYTHONPATH={tree}"]
    if not kept:  # every input parsed (topogen/parsecache.py off)
        head.append("TOPOGEN_PARSE_CACHE=0")
    head += [TOPOGEN, command, "-c", config]
    return head + (["-o", "json"] if command == "analyze" else ["--out", out, "--partial"])


def identical(runs: dict[str, tuple[Path, bool]], config: Path, work: Path) -> bool:
    """Every run's render tree (--partial) and analyze JSON, compared byte for byte (the
    first run with kept parses keeps them)."""
    digests = set()
    for n, (tree, kept) in enumerate(runs.values()):
        out = work / f"tree-{n}"
        measure(_argv(tree, "render", config, out, kept), work / "render.log")
        json_out = work / f"analyze-{n}.json"
        measure(_argv(tree, "analyze", config, out, kept), json_out)
        digests.add((tree_digest(out), hashlib.sha256(json_out.read_bytes()).hexdigest()))
    return len(digests) == 1


def run(config: Path, rev: str, runs: int, work: Path) -> str:
    """The section (Markdown, ending in a newline)."""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    began = time.monotonic()
    this = ROOT / "generator"
    variants = {
        "this": (this, False),
        rev: (startup.checkout(rev, work), False),
        KEPT: (this, True),
    }
    same = identical(variants, config, work)
    got = {(c, t): Measured() for c in ("analyze", "render") for t in variants}
    for _ in range(runs):
        for command in ("analyze", "render"):
            for name, (tree, kept) in variants.items():
                out = work / "tree"
                shutil.rmtree(out, ignore_errors=True)
                stdout = work / ("out.json" if command == "analyze" else "render.log")
                argv = _argv(tree, command, config, out, kept)
                got[(command, name)].add(measure(argv, stdout))
    lines = [
        f"## This code against `{rev}`: the large fleet",
        "",
        f"{__doc__.split(chr(10) + chr(10), 1)[1].strip()} {runs} rounds, input "
        f"{config.parent.parent.name}/{config.parent.name}.",
        "",
        f"| command | wall s, this | wall s, `{rev}` | CPU s, this | CPU s, `{rev}` "
        f"| this / `{rev}`, wall (median of rounds) | this / `{rev}`, CPU "
        f"| peak MB, this | peak MB, `{rev}` |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for command in ("analyze", "render"):
        for name, shown in (("this", ""), (KEPT, ", parses kept")):
            a, b = got[(command, name)], got[(command, rev)]
            wall = statistics.median(x / y for x, y in zip(a.wall, b.wall, strict=True))
            cpu = statistics.median(x / y for x, y in zip(a.cpu, b.cpu, strict=True))
            lines.append(
                f"| `topogen {command}`{shown} | {a.wall_med:.2f} | {b.wall_med:.2f} "
                f"| {a.cpu_med:.2f} | {b.cpu_med:.2f} | {wall:.2f} | {cpu:.2f} "
                f"| {a.rss_mb:.0f} | {b.rss_mb:.0f} |"
            )
    lines += [
        "",
        f"Output byte-identical to `{rev}`'s: {'yes' if same else '**no**'}. Measured in "
        f"{(time.monotonic() - began) / 60:.1f} minutes, load average at start {load}.",
        "",
    ]
    return "\n".join(lines)


def splice(text: str, section: str) -> str:
    """RESULTS.md with the comparison replaced (or appended)."""
    block = f"{BEGIN}\n{section}{END}\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        return head + block + rest.split(END, 1)[1].lstrip("\n")
    return text.rstrip("\n") + "\n\n" + block if text.strip() else block
