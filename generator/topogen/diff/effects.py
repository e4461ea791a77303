"""The effects around the pure `diff()`: rendering into temporary folders, reading a git ref.

Each entry point returns a DiffReport; nothing here prints or picks an exit code.
"""

from __future__ import annotations

import os
import subprocess
import tarfile
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from topogen.config import load_config
from topogen.diff.changes import DiffReport, Tree
from topogen.diff.core import diff
from topogen.diff.review import Rendered, rendered_facts
from topogen.diff.tree import KNOWN_TOPS, generated_tops, load_tree
from topogen.emit.writer import GENERATED_HEADER, write_tree
from topogen.errors import InputError, InternalError, Refusal, TopogenError
from topogen.pipeline.analyze import AnalysisReport
from topogen.pipeline.analyze import repins as repins_of
from topogen.pipeline.render import render
from topogen.yamltext import display_path

__all__ = ["RenderedSide", "diff_configs", "diff_dirs", "diff_rendered", "render_side"]


FRESH = "rendered now"
AT_REF = "inputs at this git ref, rendered now"


@dataclass(frozen=True)
class RenderedSide:
    tree: Tree
    analysis: AnalysisReport
    refused: tuple[Refusal, ...]

    def facts(self) -> Rendered:
        """What this render said beyond its tree, for the reviewer's summary."""
        repins = {  # and why a job running where it is stays there
            (p.cluster, j.job): j.repin if j.change == "moved" else f"running in {j.running}"
            for p in self.analysis.plans
            for j in p.job_domains
            if j.change == "moved" or (j.running is not None and j.running == j.domain)
        }
        said = {f"cluster {c}: {line}" for p in self.analysis.plans for c, line in
                ((p.cluster, r) for r in repins_of(p))}  # fmt: skip
        warnings = [
            (c, str(getattr(w, "message", w)))
            for w in self.analysis.warnings
            if (c := getattr(w, "cluster", None)) is not None and str(w) not in said
        ]
        jobs = {(p.cluster, p.group.name): p.job_gpus for p in self.analysis.plans}
        refusals = [(r.cluster, r.group, r.reason) for r in self.refused]
        return rendered_facts(refusals, warnings, repins, jobs)

    def compared(self, old: Tree) -> Tree:
        """The tree to compare: a refused render writes nothing, so the old one stays."""
        return old if self.refused else self.tree


def render_side(
    config_path: Path, allow_outside: bool = False, out: Path | None = None
) -> RenderedSide:
    """Render a config into a temporary folder and read the tree back; `out`: the output
    tree of its last render (default: the config's folder), whose placements it keeps."""
    cfg = load_config(config_path, allow_outside=allow_outside)
    result = render(cfg, out=out)
    with tempfile.TemporaryDirectory(prefix="topogen-diff-") as tmp:
        header = GENERATED_HEADER.format(config=config_path.name)
        if result.files:
            write_tree(result.files, Path(tmp), header)
        tree = load_tree(Path(tmp))
    return RenderedSide(tree, result.report, result.refused)


def diff_dirs(old_dir: Path, new_dir: Path, all_files: bool = False) -> DiffReport:
    """Two rendered trees, as they are on disk: the files topogen owns in each (see
    load_tree), or with `all_files` every file."""
    return diff(
        load_tree(old_dir, owned_only=not all_files),
        load_tree(new_dir, owned_only=not all_files),
        old_label=_shown(old_dir),
        new_label=_shown(new_dir),
        old_what="rendered tree",
        new_what="rendered tree",
    )


def diff_rendered(
    config_path: Path,
    against: str | None = None,
    out_dir: Path | None = None,
    allow_outside: bool = False,
) -> DiffReport:
    """A fresh render of the config against the committed output (the folder it is written
    to: `out_dir`, by default the config's folder), another folder, or the render at a git ref.
    """
    shown = _shown(config_path)
    if against is not None and not Path(against).is_dir():
        return _diff_against_ref(config_path, against, allow_outside, out_dir)
    old_dir = Path(against) if against is not None else (out_dir or config_path.parent)
    if not old_dir.is_dir():
        raise InputError("no such folder", path=_shown(old_dir))
    # the old tree's placements are what the new render keeps: the report says what the
    # change moves from there
    new = render_side(config_path, allow_outside, old_dir)
    tops = new.tree.tops | generated_tops(old_dir, set(KNOWN_TOPS) - new.tree.tops)
    old = load_tree(old_dir, tops)
    where = _shown(old_dir)
    warnings = []
    if not _has_output(old_dir, tops):
        warnings.append(f"{where} holds no rendered output: everything is new")
    return diff(
        old,
        new.compared(old),
        old_label=where,
        new_label=shown,
        old_what="committed output" if against is None else "rendered tree",
        new_what=FRESH,
        warnings=warnings,
        rendered=new.facts(),
    )


