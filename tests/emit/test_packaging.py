"""The wheel carries the templates, so `pip install .` (not only editable) can render."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tooling import REPO


def test_wheel_ships_every_template(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
        check=True,
        timeout=300,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("topogen-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = sorted(
        p.relative_to(REPO / "templates").as_posix()
        for p in (REPO / "templates").rglob("*")
        if p.is_file()
    )
    assert templates
    prefix = next(n.split("/data/")[0] for n in names if "/data/share/topogen/templates/" in n)
    missing = [t for t in templates if f"{prefix}/data/share/topogen/templates/{t}" not in names]
    assert not missing
