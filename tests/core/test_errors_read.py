"""Errors a person reads: one line (what, where, the fix), config keys by name with the
line of topogen.yaml and in topogen's own words, paths as the user gave them, a refused
fleet in a few hundred characters with the command that shows the rest, a bug reported as
topogen's (exit 3), never as the user's input, and standard output on a full disk."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

import topogen.errors
from tooling import REPO
from topogen.cli import main
from topogen.emit.refusal import REASON, refusal_line
from topogen.errors import InternalError, Refusal

EXAMPLE = REPO / "examples" / "zone-split"
TOPOGEN = REPO / ".venv" / "bin" / "topogen"


def _example(tmp: Path, edit: dict[str, Any] | None = None, text: str | None = None) -> Path:
    root = tmp / "repo"
    shutil.copytree(EXAMPLE, root)
    if text is not None:
        (root / "topogen.yaml").write_text(text)
    return root / "topogen.yaml"


def _err(*argv: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(argv))
    return result.exit_code, result.stderr


CONFIG = (EXAMPLE / "topogen.yaml").read_text()


@pytest.mark.parametrize(
    ("anchor", "new", "line", "says"),
    [
        ("zoneLabel:", "zone_label:", 10, "unknown key clusters.lab.zone_label (did you mean zoneLabel?)"),
        ("nodes: [cluster/nodes.yaml]", "nodes: cluster/nodes.yaml", 8, "clusters.lab.nodes: must be a list"),
        ("ports: [29500]", "ports: [29500, 70000]", 21, "groups.ml-training.ports: 70000 is not a port range"),
        ("profile: custom", "profile: ray", 14, "groups.ml-training.profile: 'ray' must be"),
        ("identityLabel: zone", "identityLabel: 'zone id'", 20, "groups.ml-training.identityLabel: 'zone id' is not a label key"),
        ("networkPolicies: [cilium/]", "networkPolicies: [cilium/]\n    kubernetesVersion: 1.36", 10, "clusters.lab.kubernetesVersion: must be a string"),
        ("ports: [29500]", "ports: [29500]\n    placement: everywhere", 22, "groups.ml-training.placement: 'everywhere' must be 'spread' or 'pin'"),
        ("groups:", "monitoring: {idleFor: soon}\ngroups:", 12, "monitoring.idleFor: 'soon' is not a duration"),
        ("groups:", "monitoring: {idleGpuUtilisationPercent: 200}\ngroups:", 12, "monitoring.idleGpuUtilisationPercent: must be at most 100"),
        ("    ports: [29500]\n", "    ports: [29500]\n  - name: second\n", 22, "groups.second.profile: is required"),
    ],
    ids=["spelling", "list", "port", "profile", "label-key", "string", "literal", "duration", "bound", "missing"],
)  # fmt: skip
def test_config_errors_name_the_key_its_line_in_topogens_words(
    tmp_path: Path, anchor: str, new: str, line: int, says: str
) -> None:
    """A key by its path through the config (list items by name), the line of topogen.yaml
    it is on, and topogen's words: one spelling per key (the schema's: `zone_label` is no
    other spelling of zoneLabel)."""
    assert CONFIG.count(anchor) >= 1
    config = _example(tmp_path, text=CONFIG.replace(anchor, new, 1))
    code, err = _err("analyze", "-c", str(config))
    assert code == 2, err
    (only,) = err.splitlines()
    assert only.startswith(f"topogen: error: {config}:{line}: {says}"), only
    assert "Input should" not in err and "Value error" not in err and "pydantic" not in err


def test_every_config_error_is_in_topogens_words(tmp_path: Path) -> None:
    """Any type error of any key: no pydantic wording reaches the user."""
    doc = yaml.safe_load(CONFIG)
    bad: list[tuple[str, Any]] = [
        ("workloads", "workloads/"), ("engines", "kyverno"), ("groups", {}),
        ("validationAction", ["Audit"]), ("monitoring", []), ("kyverno", {"auditAtAdmission": "perhaps"}),
        ("gatekeeper", {"failurePolicy": 1}), ("defaultNamespace", 7),
    ]  # fmt: skip
    for key, value in bad:
        config = tmp_path / f"{key}.yaml"
        config.write_text(yaml.safe_dump({**doc, key: value}, sort_keys=False))
        code, err = _err("analyze", "-c", str(config))
        assert code == 2 and len(err.splitlines()) == 1, err
        assert f"{config}:" in err and key in err, err
        assert not re.search(r"Input should|Value error|validation error|type=", err), err


def test_paths_are_printed_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An absolute -c stays absolute, a relative one relative (not ../../.. from the
    working folder), for the config and for the inputs under it."""
    config = _example(tmp_path, text=CONFIG.replace("zoneLabel:", "zone_label:"))
    code, err = _err("analyze", "-c", str(config))
    assert code == 2 and err.startswith(f"topogen: error: {config}:"), err
    monkeypatch.chdir(tmp_path)
    code, err = _err("analyze", "-c", "repo")
    assert code == 2 and err.startswith("topogen: error: repo/topogen.yaml:"), err
    code, err = _err("analyze", "-c", str(tmp_path / "nope"))
    assert code == 2 and f"{tmp_path}/nope: config file not found" in err, err
    (tmp_path / "repo" / "topogen.yaml").write_text(CONFIG)
    (tmp_path / "repo" / "cilium" / "bad.yaml").write_text("a: [\n")
    code, err = _err("analyze", "-c", "repo")
    assert code == 2 and err.startswith("topogen: error: repo/cilium/bad.yaml:"), err


