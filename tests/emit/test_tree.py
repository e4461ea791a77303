"""The output tree: plain folders and a manifest; render touches only its own files (and of
those only the ones that change), fails closed, converts an older topogen's layouts, and
repairs what a killed run left (the kills themselves: test_journal.py, test_kill.py)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from helpers import rendered_tree
from tooling import REPO
from topogen.cli import main
from topogen.emit import journal, writer
from topogen.emit.layout import CONTROL, MANIFEST, TREE
from topogen.emit.writer import GENERATED_HEADER

EXAMPLE = REPO / "examples" / "zone-split"
HEADER = GENERATED_HEADER.format(config="topogen.yaml")
TOPS = ("kustomize", "monitoring", "policies")


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def stored(out: Path) -> dict[str, bytes]:
    """Every file under out as stored, hidden ones included (leftovers show here)."""
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A copy of zone-split, rendered into its own folder; returns the folder."""
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLE, root)
    result = invoke("render", "-c", root / "topogen.yaml")
    assert result.exit_code == 0, result.output
    return root


def render_again(root: Path, config: str = "topogen.yaml", *extra: str) -> Result:
    return invoke("render", "-c", root / config, *extra)


# --- layout ------------------------------------------------------------------------------------


def test_layout_is_plain_folders_and_a_manifest(example: Path) -> None:
    for top in TOPS:
        assert (example / top).is_dir() and not (example / top).is_symlink()
    assert sorted(os.listdir(example / CONTROL)) == [MANIFEST]
    manifest = (example / CONTROL / MANIFEST).read_text().splitlines()
    listed = {ln for ln in manifest if not ln.startswith("#")}
    assert listed == set(rendered_tree(example)) - {
        n for n in os.listdir(example) if (example / n).is_file()
    } - set(_inputs(example))


def _inputs(root: Path) -> set[str]:
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).parts[0] in ("cluster", "cilium", "workloads")
    }


@pytest.mark.parametrize(
    "name", sorted(p.parent.name for p in (REPO / "examples").glob("*/topogen.yaml"))
)
def test_every_example_renders_plain_folders(tmp_path: Path, name: str) -> None:
    out = tmp_path / "out"
    result = invoke("render", "-c", REPO / "examples" / name, "--out", out)
    assert result.exit_code == 0, result.output
    tops = sorted(n for n in os.listdir(out) if not n.startswith("."))
    assert tops and set(tops) <= set(TOPS)
    assert not [p for p in out.rglob("*") if p.is_symlink()]
    listed = {ln for ln in (out / CONTROL / MANIFEST).read_text().splitlines() if ln[:1] != "#"}
    assert listed == {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} - {
        f"{CONTROL}/{MANIFEST}"
    }


def test_folder_permissions_follow_the_umask(example: Path) -> None:
    mask = os.umask(0)
    os.umask(mask)
    for folder in (example / "policies", example / "policies" / "lab", example / CONTROL):
        assert folder.stat().st_mode & 0o777 == 0o777 & ~mask, folder


