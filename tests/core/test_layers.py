"""The layers docs/development/architecture.md draws, checked on the imports themselves (function-local and
TYPE_CHECKING ones too).

    vocabulary -> knowledge -> config -> sources -> analysis -> plan -> render -> emit
    -> pipeline -> command families -> cli

A module imports only from its own layer or a lower one; no two files import each other,
however long the way round; no top-level module shares its name with a module in a folder;
the model and the knowledge packages (operators/, cilium/, kueue/) read no files; render reads no
inputs; every module of generator/ and bench/ stays under 600 lines.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "generator" / "topogen"
MAX_LINES = 600

# the layers, lowest first: the first part of a module's name under topogen says its layer
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "vocabulary",
        frozenset(
            {"", "errors", "names", "model", "manifest", "plaindata", "textui", "yamlfast"}
            | {"blockyaml", "jsontext"}
            | {"yamltext", "nodepools", "codecache", "templatecache", "parsecache", "digests"}
            | {"modulecache", "packfile", "patterncache", "classrecipes"}
        ),
    ),
    ("knowledge", frozenset({"operators", "cilium", "kueue"})),
    ("config", frozenset({"config", "configerrors", "autoscaling", "fields"})),
    ("sources", frozenset({"sources"})),
    ("analysis", frozenset({"analysis"})),
    ("plan", frozenset({"plan"})),
    ("render", frozenset({"render"})),
    ("emit", frozenset({"emit"})),
    ("pipeline", frozenset({"pipeline"})),
    ("commands", frozenset({"diff", "audit", "connectivity", "init"})),
    ("cli", frozenset({"cli", "__main__"})),
)


def _modules(*names: str) -> list[Path]:
    out: list[Path] = []
    for name in names:
        path = PACKAGE / name
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")]
    return out


ALL = sorted(PACKAGE.rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in ALL}


def _imports(path: Path) -> set[str]:
    """Every name an import statement of the file names (module, and module.name)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def _imported_files(path: Path) -> set[str]:
    """The topogen modules (files) the file imports: `from a.b import c` names a.b.c when
    that is a module, else a.b."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in MODULES)
        elif isinstance(node, ast.ImportFrom) and node.module in MODULES:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                out.add(full if full in MODULES else node.module)
    return out


def _layer(module: str) -> int:
    first = module.split(".")[1] if "." in module else ""
    return next(i for i, (_, names) in enumerate(LAYERS) if first in names)


def _rel(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        first = module.split(".")[1] if "." in module else ""
        assert any(first in names for _, names in LAYERS), f"{module}: add it to LAYERS"


def _back_up(module: str, imported: set[str]) -> list[str]:
    """The modules of a higher layer than `module`'s among `imported`."""
    mine = _layer(module)
    return sorted(f"{m} ({LAYERS[_layer(m)][0]})" for m in imported if _layer(m) > mine)


@pytest.mark.parametrize("path", ALL, ids=_rel)
def test_no_import_from_a_higher_layer(path: Path) -> None:
    module = _module_name(path)
    higher = _back_up(module, _imported_files(path))
    assert not higher, f"{_rel(path)} ({LAYERS[_layer(module)][0]}) imports {higher}"


def _cycles(graph: dict[str, set[str]]) -> Iterator[list[str]]:
    """The strongly connected components of more than one file (Tarjan), each a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def visit(v: str) -> Iterator[list[str]]:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                yield from visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                yield sorted(component)

    for v in sorted(graph):
        if v not in index:
            yield from visit(v)


def test_no_import_circles_among_files() -> None:
    graph = {m: _imported_files(p) for m, p in MODULES.items()}
    assert not list(_cycles(graph))


def test_the_circle_check_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert list(_cycles(graph)) == [["a", "b", "c"]]


def test_the_layer_check_finds_an_import_back_up() -> None:
    # config reading through sources, render naming the pipeline's report: as they did
    assert _back_up("topogen.config", {"topogen.sources.yamlio"}) == [
        "topogen.sources.yamlio (sources)"
    ]
    assert _back_up("topogen.render.kustomize", {"topogen.pipeline.analyze", "topogen.model"})
    assert not _back_up("topogen.pipeline.analyze", {"topogen.render.kustomize"})


def _clashes(package: Path) -> list[str]:
    top = {p.stem for p in package.glob("*.py")} - {"__init__", "__main__"}
    inside = {p.stem: p for p in package.glob("*/**/*.py")}
    return sorted(
        f"{name}.py and {inside[name].relative_to(package).as_posix()}"
        for name in top & set(inside)
    )


def test_no_top_level_module_is_named_like_one_in_a_folder() -> None:
    assert not _clashes(PACKAGE)


def test_the_name_check_finds_a_clash(tmp_path: Path) -> None:
    for rel in ("model.py", "diff/model.py", "diff/core.py", "plan/core.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("", encoding="utf-8")
    assert _clashes(tmp_path) == ["model.py and diff/model.py"]


@pytest.mark.parametrize("path", _modules("analysis", "render", "plan"), ids=_rel)
def test_analysis_plan_and_render_import_nothing_from_sources(path: Path) -> None:
    bad = sorted(i for i in _imports(path) if i.startswith("topogen.sources"))
    assert not bad, f"{_rel(path)} imports {bad}"


@pytest.mark.parametrize("path", _modules("analysis", "plan"), ids=_rel)
def test_analysis_and_plan_import_no_later_stage(path: Path) -> None:
    later = ("topogen.render", "topogen.emit", "topogen.pipeline")
    bad = sorted(i for i in _imports(path) if i.startswith(later))
    if "analysis" in path.relative_to(PACKAGE).parts:
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
KNOWLEDGE_MAY_IMPORT += ("topogen.digests",)  # the hashed names controllers make
STDLIB_OK = ("__future__", "abc", "collections", "dataclasses", "typing", "datetime", "enum")
STDLIB_OK += ("fractions", "functools")
STDLIB_OK += ("hashlib", "re")  # pure: the hashed and matched names controllers make


@pytest.mark.parametrize(
    "path",
    _modules("operators", "cilium", "kueue", "model", "manifest", "names", "errors"),
    ids=_rel,
)
def test_model_and_knowledge_packages_import_no_stage_and_read_no_files(path: Path) -> None:
    own = f"topogen.{path.parent.name}" if path.parent != PACKAGE else "topogen.none"
    for name in _imports(path):
        ok = name.split(".")[0] in STDLIB_OK or name.startswith((*KNOWLEDGE_MAY_IMPORT, own))
        assert ok, f"{_rel(path)} imports {name}"
    text = path.read_text(encoding="utf-8")
    assert "open(" not in text and "read_text(" not in text, _rel(path)


SOURCES = sorted([*PACKAGE.rglob("*.py"), *(ROOT / "bench").glob("*.py")])


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_modules_stay_under_the_line_limit(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines < MAX_LINES, f"{path.relative_to(ROOT)}: {lines} lines (limit {MAX_LINES})"
