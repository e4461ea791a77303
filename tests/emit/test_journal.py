"""A render killed at every step of its journal (emit/journal.py): each file is old or new
at the moment of the kill, and the next topogen command, whichever it is, finishes the
render or rolls it back before anything else, leaving the whole old tree or the whole new
one; `diff --check` counts a finished interruption as drift.

The render runs in a forked child that SIGKILLs itself at its n-th checkpoint (a point
between two steps), for n = 0, 1, ... until a render finishes without reaching n.
"""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from helpers import rendered_tree
from tooling import REPO
from topogen.cli import main
from topogen.config import load_config
from topogen.emit import journal
from topogen.emit.layout import CONTROL, MANIFEST, TREE
from topogen.emit.writer import GENERATED_HEADER, write_tree
from topogen.pipeline.render import render
from topogen.render.base import RenderedFile

EXAMPLE = REPO / "examples" / "zone-split"
HEADER = GENERATED_HEADER.format(config="topogen.yaml")
AFTER = GENERATED_HEADER.format(config="topogen-after.yaml")  # as `render -c` it writes
TOPS = ("kustomize", "monitoring", "policies")
STALE = "policies/lab/kyverno/topogen-old-group-mutate.yaml"


def generated(root: Path) -> dict[str, bytes]:
    """The generated files under root's top folders (through symlinks), by path."""
    return {p: d for p, d in rendered_tree(root).items() if p.split("/")[0] in TOPS}


def _killed_at(n: int, files: list[RenderedFile], out: Path) -> bool:
    """Render `files` into out in a child killed at its n-th checkpoint; False when the
    render finished first."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            seen = [0]

            def kill(step: str) -> None:
                if seen[0] == n:
                    os.kill(os.getpid(), signal.SIGKILL)
                seen[0] += 1

            journal._checkpoint = kill
            write_tree(files, out, AFTER)
        except BaseException:
            code = 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return True
    assert os.WEXITSTATUS(status) == 0, "the render failed in the child"
    return False


def _command(root: Path, n: int) -> tuple[str, Callable[[], Result]]:
    """The n-th command, in turn, to run after a kill (each names the tree its own way:
    the config's folder, --out, the folder given, the working folder)."""
    after = str(root / "topogen-after.yaml")
    commands: list[tuple[str, list[str]]] = [
        ("analyze", ["analyze", "-c", after]),
        ("diff --check", ["diff", "-c", after, "--check"]),
        ("render --stdout", ["render", "-c", after, "--stdout"]),
        ("connectivity", ["connectivity", "-c", after]),
        ("completion", ["completion", "bash"]),
        ("explain", ["explain", "-c", after, "--from", "ml-demo/trainer-coordinator",
                     "--to", "ml-demo/trainer-workers"]),
        ("init", ["init", str(root)]),
        ("render --out", ["render", "-c", after, "--out", str(root)]),
    ]  # fmt: skip
    name, args = commands[n % len(commands)]

    def run() -> Result:
        here = Path.cwd()
        os.chdir(root if name == "completion" else here)
        try:
            return CliRunner().invoke(main, args)
        finally:
            os.chdir(here)

    return name, run


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, list[RenderedFile], dict[str, bytes], dict[str, bytes]]:
    """A rendered copy of zone-split (with one stale generated file, so a render removes
    one), the files of topogen-after.yaml, and the tree before and after them."""
    root = tmp_path / "base"
    shutil.copytree(EXAMPLE, root)
    write_tree(render(load_config(root / "topogen.yaml")).files, root, HEADER)
    (root / STALE).write_text(HEADER + "kind: Old\n")
    files = render(load_config(root / "topogen-after.yaml")).files
    fresh = tmp_path / "fresh"
    write_tree(files, fresh, AFTER)
    return root, list(files), generated(root), generated(fresh)


def _as_symlinked(root: Path) -> None:
    """The layout of the topogen before plain folders (tops symlinked into .topogen/tree)."""
    tree = root / CONTROL / TREE
    tree.mkdir()
    (root / CONTROL / MANIFEST).rename(tree / MANIFEST)
    for top in TOPS:
        (root / top).rename(tree / top)
        (root / top).symlink_to(f"{CONTROL}/{TREE}/{top}")


def _each_file_old_or_new(out: Path, old: dict[str, bytes], new: dict[str, bytes]) -> None:
    now = generated(out)
    for path in sorted(set(old) | set(new) | set(now)):
        assert now.get(path) in (old.get(path), new.get(path)), f"{path} is neither old nor new"