def _mtimes(root: Path) -> dict[str, int]:
    return {
        p.relative_to(root).as_posix(): p.stat().st_mtime_ns
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_a_render_that_changes_nothing_says_so_and_touches_nothing(example: Path) -> None:
    before, times = stored(example), _mtimes(example)
    result = render_again(example)
    assert result.exit_code == 0, result.output
    owned = [ln for ln in (example / CONTROL / MANIFEST).read_text().splitlines() if ln[:1] != "#"]
    assert f"topogen: unchanged: {len(owned)} files under" in result.stderr
    assert "wrote" not in result.stderr
    assert stored(example) == before and _mtimes(example) == times  # the manifest too


def test_a_render_writes_only_the_files_that_change(example: Path) -> None:
    times = _mtimes(example)
    before = rendered_tree(example)
    result = render_again(example, "topogen-after.yaml")
    assert result.exit_code == 0, result.output
    after = generated(example)
    changed = {p for p in after if before.get(p) != after[p]}
    same = {p for p in after if before.get(p) == after[p]}
    assert changed and same
    assert f"wrote {len(changed)} files under" in result.stderr
    assert f"({len(same)} unchanged)" in result.stderr
    assert all(_mtimes(example)[p] == times[p] for p in same)


def test_git_history_follows_the_generated_policies(example: Path) -> None:
    """Plain folders: `git log -- policies/` lists every commit that changed a policy."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=example,
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "first render")
    assert render_again(example, "topogen-after.yaml").exit_code == 0
    git("add", "-A")
    git("commit", "-qm", "second render")
    assert git("log", "--format=%s", "--", "policies/").split("\n")[:2] == [
        "second render",
        "first render",
    ]
    files = git("ls-files", "-s", "policies").splitlines()
    assert files and all(ln.startswith("100644 ") for ln in files)  # files, no links


# --- ownership ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rel",
    [
        "policies/custom/mine.yaml",
        "policies/lab/kyverno/NOTES.md",
        "kustomize/overlays/prod/kustomization.yaml",
        "monitoring/lab/extra.json",
    ],
)
def test_a_file_topogen_did_not_write_stops_the_render(example: Path, rel: str) -> None:
    path = example / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("mine: true\n")
    before = stored(example)
    result = render_again(example, "topogen-after.yaml")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and rel in lines[0] and "changed nothing" in lines[0]
    assert stored(example) == before


def test_an_edited_generated_file_that_lost_its_header_is_kept(example: Path) -> None:
    path = example / "policies" / "lab" / "kyverno" / "topogen-ml-training-mutate.yaml"
    path.write_text("# my own now\n")
    before = stored(example)
    result = render_again(example)
    assert result.exit_code == 2
    assert "no longer carries topogen's generated header" in result.stderr
    assert stored(example) == before


def test_a_stale_generated_file_is_removed_and_reported(example: Path) -> None:
    stale = example / "policies" / "lab" / "kyverno" / "topogen-old-group-worker.yaml"
    stale.write_text(HEADER + "kind: Old\n")
    result = render_again(example)
    assert result.exit_code == 0, result.output
    assert not stale.exists()
    assert "removed 1 generated files the inputs no longer render" in result.stderr
    assert "policies/lab/kyverno/topogen-old-group-worker.yaml" in result.stderr


def test_files_beside_the_tops_are_never_touched(example: Path) -> None:
    before = {
        p: p.read_bytes() for p in example.rglob("*") if p.is_file() and CONTROL not in p.parts
    }
    (example / "NOTES.md").write_text("mine\n")
    assert render_again(example, "topogen-after.yaml").exit_code == 0
    assert (example / "NOTES.md").read_text() == "mine\n"
    for p, data in before.items():
        if p.relative_to(example).parts[0] not in TOPS:
            assert p.read_bytes() == data, p


def test_inputs_in_a_folder_named_like_a_top_are_refused_not_replaced(tmp_path: Path) -> None:
    """networkPolicies under policies/: rendering into the config's folder would replace them."""
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLE, root)
    (root / "cilium").rename(root / "policies")
    cfg = (root / "topogen.yaml").read_text().replace("[cilium/]", "[policies/]")
    (root / "topogen.yaml").write_text(cfg)
    before = stored(root)
    result = render_again(root)
    assert result.exit_code == 2
    assert "policies/zone-policies.yaml is not one of the files topogen wrote" in result.stderr
    assert stored(root) == before


@pytest.mark.parametrize("kind", ["file", "foreign-symlink"])
def test_a_top_that_is_not_a_folder_of_ours_stops_the_render(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLE, root)
    if kind == "file":
        (root / "kustomize").write_text("not a folder\n")
    else:
        (tmp_path / "elsewhere").mkdir()
        (root / "kustomize").symlink_to(tmp_path / "elsewhere")
    result = render_again(root)
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "kustomize is" in result.stderr
    assert not (root / CONTROL).exists() and not (root / "policies").exists()


def test_a_refused_render_into_a_new_folder_leaves_no_control_folder(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLE, root)
    (root / "policies" / "custom").mkdir(parents=True)
    (root / "policies" / "custom" / "mine.yaml").write_text("mine: true\n")
    result = render_again(root)
    assert result.exit_code == 2 and "policies/custom/mine.yaml" in result.stderr
    assert not (root / CONTROL).exists()
    _too_small(root)
    (root / "policies" / "custom" / "mine.yaml").unlink()
    result = invoke("render", "-c", root / "topogen.yaml", "--out", tmp_path / "new")
    assert result.exit_code == 1 and not (tmp_path / "new" / CONTROL).exists()


# --- an older topogen's tree --------------------------------------------------------------------


def _as_real_folders(root: Path) -> None:
    """The tree as the first topogen wrote it: real top folders and no manifest."""
    (root / CONTROL / MANIFEST).unlink()
    (root / CONTROL).rmdir()


def _as_symlinked(root: Path) -> None:
    """The tree as the topogen before plain folders wrote it: the top folders symlinks into
    .topogen/tree, which holds the files and the manifest."""
    tree = root / CONTROL / TREE
    tree.mkdir()
    (root / CONTROL / MANIFEST).rename(tree / MANIFEST)
    for top in TOPS:
        (root / top).rename(tree / top)
        (root / top).symlink_to(f"{CONTROL}/{TREE}/{top}")


