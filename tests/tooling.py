"""Locate the real tools `make tools` builds (skip locally without them, fail in CI), and
the source of the Go modules they are built from.

While `make test` builds the tools beside the suite's first pass (tests/run_suite.py sets
TOPOGEN_TOOLS_PENDING), a test whose tool is not built yet is deferred: it is reported as
`deferred` (tests/conftest.py), and the second pass runs it once the build is done.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TOOLS_BIN = REPO / ".tools" / "bin"


DEFERRED = "deferred until make tools has built"


def require_tool(name: str) -> Path:
    path = TOOLS_BIN / name
    if path.exists():
        return path
    if os.environ.get("TOPOGEN_TOOLS_PENDING"):
        pytest.skip(f"{DEFERRED} {name}")
    if os.environ.get("CI"):
        pytest.fail(f"{path} is missing: `make tools` must build it in CI")
    pytest.skip(f"{name} not built (run `make tools`)")


def require_plane_tool(name: str) -> Path:
    """A controller's binary, and the control plane's (etcd, kube-apiserver, kube-scheduler)
    it runs in front of."""
    for tool in ("etcd", "kube-apiserver", "kube-scheduler"):
        require_tool(tool)
    return require_tool(name)


def module_dir(folder: str, module: str) -> Path:
    """The source of `module` as tools/<folder>/go.mod pins it (from the module cache), with
    the Go of that go.mod's `toolchain` line, as tools/build.sh uses (a module may ask for a
    newer Go than the machine's)."""
    env = {**os.environ, "GOWORK": "off"}
    gomod = (REPO / "tools" / folder / "go.mod").read_text(encoding="utf-8")
    toolchain = re.search(r"^toolchain (go\S+)$", gomod, re.MULTILINE)
    if toolchain:
        env["GOTOOLCHAIN"] = toolchain[1]
    proc = subprocess.run(
        ["go", "list", "-m", "-json", module],
        cwd=REPO / "tools" / folder,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"go list -m {module} in tools/{folder}: {proc.stderr.strip()}")
    info = json.loads(proc.stdout)
    if not info.get("Dir"):
        subprocess.run(
            ["go", "mod", "download", module],
            cwd=REPO / "tools" / folder,
            env=env,
            timeout=600,
            check=True,
        )
        return module_dir(folder, module)
    return Path(info["Dir"])
