"""`make test`'s first pass defers a test whose tool is still being built (tests/run_suite.py,
tests/tooling.py, tests/conftest.py): counted apart from real skips, its id recorded for the
second pass, which runs exactly those ids."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

CASES = """
from tooling import require_tool

def test_needs_a_tool():
    require_tool("no-such-tool")

def test_skips_for_its_own_reason():
    import pytest
    pytest.skip("not today")

def test_plain():
    pass
"""


def run_pytest(tmp: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_XDIST_WORKER")}
    clean = {k: v for k, v in clean.items() if not k.startswith("TOPOGEN_TOOLS_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", *args],
        cwd=tmp,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def suite(tmp: Path) -> Path:
    for name in ("conftest.py", "tooling.py"):
        shutil.copy(TESTS / name, tmp / name)
    (tmp / "test_cases.py").write_text(CASES, encoding="utf-8")
    return tmp


def test_a_missing_tool_is_deferred_and_recorded_while_the_build_runs(tmp_path: Path) -> None:
    ids = tmp_path / "deferred.txt"
    proc = run_pytest(
        suite(tmp_path),
        "test_cases.py",
        TOPOGEN_TOOLS_PENDING="1",
        TOPOGEN_TOOLS_DEFERRED_FILE=str(ids),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed, 1 skipped, 1 deferred" in proc.stdout, proc.stdout
    assert ids.read_text(encoding="utf-8").splitlines() == ["test_cases.py::test_needs_a_tool"]

    # the second pass: the recorded ids, no longer pending; locally a missing tool skips
    again = run_pytest(tmp_path, f"@{ids}")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "1 skipped" in again.stdout and "deferred" not in again.stdout, again.stdout
    # under CI the second pass fails on a tool the build did not make
    ci = run_pytest(tmp_path, f"@{ids}", CI="true")
    assert ci.returncode == 1 and "1 failed" in ci.stdout, ci.stdout
