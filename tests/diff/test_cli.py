"""`topogen diff` end to end: in-process with CliRunner, and as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from diff.scenarios import build, copy_example, enforce
from topogen.cli import main

REPO = Path(__file__).resolve().parents[2]


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def committed(tmp_path: Path) -> Path:
    """The example with its output rendered next to the config, as a user commits it."""
    root = copy_example(tmp_path / "zone-split")
    result = invoke("render", "-c", root / "topogen.yaml")
    assert result.exit_code == 0, result.output
    return root


def test_committed_output_up_to_date(committed: Path) -> None:
    result = invoke("diff", "-c", committed / "topogen.yaml", "--check")
    assert result.exit_code == 0, result.output
    assert "no differences" in result.output
    assert "analysis: not compared" in result.output


def test_drift_is_found_and_explained(committed: Path) -> None:
    enforce(committed)
    cfg = committed / "topogen.yaml"
    result = invoke("diff", "-c", cfg, "--check")
    assert result.exit_code == 1, result.output
    assert "validation of ml-training: validation Audit -> Deny" in result.output
    # without --check a difference is a report, not a failure
    assert invoke("diff", "-c", cfg).exit_code == 0


def test_out_names_where_the_committed_output_lives(tmp_path: Path) -> None:
    root = copy_example(tmp_path / "repo" / "examples" / "zone-split")
    out = tmp_path / "repo"
    assert invoke("render", "-c", root / "topogen.yaml", "--out", out).exit_code == 0
    ok = invoke("diff", "-c", root / "topogen.yaml", "--out", out, "--check")
    assert ok.exit_code == 0, ok.output
    # the config's own folder holds no output: everything would be new there
    other = invoke("diff", "-c", root / "topogen.yaml", "--check")
    assert other.exit_code == 1
    assert "holds no rendered output: everything is new" in other.output
    # the inputs beside the output (examples/, the config) are not compared
    assert "examples" not in "".join(ln for ln in ok.output.splitlines() if ln.startswith("  ~"))


def test_against_a_folder(committed: Path, tmp_path: Path) -> None:
    other = build(tmp_path / "other", enforce)
    assert invoke("render", "-c", other / "topogen.yaml").exit_code == 0
    result = invoke("diff", "-c", committed / "topogen.yaml", "--against", other, "--check")
    assert result.exit_code == 1
    assert "validation Deny -> Audit" in result.output


def test_two_folders(committed: Path, tmp_path: Path) -> None:
    other = build(tmp_path / "other", enforce)
    assert invoke("render", "-c", other / "topogen.yaml").exit_code == 0
    result = invoke("diff", committed / "policies", other / "policies", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["kind"] == "DiffReport" and doc["analysis"] is None
    (obj,) = doc["objects"]
    assert obj["notes"] == ["validation Audit -> Deny (Audit reports, Deny refuses)"]
    assert obj["location"] == "lab/kyverno"
    same = invoke("diff", committed / "policies", committed / "policies", "--check")
    assert same.exit_code == 0


def test_formats(committed: Path) -> None:
    enforce(committed)
    cfg = committed / "topogen.yaml"
    md = invoke("diff", "-c", cfg, "--format", "markdown").output
    assert md.startswith("## topogen diff\n")
    assert "| changed | ValidatingPolicy `topogen-ml-training-validate` |" in md
    text = invoke("diff", "-c", cfg, "--format", "text").output
    assert text.startswith("topogen diff\n")
    assert json.loads(invoke("diff", "-c", cfg, "--format", "json").output)["empty"] is False


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["only-one"], "give two folders"),
        (["a", "b", "c"], "give two folders"),
        (["{a}", "{a}", "--against", "HEAD"], "cannot be combined"),
        (["--format", "xml"], "Invalid value for '--format'"),
        (["-o", "xml"], "Invalid value for '-o' / '--output'"),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    result = invoke("diff", *[a.replace("{a}", str(tmp_path / "a")) for a in args])
    assert result.exit_code == 2
    assert message in result.output


def test_input_errors_exit_2_in_one_line(tmp_path: Path) -> None:
    missing = invoke("diff", "-c", tmp_path / "nope.yaml")
    assert missing.exit_code == 2
    assert "config file not found" in missing.output and "Traceback" not in missing.output
    root = copy_example(tmp_path / "x")
    bad = invoke("diff", "-c", root / "topogen.yaml", "--against", "no-such-ref-or-folder")
    assert bad.exit_code == 2
    assert "neither a folder nor a git ref" in bad.output
    assert len(bad.output.strip().splitlines()) == 1


def test_unparseable_old_file_is_a_difference_not_a_crash(committed: Path) -> None:
    bad = committed / "policies" / "lab" / "kyverno" / "topogen-ml-training-mutate.yaml"
    bad.write_text("key: [unclosed\n", encoding="utf-8")
    result = invoke("diff", "-c", committed / "topogen.yaml", "--check")
    assert result.exit_code == 1
    assert "does not parse" in result.output


def test_registered() -> None:
    assert "diff" in invoke("--help").output


def test_subprocess(committed: Path, tmp_path: Path) -> None:
    other = build(tmp_path / "other", enforce)
    assert invoke("render", "-c", other / "topogen.yaml").exit_code == 0
    run = [sys.executable, "-m", "topogen", "diff"]
    same = subprocess.run(
        [*run, committed, committed, "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert same.returncode == 0, same.stderr
    changed = subprocess.run(
        [*run, committed / "policies", other / "policies", "--check", "--format", "markdown"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO,
    )
    assert changed.returncode == 1, changed.stderr
    assert "validation Audit -> Deny" in changed.stdout
    assert changed.stderr == ""


def _diff_options() -> set[str]:
    from topogen.cli.diff import diff_command

    return {opt for p in diff_command.params for opt in getattr(p, "opts", [])}


def test_ci_example_and_hooks_use_real_options() -> None:
    """The example workflow and the pre-commit hooks call `topogen diff` as it is."""
    import shlex

    import yaml

    workflow = yaml.safe_load((REPO / "examples" / "ci" / "github-actions.yml").read_text())
    runs = [s.get("run", "") for s in workflow["jobs"]["diff"]["steps"]]
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    commands = [ln for r in runs for ln in r.splitlines() if "topogen diff" in ln]
    commands += [h["entry"] for h in hooks]
    assert len(commands) >= 4
    known = _diff_options()
    for command in commands:
        words = shlex.split(command.split(">")[0], posix=True)
        if words[:2] != ["topogen", "diff"]:
            continue
        for w in words[2:]:
            if w.startswith("-"):
                assert w in known, f"{w} in {command!r}"


def test_stale_output_counts_and_other_folders_do_not(committed: Path) -> None:
    header = "# Generated by `topogen render -c topogen.yaml`. Do not edit.\n"
    stale = committed / "policies" / "lab" / "gone" / "old.yaml"
    stale.parent.mkdir(parents=True)
    stale.write_text(header + "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: old}\n")
    hand = committed / "docs" / "notes.yaml"
    hand.parent.mkdir()
    hand.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: mine}\n")
    result = invoke("diff", "-c", committed / "topogen.yaml", "--check")
    assert result.exit_code == 1
    assert "- ConfigMap old  policies/lab/gone" in result.output
    assert "mine" not in result.output


def test_ci_example_triggers_on_the_inputs_and_edits_only_its_own_comment() -> None:
    """The workflow runs when topogen.yaml or what it names changes, and updates the one
    comment carrying its marker (not the last comment of anyone, as --edit-last would)."""
    import fnmatch
    import shutil
    import subprocess

    import yaml

    text = (REPO / "examples" / "ci" / "github-actions.yml").read_text()
    workflow = yaml.safe_load(text)
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads the key `on` as true
    paths = on["pull_request"]["paths"]
    config = workflow["env"]["CONFIG"]
    for path in (config, "cluster/nodes.yaml", "workloads/train.yaml", "policies/lab/x"):
        assert any(fnmatch.fnmatch(path, p.replace("**/", "*")) for p in paths), path
    commands = [ln for ln in text.splitlines() if not ln.strip().startswith("#")]
    assert not [ln for ln in commands if "--edit-last" in ln]
    steps = {s.get("name"): s for s in workflow["jobs"]["diff"]["steps"]}
    post = steps["Post the comment"]
    assert (
        'echo "<!-- topogen-diff $CONFIG -->"'
        in steps["Drift, refusals and what this pull request changes"]["run"]
    )
    assert "startswith(env.MARKER)" in post["run"] and "--method PATCH" in post["run"]
    if shutil.which("bash"):
        for step in workflow["jobs"]["diff"]["steps"]:
            script = step.get("run", "").replace("${{", "X").replace("}}", "X")
            subprocess.run(["bash", "-n", "-c", script], check=True)
    if shutil.which("jq"):  # gh's --jq is gojq, which reads env.* as jq does
        jq = post["run"].split("--jq '", 1)[1].split("'", 1)[0]
        marker = "<!-- topogen-diff clusters/topogen.yaml -->"
        comments = [
            {"id": 1, "user": {"login": "github-actions[bot]"}, "body": marker + "\nold"},
            {"id": 2, "user": {"login": "someone"}, "body": marker + "\nquoted"},
            {"id": 3, "user": {"login": "github-actions[bot]"}, "body": "another workflow"},
        ]
        out = subprocess.run(
            ["jq", jq],
            input=json.dumps(comments),
            capture_output=True,
            text=True,
            env={"MARKER": marker},
            check=True,
        )
        assert out.stdout.split() == ["1"]