def _kill_everywhere(
    root: Path,
    files: list[RenderedFile],
    old: dict[str, bytes],
    new: dict[str, bytes],
    tmp_path: Path,
    per_file: bool = True,
) -> dict[str, int]:
    outcomes = {"old": 0, "new": 0, "drift": 0}
    for n in range(500):
        out = tmp_path / f"kill-{n}"
        shutil.copytree(root, out, symlinks=True)
        if not _killed_at(n, files, out):
            assert generated(out) == new
            assert n > 10, "too few checkpoints: the kills prove little"
            return outcomes
        if per_file:
            _each_file_old_or_new(out, old, new)
        was_interrupted = (out / CONTROL / journal.JOURNAL).is_dir()
        name, command = _command(out, n)
        result = command()
        assert result.exit_code in (0, 1, 2), f"after kill {n}, {name}: {result.output}"
        assert "Traceback" not in result.output
        seen = generated(out)
        assert seen in (old, new), f"after kill {n}, {name} left a mix"
        outcomes["old" if seen == old else "new"] += 1
        assert not journal.interrupted(out)
        assert sorted(os.listdir(out / CONTROL)) in ([MANIFEST], [TREE]), os.listdir(out / CONTROL)
        if name == "diff --check" and was_interrupted and seen == new:
            # finished now, so as fresh as a render: still drift, as it was committed
            assert result.exit_code == 1 and "interrupted" in result.stderr
            outcomes["drift"] += 1
    raise AssertionError("the render never finished")


@pytest.mark.slow
def test_a_render_killed_at_every_step_is_finished_or_rolled_back(
    trees: tuple[Path, list[RenderedFile], dict[str, bytes], dict[str, bytes]], tmp_path: Path
) -> None:
    root, files, old, new = trees
    outcomes = _kill_everywhere(root, files, old, new, tmp_path)
    # the kills landed before the commit (rolled back) and after it (finished)
    assert outcomes["old"] >= 2 and outcomes["new"] >= 10 and outcomes["drift"] >= 1, outcomes


@pytest.mark.slow
@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two-renames"])
def test_a_conversion_killed_at_every_step_is_finished_or_rolled_back(
    trees: tuple[Path, list[RenderedFile], dict[str, bytes], dict[str, bytes]],
    tmp_path: Path,
    exchange: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """From the symlinked layout: with an atomic exchange every file stays old or new;
    with two renames a kill between them leaves a top folder missing until the next
    command renames it in."""
    root, files, old, new = trees
    if not exchange:
        monkeypatch.setattr(journal, "exchange", lambda a, b: False)
    _as_symlinked(root)
    assert generated(root) == old
    outcomes = _kill_everywhere(root, files, old, new, tmp_path, per_file=exchange)
    assert outcomes["old"] >= 2 and outcomes["new"] >= 10, outcomes


def test_a_file_changed_after_the_kill_stops_the_recovery(
    trees: tuple[Path, list[RenderedFile], dict[str, bytes], dict[str, bytes]], tmp_path: Path
) -> None:
    root, files, old, new = trees
    changed = next(p for p in sorted(new) if old.get(p) not in (None, new[p]))
    # kill right after the commit: nothing is in place yet
    n = 0
    while True:
        out = tmp_path / f"k{n}"
        shutil.copytree(root, out)
        assert _killed_at(n, files, out)
        if (out / CONTROL / journal.JOURNAL).is_dir():
            break
        n += 1
    (out / changed).write_text("mine now\n")
    before = rendered_tree(out)
    result = CliRunner().invoke(main, ["analyze", "-c", str(out / "topogen-after.yaml")])
    assert result.exit_code == 2
    assert f"{changed} changed after a render was interrupted" in result.stderr
    assert rendered_tree(out) == before  # nothing touched
    shutil.rmtree(out / CONTROL / journal.JOURNAL)  # as the message says: keep the tree as it is
    assert CliRunner().invoke(
        main, ["analyze", "-c", str(out / "topogen-after.yaml")]
    ).exit_code in (0, 1)


@pytest.mark.parametrize(
    "plan",
    [
        journal.Plan((), (), False, False),
        journal.Plan(
            ("policies",),
            (
                journal.Change("policies/a.yaml", None, "ab" * 32),
                journal.Change('odd "name" é\n.yaml', "cd" * 32, None),
                journal.Change("kustomize/b.yaml", "ef" * 32, "01" * 32),
            ),
            True,
            True,
        ),
    ],
)
def test_the_plan_reads_back_as_written(plan: journal.Plan) -> None:
    text = plan.to_json()
    assert journal.Plan.from_json(text) == plan
    assert text.count("\n") == len(plan.changes) + 3  # a change per line
