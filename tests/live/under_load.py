"""The live suites beside a CPU load: `make test-live-load` (tests/live/under_load.py).

Starts PER_CORE busy processes per core (each a Python loop that never sleeps) for the
whole run, runs `pytest -n 2 --dist loadfile tests/live` RUNS times in a row (stopping at
the first failing run), stops the busy processes it started, and prints one line per run:
its outcome, pytest's summary, wall time, and the load average it saw (mean and peak of
/proc/loadavg's one-minute figure, sampled every 5 s). The live tests wait on the thing
itself (a probe answered by the policy's current version, a controller's ready condition),
never on time, so they pass on a loaded machine; this is the proof.

    python tests/live/under_load.py [--runs 3] [--per-core 2] [--logs DIR] [-- PYTEST ARGS...]

Each run's whole pytest output is kept in DIR/run-N.log (default: a new folder under the
system's temporary folder, named on the last line).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUSY = "while True: pass"
SUMMARY = re.compile(r"=+ (.*(?:passed|failed|error).*) in [0-9.]+s")


@dataclass
class LoadSamples:
    """/proc/loadavg's one-minute figure, sampled until stopped."""

    values: list[float] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self.stop.wait(5.0):
            try:
                self.values.append(float(Path("/proc/loadavg").read_text().split()[0]))
            except (OSError, ValueError, IndexError):
                return

    def text(self) -> str:
        if not self.values:
            return "load average not sampled"
        mean = sum(self.values) / len(self.values)
        return f"load average mean {mean:.1f}, peak {max(self.values):.1f}"


def busy_processes(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(count)]


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def one_run(pytest_args: list[str], busy: int, log: Path) -> tuple[int, str]:
    """(pytest's exit code, the run's line) with `busy` busy processes beside it; pytest's
    output in `log`."""
    samples = LoadSamples()
    sampler = threading.Thread(target=samples.run, daemon=True)
    procs = busy_processes(busy)
    sampler.start()
    start = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", *pytest_args],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        stop(procs)
        samples.stop.set()
        sampler.join()
    wall = time.monotonic() - start
    log.write_text(proc.stdout + proc.stderr, encoding="utf-8")
    sys.stdout.write(proc.stdout[-5000:])
    found = SUMMARY.findall(proc.stdout)
    summary = found[-1] if found else f"pytest exited {proc.returncode}"
    outcome = "pass" if proc.returncode == 0 else "FAIL"
    return proc.returncode, (
        f"{outcome}: {summary}; {wall / 60:.1f} min; {busy} busy processes on "
        f"{os.cpu_count()} cores; {samples.text()}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--per-core", type=int, default=2)
    parser.add_argument("--logs", type=Path, default=None)
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args()
    logs = args.logs or Path(tempfile.mkdtemp(prefix="topogen-live-load-"))
    logs.mkdir(parents=True, exist_ok=True)
    pytest_args = args.pytest_args or ["-n", "2", "--dist", "loadfile", "tests/live"]
    busy = args.per_core * (os.cpu_count() or 1)
    lines = []
    for i in range(1, args.runs + 1):
        code, line = one_run(pytest_args, busy, logs / f"run-{i}.log")
        lines.append(f"run {i}/{args.runs}: {line}")
        print(lines[-1], flush=True)
        if code != 0:
            break
    print("\n".join(["", "live suites under load:", *lines, f"pytest's output: {logs}"]))
    return 0 if len(lines) == args.runs and all(": pass:" in ln for ln in lines) else 1


if __name__ == "__main__":
    sys.exit(main())
