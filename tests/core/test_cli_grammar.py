"""One CLI grammar, kubectl's: -o/--output FORMAT, --out, -c FILE|DIR, --cluster, -v,
completion, "did you mean"; the old spellings keep working and --help shows the new."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner, Result

from topogen.cli import SHORT_HELP, main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "zone-split"
CONFIG = EXAMPLE / "topogen.yaml"
PATH_ARGS = ["--from", "ml-demo/trainer-coordinator", "--to", "ml-demo/trainer-workers"]


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def command(name: str) -> click.Command:
    cmd = main.get_command(click.Context(main), name)
    assert cmd is not None
    return cmd


def option(cmd: click.Command, flag: str) -> click.Option | None:
    return next(
        (
            p
            for p in cmd.params
            if isinstance(p, click.Option) and flag in p.opts + p.secondary_opts
        ),
        None,
    )


PRINTING = ["analyze", "audit", "connectivity", "diff", "explain", "render", "snapshot"]


@pytest.mark.parametrize("name", PRINTING)
def test_every_printing_command_has_o_output_format(name: str) -> None:
    opt = option(command(name), "-o")
    assert opt is not None and opt.opts == ["-o", "--output"]
    assert "json" in opt.get_help_record(click.Context(command(name)))[0] or name == "snapshot"
    shown = opt.get_help_record(click.Context(command(name)))[0]
    assert "yaml" in shown


@pytest.mark.parametrize("name", sorted(set(SHORT_HELP) - {"completion"}))
def test_every_command_has_v_and_registers_its_short_help(name: str) -> None:
    cmd = command(name)
    assert option(cmd, "-v") is not None and option(cmd, "--verbose") is not None
    assert cmd.short_help == SHORT_HELP[name]


@pytest.mark.parametrize(
    "args",
    [
        ["analyze", "-c", CONFIG],
        ["connectivity", "-c", CONFIG],
        ["explain", "-c", CONFIG, *PATH_ARGS],
        ["diff", "-c", CONFIG, "--out", REPO],
    ],
    ids=["analyze", "connectivity", "explain", "diff"],
)
def test_yaml_is_the_json_document_and_table_is_text(args: list[str | Path]) -> None:
    as_json = invoke(*args, "-o", "json")
    as_yaml = invoke(*args, "-o", "yaml")
    assert as_json.exit_code == as_yaml.exit_code, as_yaml.output
    assert yaml.safe_load(as_yaml.stdout) == json.loads(as_json.stdout)
    assert not as_yaml.stdout.lstrip().startswith("{")
    text = invoke(*args, "-o", "text")
    assert text.stdout and not text.stdout.lstrip().startswith("{")
    if args[0] != "diff":
        assert invoke(*args, "-o", "table").stdout == text.stdout  # the old name
    assert invoke(*args, "-o", "JSON").stdout == as_json.stdout  # any case, as kubectl


def test_diff_format_is_the_old_spelling_of_output_and_hidden() -> None:
    for fmt in ("json", "markdown", "text"):
        old = invoke("diff", "-c", CONFIG, "--out", REPO, "--format", fmt)
        new = invoke("diff", "-c", CONFIG, "--out", REPO, "-o", fmt)
        assert old.exit_code == new.exit_code == 0
        assert old.stdout == new.stdout
    help_text = invoke("diff", "--help").stdout
    assert "--format" not in help_text and "-o, --output [text|markdown|json|yaml]" in help_text


def test_render_prints_with_o_yaml_as_with_stdout_and_json_as_a_list() -> None:
    stdout = invoke("render", "-c", CONFIG, "--stdout")
    as_yaml = invoke("render", "-c", CONFIG, "-o", "yaml")
    assert stdout.exit_code == as_yaml.exit_code == 0
    assert as_yaml.stdout == stdout.stdout
    as_json = json.loads(invoke("render", "-c", CONFIG, "-o", "json").stdout)
    assert as_json["kind"] == "List"
    assert as_json["items"] == [d for d in yaml.safe_load_all(stdout.stdout) if d]


def test_c_dir_reads_its_topogen_yaml() -> None:
    by_dir = invoke("analyze", "-c", EXAMPLE, "-o", "json")
    by_file = invoke("analyze", "-c", CONFIG, "-o", "json")
    assert by_dir.exit_code == by_file.exit_code == 1
    assert by_dir.stdout == by_file.stdout
    empty = invoke("analyze", "-c", REPO / "tests")
    assert empty.exit_code == 2
    assert "tests/topogen.yaml: config file not found" in empty.stderr


def test_cluster_is_repeatable_where_it_filters_and_said_once_where_it_picks(
    tmp_path: Path,
) -> None:
    for args in (["analyze"], ["render", "--stdout"], ["diff", "--out", REPO]):
        result = invoke(*args, "-c", CONFIG, "--cluster", "lab", "--cluster", "lab")
        assert result.exit_code in (0, 1), result.output
    missing = invoke("diff", "-c", CONFIG, "--out", REPO, "--cluster", "nope", "-o", "json")
    assert json.loads(missing.stdout)["objects"] == []  # nothing of cluster nope
    two = invoke("connectivity", "-c", CONFIG, "--cluster", "lab", "--cluster", "other")
    assert two.exit_code == 2
    assert "connectivity reads one cluster at a time, got lab, other" in two.stderr


def test_options_short_and_long_parse_as_click_does() -> None:
    # a short option is matched without close matches looked up (start-up), a mistyped
    # long option still gets them, an unknown short one is refused as before
    assert invoke("analyze", "-c", CONFIG).stdout == invoke("analyze", "--config", CONFIG).stdout
    typo = invoke("analyze", "--confg", CONFIG)
    assert typo.exit_code == 2
    assert "No such option '--confg'. Did you mean '--config'?" in typo.stderr
    unknown = invoke("analyze", "-q", "-c", CONFIG)
    assert unknown.exit_code == 2 and "No such option '-q'." in unknown.stderr
    attached = invoke("analyze", f"-c{CONFIG}")
    assert attached.stdout == invoke("analyze", "--config", CONFIG).stdout


def test_unknown_command_and_config_key_get_did_you_mean(tmp_path: Path) -> None:
    result = invoke("analyse")
    assert result.exit_code == 2
    assert "No such command 'analyse'. Did you mean 'analyze'?" in result.stderr
    assert "Did you mean" not in invoke("frobnicate").stderr
    text = CONFIG.read_text(encoding="utf-8").replace("zoneLabel:", "zoneLable:")
    for name in ("nodes", "cilium", "workloads"):
        src = EXAMPLE / name
        if src.exists():
            shutil.copytree(src, tmp_path / name)
    (tmp_path / "topogen.yaml").write_text(text, encoding="utf-8")
    bad = invoke("analyze", "-c", tmp_path)
    assert bad.exit_code == 2
    assert bad.stderr.strip().endswith(
        "unknown key clusters.lab.zoneLable (did you mean zoneLabel?)"
    ), bad.stderr
    wrong_top = CONFIG.read_text(encoding="utf-8").replace("\ngroups:", "\ngrups:")
    (tmp_path / "topogen.yaml").write_text(wrong_top, encoding="utf-8")
    assert "unknown key grups (did you mean groups?)" in invoke("analyze", "-c", tmp_path).stderr


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(shell: str) -> None:
    result = invoke("completion", shell)
    assert result.exit_code == 0
    assert "_TOPOGEN_COMPLETE" in result.stdout
    assert f"{shell}_complete" in result.stdout or f"{shell}_source" in result.stdout


def test_bash_completion_completes_commands_and_formats() -> None:
    """The printed script, sourced by a real bash, completes `topogen ana` and `-o `."""
    topogen = Path(sys.executable).parent / "topogen"
    script = f"""
    eval "$({topogen} completion bash)"
    COMP_WORDS=(topogen ana); COMP_CWORD=1; _topogen_completion topogen; echo "${{COMPREPLY[@]}}"
    COMPREPLY=(); COMP_WORDS=(topogen analyze -o ''); COMP_CWORD=3; _topogen_completion topogen
    echo "${{COMPREPLY[@]}}"
    """
    env = {"PATH": f"{topogen.parent}:/usr/bin:/bin"}
    out = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=60, env=env, check=True
    )
    first, second = out.stdout.splitlines()[:2]
    assert first == "analyze"
    assert second.split() == ["text", "json", "yaml"]


def test_top_level_help_imports_no_command() -> None:
    """`topogen --help` lists the commands from SHORT_HELP: no command module is imported."""
    code = (
        "import sys\n"
        "from topogen.cli import main\n"
        "try:\n"
        "    main(['--help'], prog_name='topogen')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('topogen.cli.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "[]"
    for name, text in SHORT_HELP.items():
        assert f"{name}" in out.stdout and text.split()[0] in out.stdout


def test_help_shows_the_new_spellings() -> None:
    snapshot = " ".join(invoke("snapshot", "--help").stdout.split())
    assert "--out FILE" in snapshot and "-o, --output [json|yaml]" in snapshot
    assert "old spelling of --out FILE" in snapshot
    assert "-c, --config FILE|DIR" in invoke("analyze", "--help").stdout
    assert "-o, --output [text|json|yaml|csv]" in invoke("connectivity", "--help").stdout
