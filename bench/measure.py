"""Whole-process measurements for the benchmark: wall and CPU time, peak RSS."""

from __future__ import annotations

import functools
import hashlib
import json
import statistics
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "DEV_PYTHON",
    "DEV_TOPOGEN",
    "PYTHON",
    "TOPOGEN",
    "Measured",
    "interpreter",
    "measure",
    "tree_digest",
]

# The venv the bench runs in (`make bench`: .venv-bench, made from BENCH_PYTHON): its
# topogen is what is timed, and its python runs the floors, so a ratio compares topogen with
# what the same interpreter does alone.
BIN = Path(sys.executable).parent
PYTHON = BIN / "python"
TOPOGEN = BIN / "topogen"
# the development venv's (`make test`, `make demo`): the large fleet is timed on it too
# when its interpreter is another (bench/RESULTS.md: Interpreter)
DEV_TOPOGEN = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "topogen"
DEV_PYTHON = DEV_TOPOGEN.parent / "python"


@functools.cache
def interpreter(python: Path) -> str:
    """'CPython 3.11.2 (/usr/bin/python3.11)': the interpreter a venv's python runs."""
    code = (
        "import os, platform, sys; print(platform.python_implementation(), "
        "platform.python_version(), f'({os.path.realpath(sys.executable)})')"
    )
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    return done.stdout.strip() or f"? ({python})"


# a process that runs one command and reports its own wall/CPU time and peak RSS
_MEASURE = r"""
import json, resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.run(sys.argv[2:], stdout=open(sys.argv[1], "wb"), stderr=subprocess.PIPE)
wall = time.perf_counter() - t
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": p.returncode, "wall": wall, "cpu": r.ru_utime + r.ru_stime,
                  "rss_kb": r.ru_maxrss, "stderr": p.stderr.decode(errors="replace")[-2000:]}))
"""


@dataclass
class Measured:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rss_kb: list[int] = field(default_factory=list)
    digests: set[str] = field(default_factory=set)
    rcs: set[int] = field(default_factory=set)

    @property
    def wall_med(self) -> float:
        return statistics.median(self.wall)

    @property
    def cpu_med(self) -> float:
        return statistics.median(self.cpu)

    @property
    def rss_mb(self) -> float:
        return max(self.rss_kb) / 1024

    def add(self, r: dict[str, Any]) -> None:
        self.wall.append(r["wall"])
        self.cpu.append(r["cpu"])
        self.rss_kb.append(r["rss_kb"])
        self.rcs.add(r["rc"])


def measure(cmd: Sequence[str | Path], stdout: Path) -> dict[str, Any]:
    """Run `cmd` (stdout to the file) in a measuring process; its rc, wall, cpu, rss_kb."""
    out = subprocess.run(
        [str(PYTHON), "-c", _MEASURE, str(stdout), *map(str, cmd)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def tree_digest(root: Path) -> str:
    """One digest of a folder's files, their paths and bytes (a render's output tree)."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()
