"""The output tree: render touches only its own files, fails closed, swaps everything at once,
and repairs what a killed run left."""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from helpers import rendered_tree
from tooling import REPO
from topogen.cli import main
from topogen.emit import swap
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


def test_layout_is_symlinked_tops_into_one_tree(example: Path) -> None:
    for top in TOPS:
        assert (example / top).is_symlink()
        assert os.readlink(example / top) == f"{CONTROL}/{TREE}/{top}"
    assert sorted(os.listdir(example / CONTROL)) == [TREE]
    manifest = (example / CONTROL / TREE / MANIFEST).read_text().splitlines()
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


def test_folder_permissions_follow_the_umask(example: Path) -> None:
    mode = (example / CONTROL / TREE).stat().st_mode & 0o777
    mask = os.umask(0)
    os.umask(mask)
    assert mode == 0o777 & ~mask


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
    assert not (root / CONTROL / TREE).exists() and not (root / "policies").exists()


# --- an older topogen's tree --------------------------------------------------------------------


def _as_old_layout(root: Path) -> None:
    """Turn the tree into real top folders, as topogen wrote it before .topogen/tree."""
    for top in TOPS:
        (root / top).unlink()
        shutil.copytree(root / CONTROL / TREE / top, root / top)
    shutil.rmtree(root / CONTROL)


def test_an_old_layout_tree_is_adopted(example: Path) -> None:
    view = rendered_tree(example)
    _as_old_layout(example)
    (example / "policies" / "lab" / "kyverno" / "topogen-gone.yaml").write_text(HEADER + "x: 1\n")
    result = render_again(example)
    assert result.exit_code == 0, result.output
    assert all((example / t).is_symlink() for t in TOPS)
    assert rendered_tree(example) == view
    assert sorted(os.listdir(example / CONTROL)) == [TREE]
    assert "topogen-gone.yaml" in result.stderr


def test_an_old_layout_tree_with_a_foreign_file_is_left_alone(example: Path) -> None:
    _as_old_layout(example)
    (example / "policies" / "lab" / "mine.yaml").write_text("mine: true\n")
    before = stored(example)
    result = render_again(example)
    assert result.exit_code == 2 and "policies/lab/mine.yaml" in result.stderr
    assert stored(example) == before and not (example / "policies").is_symlink()


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
    (control / "next-abc" / "policies").mkdir(parents=True)
    (control / "next-abc" / "policies" / "half.yaml").write_text("half")
    (control / "old-def").mkdir()
    old_style = example / ".topogen-render-x1y2"
    (old_style / "policies").mkdir(parents=True)
    (old_style / "policies" / "p.yaml").write_text(HEADER + "x: 1\n")
    view = rendered_tree(example)
    result = render_again(example)
    assert result.exit_code == 0, result.output
    assert "removed what an interrupted render left" in result.stderr
    assert sorted(os.listdir(control)) == [TREE] and not old_style.exists()
    assert rendered_tree(example) == view


def test_an_old_style_leftover_with_foreign_files_stays(example: Path) -> None:
    kept = example / ".topogen-old-q"
    kept.mkdir()
    (kept / "mine.txt").write_text("mine")
    assert render_again(example).exit_code == 0
    assert (kept / "mine.txt").read_text() == "mine"


def test_a_swap_cut_between_its_two_renames_is_completed(
    example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without an atomic exchange the swap is two renames; a kill between them leaves no
    tree (readers see no folders, never a mix), and the next run puts the new one in."""
    monkeypatch.setattr(swap, "exchange", lambda a, b: False)
    real = os.rename
    calls: list[tuple[str, str]] = []

    def killed(src: object, dst: object) -> None:
        calls.append((str(src), str(dst)))
        if Path(str(src)).name.startswith("next-") and Path(str(dst)).name == TREE:
            raise KeyboardInterrupt  # as a kill would: nothing after this runs
        real(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(swap.os, "rename", killed)
    with pytest.raises(KeyboardInterrupt):
        from topogen.config import load_config
        from topogen.emit.writer import write_tree
        from topogen.pipeline.render import render

        cfg = load_config(example / "topogen-after.yaml")
        write_tree(render(cfg).files, example, HEADER)
    monkeypatch.setattr(swap.os, "rename", real)
    assert not (example / CONTROL / TREE).exists()
    assert not any((example / t).exists() for t in TOPS)  # dangling: no folder, no mix
    result = invoke("diff", "-c", example / "topogen-after.yaml", "--check")
    assert result.exit_code == 1  # the tree is missing until a render repairs it
    assert render_again(example, "topogen-after.yaml").exit_code == 0
    assert sorted(os.listdir(example / CONTROL)) == [TREE]
    assert invoke("diff", "-c", example / "topogen-after.yaml", "--check").exit_code == 0


def test_the_fallback_swap_renders_the_same(example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(swap, "exchange", lambda a, b: False)
    assert render_again(example, "topogen-after.yaml").exit_code == 0
    fallback = rendered_tree(example)
    monkeypatch.undo()
    assert render_again(example, "topogen.yaml").exit_code == 0
    assert render_again(example, "topogen-after.yaml").exit_code == 0
    assert rendered_tree(example) == fallback
    assert sorted(os.listdir(example / CONTROL)) == [TREE]


def test_an_oserror_in_the_swap_leaves_the_previous_tree(
    example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(a: Path, b: Path) -> bool:
        raise OSError(5, "Input/output error", str(b))

    monkeypatch.setattr(swap, "exchange", broken)
    before = stored(example)
    result = render_again(example, "topogen-after.yaml")
    assert result.exit_code == 2
    assert "Input/output error; the previous tree is unchanged" in result.stderr
    assert stored(example) == before


def test_a_second_render_of_the_same_tree_waits_for_none(example: Path) -> None:
    fd = os.open(example / CONTROL, os.O_RDONLY)
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