def test_a_fleet_of_refusals_is_one_short_line_naming_the_command() -> None:
    """Bench's large fleet refuses 9 groups of up to 10 jobs, each job's reason naming
    dozens of domains (117 KB of stderr in 9 lines before): one line under 1,000
    characters, the first reason cut, the others counted, and the command that shows them."""
    domain = (
        "ap-northeast-{n}: coordinator (ap-northeast-{n}a) -> worker (ap-northeast-{n}b): "
        "sender egress: default deny, no rule allows it (isolated by ccnp zone-isolation, "
        "cnp ml/allow-egress-basics, netpol ml/default-deny)"
    )
    job = "job ml/j-{j} needs 4 GPUs in one domain: " + "; ".join(
        domain.format(n=n) for n in range(60)
    )
    refused = [
        Refusal("fleet", f"g-{g}", f"group g-{g}: no domain can hold it: "
                + " | ".join(job.format(j=j) for j in range(10)))
        for g in range(9)
    ]  # fmt: skip
    assert sum(len(str(r)) for r in refused) > 100_000
    what = "nothing written: a partial render would leave it without policies"
    line = refusal_line(refused, what, "fleet/snapshot/topogen.yaml")
    assert "\n" not in line and len(line) < 1000, len(line)
    assert line.startswith("cluster fleet: group g-0: no domain can hold it: job ml/j-0 needs")
    assert (
        "(and 9 more job(s))" in line
        and "8 more refused (fleet/g-1, fleet/g-2, fleet/g-3, ...)" in line
    )
    assert line.endswith("`topogen analyze -c fleet/snapshot/topogen.yaml` shows every reason")
    assert len(line.split(": no domain can hold it: ")[1].split(" (and")[0]) <= REASON + 10


def test_refused_groups_in_the_example_are_one_line(tmp_path: Path) -> None:
    config = _example(tmp_path)
    nodes = config.parent / "cluster" / "nodes.yaml"
    nodes.write_text(nodes.read_text().replace('nvidia.com/gpu: "2"', 'nvidia.com/gpu: "1"'))
    code, err = _err("render", "-c", str(config), "--out", str(tmp_path / "out"))
    assert code == 1 and len(err.splitlines()) == 1, err
    assert f"`topogen analyze -c {config}` shows every reason" in err
    assert not (tmp_path / "out").exists()


def test_a_broken_invariant_is_topogens_error_exit_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A template that renders no valid YAML is topogen's bug: exit 3, one line, never the
    input error's exit 2."""
    import topogen.render.base as base

    monkeypatch.setattr(base, "render_text", lambda template, **values: "a: [\n")
    code, err = _err("render", "-c", str(_example(tmp_path)), "--out", str(tmp_path / "out"))
    assert code == 3, err
    (line,) = err.splitlines()
    assert line.startswith("topogen: internal error: template ") and "rendered invalid YAML" in line
    assert "please report it" in line
    assert InternalError("x").exit_code == 3
    assert not hasattr(topogen.errors, "PlanError") and not hasattr(topogen.errors, "CheckFailed")


@pytest.mark.parametrize(
    "argv",
    [["--version"], ["analyze", "-c", str(EXAMPLE)], ["analyze", "-c", str(EXAMPLE), "-o", "json"],
     ["render", "-c", str(EXAMPLE), "--stdout"]],
    ids=["version", "table", "json", "stdout"],
)  # fmt: skip
def test_standard_output_on_a_full_disk_is_one_line_exit_2(argv: list[str]) -> None:
    """/dev/full answers every write with ENOSPC: where the user sent the output, not a bug."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [str(TOPOGEN), *argv], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120
        )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        "topogen: error: cannot write to standard output: No space left on device"
    ]
