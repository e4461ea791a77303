"""The wheel carries the templates (the top-level templates/) as package data
topogen/templates/ and the license as SPDX metadata, so `pip install .` (not only
editable) can render, and installing warns of nothing."""

from __future__ import annotations

import fnmatch
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

from setuptools import find_packages

from tooling import REPO

TEMPLATES = REPO / "templates"


def _template_files() -> list[str]:
    return sorted(
        p.relative_to(TEMPLATES).as_posix()
        for p in TEMPLATES.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )


def test_package_data_globs_cover_every_template() -> None:
    """pyproject's package-data globs match every file under templates/ (each glob some
    file), and its package list is generator/'s packages plus templates/ and its folders
    that could be packages (cheap: no build)."""
    setup = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    setup = setup["setuptools"]
    assert setup["package-dir"] == {"": "generator"}
    # the package's templates are the top-level templates/ (a relative symlink: the
    # layout stays as documented, and an editable install needs no import hook)
    link = REPO / "generator" / "topogen" / "templates"
    assert link.is_symlink() and link.readlink().as_posix() == "../../templates"
    assert link.resolve() == TEMPLATES.resolve() and (TEMPLATES / "kyverno").is_dir()
    matched: set[str] = set()
    for package, globs in setup["package-data"].items():
        if not package.startswith("topogen.templates"):
            continue
        folder = "/".join(package.split(".")[2:])
        for glob in globs:
            hits = {
                f
                for f in _template_files()
                if fnmatch.fnmatchcase(f, f"{folder}/{glob}".lstrip("/"))
            }
            assert hits, (package, glob)
            matched |= hits
    files = _template_files()
    assert len(files) > 10
    assert sorted(set(files) - matched) == []
    folders = sorted(p.name for p in TEMPLATES.iterdir() if p.is_dir() and p.name.isidentifier())
    found = find_packages(str(REPO / "generator"))
    want = [*found, "topogen.templates", *(f"topogen.templates.{f}" for f in folders)]
    assert sorted(setup["packages"]) == sorted(want)


def test_wheel_ships_every_template_and_the_license(tmp_path: Path) -> None:
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path), str(REPO)],
        check=True,
        timeout=300,
        capture_output=True,
        text=True,
    )
    said = build.stdout + build.stderr
    assert "deprecated" not in said.lower(), said  # no setuptools license-table warning
    assert "warning" not in said.lower(), said  # nor any other (package data, ...)
    wheel = next(tmp_path.glob("topogen-*.whl"))
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
    templates = _template_files()
    assert len(templates) > 10
    missing = [t for t in templates if f"topogen/templates/{t}" not in names]
    assert not missing
    assert not [n for n in names if "/data/" in n]  # nothing outside the package
    metadata_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
    metadata = Parser().parsestr(archive.read(metadata_name).decode("utf-8"))
    assert metadata["License-Expression"] == "Apache-2.0"
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "Apache License" in (REPO / "LICENSE").read_text(encoding="utf-8")