def test_a_tree_of_real_folders_without_a_manifest_is_adopted(example: Path) -> None:
    view = rendered_tree(example)
    _as_real_folders(example)
    (example / "policies" / "lab" / "kyverno" / "topogen-gone.yaml").write_text(HEADER + "x: 1\n")
    result = render_again(example)
    assert result.exit_code == 0, result.output
    assert rendered_tree(example) == view
    assert sorted(os.listdir(example / CONTROL)) == [MANIFEST]
    assert "topogen-gone.yaml" in result.stderr


def test_an_old_layout_tree_with_a_foreign_file_is_left_alone(example: Path) -> None:
    _as_real_folders(example)
    (example / "policies" / "lab" / "mine.yaml").write_text("mine: true\n")
    before = stored(example)
    result = render_again(example)
    assert result.exit_code == 2 and "policies/lab/mine.yaml" in result.stderr
    assert stored(example) == before and not (example / CONTROL).exists()


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two-renames"])
def test_a_symlinked_tree_is_converted_to_plain_folders_in_one_render(
    example: Path, exchange: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not exchange:
        monkeypatch.setattr(journal, "exchange", lambda a, b: False)
    _as_symlinked(example)
    before = rendered_tree(example)
    result = render_again(example, "topogen-after.yaml")
    assert result.exit_code == 0, result.output
    converted = [ln for ln in result.stderr.splitlines() if "converted" in ln]
    assert len(converted) == 1 and "to plain folders" in converted[0]
    assert all(f"{t}/" in converted[0] for t in TOPS)
    for top in TOPS:
        assert (example / top).is_dir() and not (example / top).is_symlink()
    assert sorted(os.listdir(example / CONTROL)) == [MANIFEST]
    fresh = tmp_render(example, "topogen-after.yaml")
    assert generated(example) == fresh != generated_of(before)
    again = render_again(example, "topogen-after.yaml")
    assert "converted" not in again.stderr and "unchanged" in again.stderr


def test_a_symlinked_tree_with_its_swap_cut_is_completed_and_converted(example: Path) -> None:
    """The topogen before plain folders swapped .topogen/tree whole, by two renames where
    it could not exchange: a kill between them left the new tree as .topogen/next-*."""
    _as_symlinked(example)
    view = rendered_tree(example)
    (example / CONTROL / TREE).rename(example / CONTROL / "next-x1")
    (example / CONTROL / "old-x1").mkdir()
    result = render_again(example)
    assert result.exit_code == 0, result.output
    assert "removed what an interrupted render left: .topogen/old-x1" in result.stderr
    assert rendered_tree(example) == view
    assert sorted(os.listdir(example / CONTROL)) == [MANIFEST]


def tmp_render(example: Path, config: str) -> dict[str, bytes]:
    """What a render of `config` writes into a folder of its own."""
    out = example.parent / f"fresh-{config}"
    assert invoke("render", "-c", example / config, "--out", out).exit_code == 0
    return generated(out)


def generated_of(view: dict[str, bytes]) -> dict[str, bytes]:
    return {p: data for p, data in view.items() if p.split("/")[0] in TOPS}


def generated(root: Path) -> dict[str, bytes]:
    """The generated files under root (its top folders), by relative path."""
    return generated_of(rendered_tree(root))


# --- fail closed -----------------------------------------------------------------------------


def _too_small(root: Path) -> None:
    nodes = root / "cluster" / "nodes.yaml"
    nodes.write_text(nodes.read_text().replace('nvidia.com/gpu: "2"', 'nvidia.com/gpu: "1"'))


def test_a_refused_group_writes_nothing_and_names_what_would_go(example: Path) -> None:
    _too_small(example)
    before = stored(example)
    result = render_again(example)
    assert result.exit_code == 1
    assert stored(example) == before
    err = result.stderr
    assert len(err.strip().splitlines()) == 1
    assert "group ml-training: no domain can hold it" in err
    assert "nothing written" in err and "keeps its policies" in err
    assert "MutatingPolicy topogen-ml-training-mutate" in err
    assert "ValidatingPolicy topogen-ml-training-validate" in err
    assert "--partial" in err and "Traceback" not in err


def test_partial_writes_the_rest_and_still_exits_1(example: Path) -> None:
    _too_small(example)
    result = render_again(example, "topogen.yaml", "--partial")
    assert result.exit_code == 1
    assert not list((example / "policies").glob("lab/kyverno/topogen-ml-training-*.yaml"))
    assert (example / "monitoring" / "lab" / "rules.yaml").is_file()
    assert "group ml-training: no domain can hold it" in result.stderr


def test_stdout_prints_nothing_for_a_refused_group(example: Path) -> None:
    _too_small(example)
    result = render_again(example, "topogen.yaml", "--stdout")
    assert result.exit_code == 1 and result.stdout == ""
    assert "nothing printed" in result.stderr
    partial = render_again(example, "topogen.yaml", "--stdout", "--partial")
    assert partial.exit_code == 1 and "kind: PrometheusRule" in partial.stdout


def test_diff_check_agrees_with_render(example: Path) -> None:
    check = ["diff", "-c", example / "topogen.yaml", "--check"]
    assert invoke(*check).exit_code == 0
    stale = example / "policies" / "lab" / "kyverno" / "topogen-stale.yaml"
    stale.write_text(
        HEADER + "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stale, namespace: x}\n"
    )
    assert invoke(*check).exit_code == 1  # render would remove it
    assert render_again(example).exit_code == 0
    assert invoke(*check).exit_code == 0  # and after that render there is nothing to do
    _too_small(example)
    assert invoke(*check).exit_code == 1  # render refuses: so does the check
    assert render_again(example).exit_code == 1


# --- interrupted runs --------------------------------------------------------------------------


def test_leftovers_of_killed_runs_are_removed_by_the_next(example: Path) -> None:
    control = example / CONTROL
    (control / "journal.new-abc" / "files" / "policies").mkdir(parents=True)
    (control / "journal.new-abc" / "files" / "policies" / "half.yaml").write_text("half")
    (control / "journal.done-def").mkdir()
    (control / "next-abc" / "policies").mkdir(parents=True)  # an older topogen's
    (control / "old-def").mkdir()
    old_style = example / ".topogen-render-x1y2"
    (old_style / "policies").mkdir(parents=True)
    (old_style / "policies" / "p.yaml").write_text(HEADER + "x: 1\n")
    view = rendered_tree(example)
    result = render_again(example)
    assert result.exit_code == 0, result.output
    assert "removed what an interrupted render left" in result.stderr
    assert sorted(os.listdir(control)) == [MANIFEST] and not old_style.exists()
    assert rendered_tree(example) == view


def test_an_old_style_leftover_with_foreign_files_stays(example: Path) -> None:
    kept = example / ".topogen-old-q"
    kept.mkdir()
    (kept / "mine.txt").write_text("mine")
    assert render_again(example).exit_code == 0
    assert (kept / "mine.txt").read_text() == "mine"


def test_an_oserror_while_journalling_leaves_the_previous_tree(
    example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(staging: Path, *args: object) -> Path:
        (staging / CONTROL / "journal.new-zz").mkdir()
        raise OSError(28, "No space left on device", str(staging / CONTROL / "journal.new-zz"))

    monkeypatch.setattr(writer, "stage", full)
    before = stored(example)
    result = render_again(example, "topogen-after.yaml")
    assert result.exit_code == 2
    assert "No space left on device; the previous tree is unchanged" in result.stderr
    assert stored(example) == before
    assert sorted(os.listdir(example / CONTROL)) == [MANIFEST]


def test_an_oserror_after_the_commit_is_finished_by_the_next_command(
    example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real, calls = os.replace, [0]

    def flaky(src: object, dst: object) -> None:
        calls[0] += 1
        if calls[0] == 3:
            raise OSError(5, "Input/output error", str(dst))
        real(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(journal.os, "replace", flaky)
    result = render_again(example, "topogen-after.yaml")
    monkeypatch.setattr(journal.os, "replace", real)
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "the render is journalled: the next topogen command finishes it" in result.stderr
    assert (example / CONTROL / journal.JOURNAL).is_dir()
    finished = invoke("analyze", "-c", example / "topogen-after.yaml")
    assert "finished a render that was interrupted" in finished.stderr
    assert generated(example) == tmp_render(example, "topogen-after.yaml")
    assert sorted(os.listdir(example / CONTROL)) == [MANIFEST]


def test_a_second_render_of_the_same_tree_waits_for_none(example: Path) -> None:
    fd = os.open(example, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        before = stored(example)
        result = render_again(example, "topogen-after.yaml")
        assert result.exit_code == 2 and "another topogen render is writing" in result.stderr
        assert stored(example) == before
    finally:
        os.close(fd)


@pytest.mark.parametrize("where", ["under-a-file", "read-only"])
def test_an_output_folder_that_cannot_be_written_is_exit_2(tmp_path: Path, where: str) -> None:
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLE, root)
    if where == "under-a-file":
        (tmp_path / "file").write_text("x")
        out = tmp_path / "file" / "out"
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes into read-only folders (the hostile suite runs it as uid 999)")
        out = tmp_path / "ro"
        out.mkdir(mode=0o555)
    result = invoke("render", "-c", root / "topogen.yaml", "--out", out)
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "cannot write the output tree" in result.stderr
