"""Start-up: a command imports what it runs and nothing heavy besides. `analyze` on a
config the fast reader vouches for imports neither pydantic nor the render stage;
`render` imports only the engines its config names; no command loads multiprocessing,
ctypes or OpenSSL (hashlib) before it needs them. (How long a start-up takes is measured
by bench/startup.py, not here.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ZONE_SPLIT = REPO / "examples" / "zone-split" / "topogen.yaml"

# never on these commands' paths for the bundled example (the names of sys.modules)
HEAVY = (
    "pydantic", "pydantic_core", "multiprocessing", "ctypes", "_hashlib", "hashlib",
    "tempfile", "shutil", "topogen.config.models", "topogen.configerrors", "topogen.fields",
    "topogen.autoscaling", "difflib",
)  # fmt: skip
# the operator modules a command on zone-split imports: the registry and the one it reads
OPERATOR_MODULES = ("base", "custom", "profile", "registry")
# what finishes an interrupted render, loaded only when the output tree holds one
NO_LEFTOVERS = ("topogen.emit.journal", "topogen.emit.layout", "topogen.emit.swap")
# the engines' modules; zone-split names kyverno only
OTHER_ENGINES = (
    "topogen.render.gatekeeper", "topogen.render.gatekeeper_tests", "topogen.render.native",
    "topogen.render.native_kueue", "topogen.render.kyverno_legacy",
)  # fmt: skip


def _modules_after(args: list[str], cache: Path | None = None) -> set[str]:
    """The modules a topogen command left in sys.modules (run in a fresh interpreter;
    with `cache`, that folder as XDG_CACHE_HOME)."""
    code = (
        "import sys\n"
        "from topogen.cli import main\n"
        "try:\n"
        f"    main({args!r}, prog_name='topogen')\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, 1, None), exc.code\n"
        "print('--- modules', *sorted(sys.modules), sep='\\n', file=sys.stderr)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=REPO,
        env={**os.environ, "XDG_CACHE_HOME": str(cache)} if cache else None,
    )
    assert out.stdout  # it ran
    return set(out.stderr.split("--- modules\n", 1)[1].split())


def _found(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules for n in names if m == n or m.startswith(n + "."))


def test_analyze_imports_no_pydantic_render_or_heavy_stdlib() -> None:
    modules = _modules_after(["analyze", "-c", str(ZONE_SPLIT)])
    assert "topogen.config.records" in modules and "topogen.pipeline.analyze" in modules
    assert not _found(modules, HEAVY)
    assert not _found(modules, ("jinja2", "topogen.render", "topogen.diff", "topogen.audit"))
    assert not _found(modules, NO_LEFTOVERS)
    # the operators of the objects it reads (zone-split: Deployments), not every one
    assert _found(modules, ("topogen.operators",)) == [
        "topogen.operators",
        *(f"topogen.operators.{m}" for m in OPERATOR_MODULES),
    ]


def test_connectivity_imports_no_render_nor_journal() -> None:
    modules = _modules_after(["connectivity", "-o", "csv", "-c", str(ZONE_SPLIT)])
    assert "topogen.connectivity.core" in modules and "topogen.emit.leftovers" in modules
    assert not _found(modules, HEAVY)
    assert not _found(modules, ("jinja2", "topogen.render", "topogen.pipeline", *NO_LEFTOVERS))
    assert "topogen.connectivity.explain" not in modules  # `explain`'s breakdown


def test_render_imports_only_the_engines_its_config_names(tmp_path: Path) -> None:
    cold = _modules_after(["render", "--stdout", "-c", str(ZONE_SPLIT)], tmp_path)
    assert "topogen.render.kyverno" in cold and "jinja2.environment" in cold  # compiles
    assert not _found(cold, OTHER_ENGINES)
    assert not _found(cold, HEAVY)
    # Jinja2's package __init__ is not run: its bytecode cache and loaders are not needed
    assert not _found(cold, ("jinja2.bccache", "jinja2.loaders", "jinja2.ext"))
    # the templates' kept lite code runs without Jinja2 (render/templaterun.py)
    warm = _modules_after(["render", "--stdout", "-c", str(ZONE_SPLIT)], tmp_path)
    assert "topogen.render.kyverno" in warm and "topogen.render.templaterun" in warm
    assert not _found(warm, ("jinja2", "markupsafe", *OTHER_ENGINES, *HEAVY))
    # a printed render writes no tree: no writer, nor its journal
    assert not _found(warm, ("topogen.emit.writer", *NO_LEFTOVERS))


def test_jinja2_is_whole_for_whoever_imports_it_after_a_render() -> None:
    code = (
        "from topogen.render.base import _env\n"
        "assert _env().get_template('monitoring/rules.yaml.j2').render\n"
        "import jinja2, jinja2.loaders\n"
        "from jinja2 import Environment, FileSystemLoader, __version__\n"
        "assert Environment is jinja2.environment.Environment\n"
        "assert FileSystemLoader is jinja2.loaders.FileSystemLoader\n"
        "print(__version__, jinja2.StrictUndefined is jinja2.runtime.StrictUndefined)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    import jinja2

    assert out.stdout.split() == [jinja2.__version__, "True"], out.stderr


@pytest.mark.parametrize("engine", ["gatekeeper", "native", "kyverno-legacy"])
def test_render_imports_the_engine_a_config_names(tmp_path: Path, engine: str) -> None:
    folder = tmp_path / "zone-split"
    shutil.copytree(ZONE_SPLIT.parent, folder)
    config = folder / "topogen.yaml"
    config.write_text(config.read_text(encoding="utf-8") + f"engines: [{engine}]\n", "utf-8")
    modules = _modules_after(["render", "--stdout", "-c", str(config)])
    wanted = f"topogen.render.{engine.replace('-', '_')}"
    assert wanted in modules
    assert not _found(modules, tuple(m for m in OTHER_ENGINES if not m.startswith(wanted)))
    # (render.kyverno is imported by every render: kustomize and native share its names)
