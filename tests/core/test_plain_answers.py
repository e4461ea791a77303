"""Answers a newcomer can act on: no silent all-clear (a group that matches nothing fails
analyze, naming what it selects; init says which workloads it cannot classify), and the
small things issue 29 found: help without arguments, completion's message, --stdout with
-o json, connectivity's note on identity labels stamped at binding, apiVersion and kind on
every JSON document, analyze -v's counts, init's next step, the capacity message."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner, Result

from tooling import REPO
from topogen.cli import main

ZONE_SPLIT = REPO / "examples" / "zone-split"
THREE_ZONE = REPO / "examples" / "pytorch-three-zone"


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _zone_split(tmp_path: Path, **group: Any) -> Path:
    """zone-split with its before workloads only, the group's keys changed."""
    root = tmp_path / "repo"
    shutil.copytree(ZONE_SPLIT, root)
    cfg = yaml.safe_load((root / "topogen.yaml").read_text())
    cfg["groups"][0].update(group)
    (root / "topogen.yaml").write_text(yaml.safe_dump(cfg))
    return root


# --- no silent all-clear ---------------------------------------------------------------------


def test_a_group_that_matches_nothing_fails_analyze_naming_what_it_selects(tmp_path: Path) -> None:
    root = _zone_split(tmp_path, namespaces=["ml-prod"])
    result = invoke("analyze", "-c", root)
    assert result.exit_code == 1
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("topogen: error:")]
    assert len(errors) == 1
    assert "group ml-training matches no workload" in errors[0]
    assert "pods labelled app with role in (coordinator, gpu-worker)" in errors[0]
    assert "in namespace(s) ml-prod" in errors[0] and "allowEmpty: true" in errors[0]
    assert result.stdout.rstrip().endswith("1 group(s) match no workload: ml-training")
    doc = json.loads(invoke("analyze", "-c", root, "-o", "json").stdout)
    assert doc["summary"]["emptyGroups"] == 1
    assert doc["emptyGroups"][0]["group"] == "ml-training"
    # render writes no policies for it (no job to plan for) and says so
    rendered = invoke("render", "-c", root, "--stdout")
    assert rendered.exit_code == 0 and "kind: MutatingPolicy" not in rendered.stdout
    assert "topogen: warning: cluster lab: group ml-training matches no workload" in rendered.stderr


def test_allow_empty_is_the_explicit_opt_out(tmp_path: Path) -> None:
    root = _zone_split(tmp_path, namespaces=["ml-prod"], allowEmpty=True)
    result = invoke("analyze", "-c", root)
    assert result.exit_code == 0, result.output
    assert "matches no workload" not in result.output
    schema = json.loads((REPO / "schema" / "topogen.schema.json").read_text())
    group = schema["$defs"]["GroupConfig"]["properties"]
    assert group["allowEmpty"]["type"] == "boolean" and group["allowEmpty"]["default"] is False


def test_a_config_without_workloads_is_no_all_clear(tmp_path: Path) -> None:
    root = _zone_split(tmp_path)
    cfg = yaml.safe_load((root / "topogen.yaml").read_text())
    cfg["workloads"] = []
    (root / "topogen.yaml").write_text(yaml.safe_dump(cfg))
    result = invoke("analyze", "-c", root)
    assert result.exit_code == 1
    assert "none of the 0 pod template(s) read matches" in result.stderr


def test_a_role_value_neither_listed_is_said(tmp_path: Path) -> None:
    root = _zone_split(tmp_path, workerRoles=["worker"])  # the pods say gpu-worker
    result = invoke("analyze", "-c", root)
    assert (
        "Job ml-demo/trainer-workers carries app but role=gpu-worker, neither of its "
        "coordinatorRoles nor of its workerRoles" in result.stderr
    )


def test_init_names_the_workloads_it_cannot_classify(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "workloads").mkdir(parents=True)
    for f in (ZONE_SPLIT / "workloads" / "before").glob("*.yaml"):
        shutil.copy(f, repo / "workloads" / f.name)
    result = invoke("init", repo)
    assert result.exit_code == 0, result.output
    said = result.stderr
    assert "2 workload(s) of no training operator" in said
    assert "Deployment ml-demo/trainer-coordinator, Job ml-demo/trainer-workers" in said
    assert "groupLabel, roleLabel, coordinatorRoles and workerRoles" in said
    cfg = yaml.safe_load((repo / "topogen.yaml").read_text())
    assert cfg["workloads"] == ["workloads/"]
    assert cfg["groups"][0]["namespaces"] == ["ml-demo"]


