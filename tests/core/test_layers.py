"""The layers the README draws, checked on the imports themselves (function-local ones too).

sources -> model -> analysis -> plan -> render -> emit, with the knowledge packages
(operators/, cilium/) beside them: analysis, plan and render import nothing from sources,
the model and the knowledge packages import no stage and read no files.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "generator" / "topogen"


def _modules(*names: str) -> list[Path]:
    out: list[Path] = []
    for name in names:
        path = PACKAGE / name
        out += sorted(path.glob("*.py")) if path.is_dir() else [path.with_suffix(".py")]
    return out


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def _rel(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


@pytest.mark.parametrize("path", _modules("analysis", "render", "plan"), ids=_rel)
def test_analysis_plan_and_render_import_nothing_from_sources(path: Path) -> None:
    bad = sorted(i for i in _imports(path) if i.startswith("topogen.sources"))
    assert not bad, f"{_rel(path)} imports {bad}"


@pytest.mark.parametrize("path", _modules("analysis", "plan"), ids=_rel)
def test_analysis_and_plan_import_no_later_stage(path: Path) -> None:
    later = ("topogen.render", "topogen.pipeline.render", "topogen.emit", "topogen.pipeline")
    bad = sorted(i for i in _imports(path) if i.startswith(later))
    if path.parent.name == "analysis":
        bad += sorted(i for i in _imports(path) if i.startswith("topogen.plan"))
    assert not bad, f"{_rel(path)} imports {bad}"


@pytest.mark.parametrize("path", _modules("render"), ids=_rel)
def test_render_reads_no_inputs(path: Path) -> None:
    """What render needs of the inputs is read by sources and handed in; render reads
    only its own templates (render/base.py)."""
    text = path.read_text(encoding="utf-8")
    for call in ("open(", "read_text(", "read_bytes(", "read_objects(", "iter_documents("):
        assert call not in text, f"{_rel(path)} calls {call}"


KNOWLEDGE_MAY_IMPORT = ("topogen.errors", "topogen.manifest", "topogen.model", "topogen.names")
STDLIB_OK = ("__future__", "abc", "collections", "dataclasses", "typing", "datetime", "enum")
STDLIB_OK += ("fractions", "functools")
STDLIB_OK += ("hashlib", "re")  # pure: the hashed and matched names controllers make


@pytest.mark.parametrize(
    "path", _modules("operators", "cilium", "model", "manifest", "names", "errors"), ids=_rel
)
def test_model_and_knowledge_packages_import_no_stage_and_read_no_files(path: Path) -> None:
    own = f"topogen.{path.parent.name}" if path.parent != PACKAGE else "topogen.none"
    for name in _imports(path):
        ok = name.split(".")[0] in STDLIB_OK or name.startswith((*KNOWLEDGE_MAY_IMPORT, own))
        assert ok, f"{_rel(path)} imports {name}"
    text = path.read_text(encoding="utf-8")
    assert "open(" not in text and "read_text(" not in text, _rel(path)
