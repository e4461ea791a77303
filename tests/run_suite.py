"""`make test`: the whole suite, with the real tools built beside its first pass.

A cold machine spends most of `make test` building the pinned Go tools (`make tools`), and
most of the suite needs none of them. So this starts `make -j2 tools` in the background
(its output in .tools/build.log), runs the suite at once with TOPOGEN_TOOLS_PENDING set
(a test whose tool is not built yet is reported `deferred`, tests/tooling.py), waits for the
build, and runs the deferred tests in a second pass. On a warm machine the build finds
every tool cached at once, nothing is deferred and there is one pass.

    python tests/run_suite.py [PYTEST ARGS...]    (default: -n 2 --dist loadfile)

Exit status: pytest's of the first failing pass (both passes run, so every failure is
shown); 2 when the tools' build failed (after the first pass, which still reports the
tool-free tests).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOG = REPO / ".tools" / "build.log"
DEFERRED = REPO / ".tools" / "deferred.txt"
PYTEST_DEFAULT = ["-n", "2", "--dist", "loadfile"]


def pytest(args: list[str], env: dict[str, str]) -> int:
    return subprocess.run([sys.executable, "-m", "pytest", *args], cwd=REPO, env=env).returncode


def options(args: list[str]) -> list[str]:
    """ARGS without the paths and test ids in them: the second pass names its own tests."""
    return [a for a in args if a.startswith("-") or not (REPO / a.split("::")[0]).exists()]


def build_summary(log: Path) -> list[str]:
    """build.sh's one line per tool built (`... built in 3m05s, ...`) or taken from the cache."""
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    return [ln for ln in lines if ": built in " in ln or ": cached at " in ln]


def main(argv: list[str]) -> int:
    args = argv or PYTEST_DEFAULT
    LOG.parent.mkdir(parents=True, exist_ok=True)
    DEFERRED.unlink(missing_ok=True)
    start = time.monotonic()
    with LOG.open("w", encoding="utf-8") as log:
        build = subprocess.Popen(
            ["make", "--no-print-directory", "-j2", "tools"],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    finished: list[float] = []  # when the build ended, for the summary

    def watch() -> None:
        build.wait()
        finished.append(time.monotonic())

    watcher = threading.Thread(target=watch)
    watcher.start()
    print(f"run_suite: make -j2 tools in the background (log: {LOG.relative_to(REPO)})")
    env = {
        **os.environ,
        "TOPOGEN_TOOLS_PENDING": "1",
        "TOPOGEN_TOOLS_DEFERRED_FILE": str(DEFERRED),
    }
    first = pytest(args, env)
    print(
        f"run_suite: first pass done after {time.monotonic() - start:.0f} s; waiting for the tools"
    )
    built = build.wait()
    watcher.join()
    print(f"run_suite: make tools exited {built}, {finished[0] - start:.0f} s after it started")
    print("\n".join(f"  {ln}" for ln in build_summary(LOG)))
    if built != 0:
        tail = LOG.read_text(encoding="utf-8", errors="replace").splitlines()[-40:]
        print("\n".join(tail), file=sys.stderr)
        print(f"run_suite: make tools failed (whole log: {LOG})", file=sys.stderr)
        return 2
    text = DEFERRED.read_text(encoding="utf-8") if DEFERRED.exists() else ""
    ids = [ln for ln in text.splitlines() if ln]
    if not ids:
        return 0 if first == 5 else first
    print(f"run_suite: second pass, the {len(ids)} tests that waited for a tool")
    plain = {k: v for k, v in os.environ.items() if not k.startswith("TOPOGEN_TOOLS_")}
    # one node id per line: pytest reads `@FILE` as one argument per line
    second = pytest([*options(args), f"@{DEFERRED}"], plain)
    print(f"run_suite: both passes done after {time.monotonic() - start:.0f} s")
    return first if first not in (0, 5) else second


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