def diff_configs(
    old_config: Path, new_config: Path, *, old_label: str = "old", new_label: str = "new"
) -> DiffReport:
    """Render two configs and compare output and analysis."""
    old, new = render_side(old_config), render_side(new_config)
    return diff(
        old.tree,
        new.tree,
        old_analysis=old.analysis,
        new_analysis=new.analysis,
        old_label=old_label,
        new_label=new_label,
        old_what="rendered",
        new_what="rendered",
    )


def _has_output(root: Path, tops: Iterable[str]) -> bool:
    return any((root / t).is_dir() for t in tops)


def _shown(path: Path) -> str:
    """A path as the user gave it (absolute stays absolute)."""
    return Path(display_path(path)).as_posix()


# -- git ------------------------------------------------------------------------------------


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=300
        )
    except FileNotFoundError:
        raise InputError("git is not installed: --against GIT_REF needs it") from None


def _diff_against_ref(
    config_path: Path, ref: str, allow_outside: bool, out_dir: Path | None = None
) -> DiffReport:
    here = config_path.resolve().parent
    if not here.is_dir():
        raise InputError("config file not found", path=_shown(config_path))
    commit = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], here)
    if commit.returncode != 0:
        raise InputError(
            f"--against {ref}: neither a folder nor a git ref",
            hint="name a folder of rendered output, a branch, a tag or a commit",
        )
    top = Path(_git(["rev-parse", "--show-toplevel"], here).stdout.strip()).resolve()
    try:
        rel = config_path.resolve().relative_to(top)
    except ValueError:
        raise InputError(
            "the config is not inside the git repository", path=_shown(config_path)
        ) from None
    committed = (out_dir or config_path.parent).resolve()
    with tempfile.TemporaryDirectory(prefix="topogen-diff-ref-") as tmp:
        _extract(commit.stdout.strip(), top, Path(tmp))
        old_config = Path(tmp) / rel
        old_out = _under(committed, top, Path(tmp))
        # the new render keeps the placements of the ref's output: the report says what
        # the change moves from there
        new = render_side(config_path, allow_outside, old_out or committed)
        if not old_config.is_file():
            return diff(
                Tree({}),
                new.compared(Tree({})),
                old_label=ref,
                new_label=_shown(config_path),
                old_what=AT_REF,
                new_what=FRESH,
                warnings=[f"{rel.as_posix()} does not exist at {ref}: everything is new"],
                rendered=new.facts(),
            )
        try:
            old = render_side(old_config, allow_outside, old_out)
        except InternalError:
            raise
        except TopogenError as exc:
            raise InputError(f"at {ref}: " + _unrooted(str(exc), Path(tmp))) from None
    return diff(
        old.tree,
        new.compared(old.tree),
        old_analysis=old.analysis,
        new_analysis=new.analysis,
        old_label=ref,
        new_label=_shown(config_path),
        old_what=AT_REF,
        new_what=FRESH,
        rendered=new.facts(),
    )


def _under(path: Path, top: Path, checkout: Path) -> Path | None:
    """The folder of the checkout at `path`'s place in the repository (None: outside it)."""
    try:
        mine = checkout / path.relative_to(top)
    except ValueError:
        return None
    return mine if mine.is_dir() else None


def _extract(commit: str, top: Path, dest: Path) -> None:
    """The commit's files into dest (`git archive`: the repository is left as it is)."""
    with subprocess.Popen(
        ["git", "archive", "--format=tar", commit],
        cwd=top,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout is not None
        try:
            with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
                tar.extractall(dest, filter="data")
        except (tarfile.TarError, OSError) as exc:
            proc.kill()
            raise InputError(f"cannot read {commit[:12]} from git: {exc}") from None
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise InputError(f"git archive {commit[:12]} failed: {err.strip()}")


def _unrooted(message: str, root: Path) -> str:
    """An error message about a file of the temporary checkout, with the checkout's path cut."""
    forms = {str(root), str(root.resolve()), os.path.relpath(root), os.path.relpath(root.resolve())}
    for form in sorted(forms, key=len, reverse=True):
        message = message.replace(form + os.sep, "").replace(form, "")
    return message
