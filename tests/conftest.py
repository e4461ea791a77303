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
