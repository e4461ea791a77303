"""Shared pytest setup: this folder is on sys.path, so tests import `helpers`."""


def pytest_report_header(config: object) -> list[str]:
    """Name the real tools the suite runs against (e.g. `kyverno version`)."""
    import subprocess
    from pathlib import Path

    lines = []
    kyverno = Path(__file__).resolve().parents[1] / ".tools" / "bin" / "kyverno"
    if kyverno.exists():
        out = subprocess.run(
            [str(kyverno), "version"], capture_output=True, text=True, timeout=60
        ).stdout
        version = next(
            (ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("Version")),
            out.strip(),
        )
        lines.append(f"kyverno version: {version} ({kyverno})")
    else:
        lines.append("kyverno: not built (make tools)")
    return lines


def _deferred(report: object) -> bool:
    """A test skipped only because its tool is still being built (tests/tooling.py)."""
    from tooling import DEFERRED

    longrepr = getattr(report, "longrepr", None)
    return (
        bool(getattr(report, "skipped", False))
        and isinstance(longrepr, tuple)
        and DEFERRED in str(longrepr[-1])
    )


def pytest_report_teststatus(report: object, config: object) -> tuple[str, str, str] | None:
    """Deferred tests are counted as `deferred`, not among the real skips."""
    if _deferred(report):
        return "deferred", "d", "DEFERRED"
    return None


def pytest_runtest_logreport(report: object) -> None:
    """Record each deferred test's id for the second pass (tests/run_suite.py), once: in the
    process that reports (the controller under xdist, whose workers forward their reports)."""
    import os

    out = os.environ.get("TOPOGEN_TOOLS_DEFERRED_FILE")
    if out and _deferred(report) and not os.environ.get("PYTEST_XDIST_WORKER"):
        with open(out, "a", encoding="utf-8") as f:
            f.write(f"{getattr(report, 'nodeid', '')}\n")