# --- the smaller items -------------------------------------------------------------------------


def test_topogen_alone_prints_help_and_exits_0() -> None:
    result = invoke()
    assert result.exit_code == 0
    assert result.stdout.startswith("Usage: ") and "Commands:" in result.stdout


def test_completion_names_an_unknown_shell() -> None:
    result = invoke("completion", "powershell")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "topogen: error: no completion script for the shell 'powershell': topogen has one for "
        "bash, zsh and fish"
    )


def test_stdout_with_json_output_is_refused() -> None:
    result = invoke("render", "-c", ZONE_SPLIT, "--stdout", "-o", "json")
    assert result.exit_code == 2 and result.stdout == ""
    assert "--stdout prints YAML and -o json prints JSON: give one of them" in result.stderr
    assert invoke("render", "-c", ZONE_SPLIT, "--stdout", "-o", "yaml").exit_code == 0


def test_connectivity_notes_identity_labels_stamped_at_binding() -> None:
    text = invoke("connectivity", "-c", THREE_ZONE).stdout
    note = next(ln for ln in text.splitlines() if "stamped from the node" in ln)
    assert (
        "research/resnet[Master], research/resnet[Worker] set no topology.kubernetes.io/zone"
        in note
    )
    assert "`topogen analyze` judges every placement" in note
    doc = json.loads(invoke("connectivity", "-c", THREE_ZONE, "-o", "json").stdout)
    assert any("stamped from the node" in n for n in doc["notes"])
    labelled = invoke(
        "connectivity", "-c", ZONE_SPLIT,
        "--label", "ml-demo/trainer-coordinator=zone=zone-a",
        "--label", "ml-demo/trainer-workers=zone=zone-a",
    )  # fmt: skip
    assert labelled.exit_code == 0 and "stamped from the node" not in labelled.stdout


def test_every_json_document_names_its_api_version_and_kind() -> None:
    kinds = {
        "analyze": ["analyze", "-c", ZONE_SPLIT, "-o", "json"],
        "connectivity": ["connectivity", "-c", ZONE_SPLIT, "-o", "json"],
        "explain": ["explain", "-c", ZONE_SPLIT, "--from", "ml-demo/trainer-coordinator",
                    "--to", "ml-demo/trainer-workers", "-o", "json"],
        "diff": ["diff", "-c", ZONE_SPLIT, "--out", REPO, "-o", "json"],
        "render": ["render", "-c", ZONE_SPLIT, "-o", "json"],
    }  # fmt: skip
    for name, args in kinds.items():
        doc = json.loads(invoke(*args).stdout)
        assert doc["apiVersion"] and doc["kind"], name
    explain = json.loads(invoke(*kinds["explain"]).stdout)
    assert (explain["apiVersion"], explain["kind"]) == ("topogen.io/v1alpha1", "Explanation")


def test_analyze_verbose_gives_counts() -> None:
    result = invoke("analyze", "-c", THREE_ZONE, "-v")
    lines = result.stderr.splitlines()
    assert "topogen: workload inputs: objects 2, pod templates 2, skipped 0" in lines
    assert (
        "topogen: cluster prod-east: nodes 8, zones 3, network policies 1, namespaces 0; "
        "jobs per group: pytorch 1"
    ) in lines


def test_init_says_the_next_step_with_the_folder(tmp_path: Path) -> None:
    repo = tmp_path / "my repo"
    shutil.copytree(THREE_ZONE / "workloads", repo / "workloads")
    result = invoke("init", repo)
    assert f"`topogen analyze -c '{repo.as_posix()}'`" in result.stderr


def test_the_capacity_message_names_the_zone_once_and_counts_truly(tmp_path: Path) -> None:
    root = tmp_path / "big"
    shutil.copytree(THREE_ZONE, root)
    job = root / "workloads" / "resnet.yaml"
    job.write_text(job.read_text().replace("replicas: 3", "replicas: 9", 1))
    out = invoke("analyze", "-c", root).stdout
    assert "us-east-1a: us-east-1a:" not in out
    assert (
        "us-east-1a (8 GPUs): 5 of 9 worker pod(s) do not fit: each needs 2 nvidia.com/gpu on "
        "one node; the nodes they may use have 8" in out
    )
