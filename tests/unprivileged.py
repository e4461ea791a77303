"""Running topogen as an unprivileged user (uid 999, as Argo CD's plugin sidecar does),
for the tests that need permissions to mean something (root reads everything).

topogen comes from the repository's .venv. When uid 999 cannot execute its interpreter
(a venv made from a Python under root's private home), `launcher_dir` makes a `topogen`
launcher instead: a world-readable python3.X of the same minor version running the same
venv's site-packages.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from tooling import REPO

__all__ = ["VENV_BIN", "as_uid_999", "launcher_dir"]

VENV_BIN = REPO / ".venv" / "bin"


def as_uid_999(cmd: list[str]) -> list[str]:
    """The command as uid 999 (a no-op when the tests do not run as root)."""
    if os.geteuid() == 0:
        return ["setpriv", "--reuid=999", "--regid=999", "--clear-groups", "--", *cmd]
    return cmd


def launcher_dir(parent: Path = Path("/tmp")) -> Path:
    """A folder with a `topogen` that uid 999 can run (see the module docstring); a new
    one is made in `parent`."""
    probe = as_uid_999(["bash", "-c", "topogen --version"])
    env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin", "HOME": "/tmp"}
    if subprocess.run(probe, env=env, capture_output=True, cwd="/tmp").returncode == 0:
        return VENV_BIN
    minor = f"python{sys.version_info.major}.{sys.version_info.minor}"
    python = next(
        (p for p in (f"/usr/bin/{minor}", f"/usr/local/bin/{minor}") if os.access(p, os.X_OK)), None
    )
    if python is None:
        pytest.skip(f"no {minor} that uid 999 can run, and the .venv's is private")
    folder = Path(tempfile.mkdtemp(prefix="topogen-launcher-", dir=parent))
    folder.chmod(0o755)
    launcher = folder / "topogen"
    launcher.write_text(
        f"#!{python}\n"
        "import site, sys\n"
        f"site.addsitedir({sysconfig.get_paths()['purelib']!r})\n"
        "from topogen.cli import main\n"
        "sys.exit(main())\n"
    )
    launcher.chmod(0o755)
    return folder
