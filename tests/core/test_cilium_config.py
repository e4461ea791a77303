"""The cluster's own Cilium settings: its cilium-config ConfigMap, read as the agent reads it
(cilium/cilium v1.20.2 pkg/option: `labels` split on white space, Go's boolean spellings,
`enable-policy` lower-cased), from a file beside the nodes, a snapshot or the live cluster;
topogen.yaml's clusters[].cilium keys override it. The examples that need an agent set up
for them carry one, and the README's Quick start copy of the three-zone example gives the
example's verdict."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from helpers import objects
from tooling import REPO
from topogen.cli import main
from topogen.config import load_config
from topogen.errors import InputError
from topogen.model import CiliumSettings
from topogen.sources.cilium_config import read_cilium_config
from topogen.sources.live_objects import CONFIG_MAP, NODE, ClusterObjects, minimal
from topogen.sources.loader import load_cluster_inputs

THREE_ZONE = REPO / "examples" / "pytorch-three-zone"


def _config_map(data: dict[str, Any], namespace: str = "kube-system") -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cilium-config", "namespace": namespace},
            "data": data,
        }
    )


def test_values_are_read_as_the_agent_reads_them() -> None:
    found = read_cilium_config(
        objects(
            _config_map(
                {
                    "labels": "  k8s:topology.kubernetes.io/zone\n k8s:app\tk8s:k8s-app ",
                    "enable-host-firewall": "True",
                    "enable-node-selector-labels": "yes",  # no Go boolean: false
                    "enable-policy": "Always",
                    "cluster-name": "east",
                    "debug": "true",  # not read
                }
            )
        )
    )
    assert found is not None
    assert dict(found.values) == {
        "identity_labels": ("k8s:topology.kubernetes.io/zone", "k8s:app", "k8s:k8s-app"),
        "host_firewall": True,
        "node_selector_labels": False,
        "policy_enforcement": "always",
        "cluster_name": "east",
    }
    assert found.source == "inline.yaml: ConfigMap kube-system/cilium-config"
    assert (
        read_cilium_config(objects(_config_map({"debug": "x"}).replace("cilium-config", "other")))
        is None
    )


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"enable-policy": "sometimes"}, "data.enable-policy is 'sometimes', not one of"),
        ({"labels": "k8s:("}, "data.labels: 'k8s:(' is not a regular expression"),
        ({"cluster-name": "East_1"}, "data.cluster-name:"),
    ],
)
def test_what_the_agent_refuses_is_an_input_error(data: dict[str, Any], says: str) -> None:
    with pytest.raises(InputError, match=re.escape(says)):
        read_cilium_config(objects(_config_map(data)))


def test_a_value_that_is_not_a_string_and_two_agents_are_errors() -> None:
    with pytest.raises(InputError, match=r"data\.enable-host-firewall is not a string"):
        read_cilium_config(objects("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cilium-config}\n"
                                   "data: {enable-host-firewall: true}\n"))  # fmt: skip
    two = objects(_config_map({}) + "---\n" + _config_map({}, "cilium"))
    with pytest.raises(InputError, match="two cilium-config ConfigMaps"):
        read_cilium_config(two)


def _example(tmp_path: Path, cilium: dict[str, Any] | None = None, keep_file: bool = True) -> Path:
    root = tmp_path / "three-zone"
    shutil.copytree(THREE_ZONE, root)
    if not keep_file:
        (root / "cluster" / "cilium-config.yaml").unlink()
    if cilium is not None:
        cfg = yaml.safe_load((root / "topogen.yaml").read_text())
        cfg["clusters"][0]["cilium"] = cilium
        (root / "topogen.yaml").write_text(yaml.safe_dump(cfg))
    return root


def _settings(root: Path) -> CiliumSettings:
    cfg = load_config(root / "topogen.yaml")
    return load_cluster_inputs(cfg, cfg.clusters[0]).policies.cilium


def test_topogen_yaml_overrides_the_clusters_own_key_by_key(tmp_path: Path) -> None:
    found = yaml.safe_load((THREE_ZONE / "cluster" / "cilium-config.yaml").read_text())
    labels = tuple(found["data"]["labels"].split())
    assert _settings(_example(tmp_path / "a")).identity_labels == labels
    over = _settings(
        _example(tmp_path / "b", {"identityLabels": ["k8s:app"], "hostFirewall": True})
    )
    assert over.identity_labels == ("k8s:app",) and over.host_firewall is True
    only_firewall = _settings(_example(tmp_path / "c", {"hostFirewall": True}))
    assert only_firewall.identity_labels == labels and only_firewall.host_firewall is True
    assert _settings(_example(tmp_path / "d", keep_file=False)) == CiliumSettings()


def _verdicts(config: Path) -> tuple[int, list[tuple[str, str]]]:
    result = CliRunner().invoke(main, ["analyze", "-c", str(config), "-o", "json"])
    report = json.loads(result.stdout)
    return result.exit_code, sorted((f["job"], f["kind"]) for f in report["findings"])


def test_the_example_verdict_comes_from_its_cilium_config(tmp_path: Path) -> None:
    assert _verdicts(THREE_ZONE) == (1, [("resnet", "HARD_BLOCK")])
    # without the agent's settings the zone is no identity label: the policy isolates
    # nothing by zone, and the verdict changes (with a warning that says why)
    without = _example(tmp_path, keep_file=False)
    _, found = _verdicts(without)
    assert ("resnet", "HARD_BLOCK") not in found
    warned = CliRunner().invoke(main, ["analyze", "-c", str(without)]).stderr
    assert "label filter drops" in warned and "cilium-config" in warned


def test_a_snapshot_carries_the_agents_settings(tmp_path: Path) -> None:
    from topogen.sources.live import snapshot_yaml

    body = yaml.safe_load((THREE_ZONE / "cluster" / "cilium-config.yaml").read_text())
    body["data"]["kube-proxy-replacement"] = "true"  # a key topogen does not read: dropped
    kept = minimal(CONFIG_MAP, body)
    assert kept["data"] == {"labels": body["data"]["labels"], "enable-policy": "default"}
    nodes = yaml.safe_load((THREE_ZONE / "cluster" / "nodes.yaml").read_text())["items"]
    items = [minimal(NODE, n) for n in nodes]
    root = _example(tmp_path, keep_file=False)
    (root / "cluster" / "nodes.yaml").write_text(
        snapshot_yaml(ClusterObjects(tuple([*items, kept])))
    )
    assert _verdicts(root) == (1, [("resnet", "HARD_BLOCK")])


def test_init_reads_the_cilium_config_it_finds(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(THREE_ZONE, repo)
    (repo / "topogen.yaml").unlink()
    result = CliRunner().invoke(main, ["init", str(repo)])
    assert result.exit_code == 0, result.output
    text = (repo / "topogen.yaml").read_text()
    assert "cluster/cilium-config.yaml" in text and "identityLabels" not in text
    assert "get configmap cilium-config" not in result.stderr  # found: nothing to fetch
    assert _verdicts(repo) == (1, [("resnet", "HARD_BLOCK")])


def _quick_start() -> list[str]:
    """The README's Quick start commands, from the copy of the example to its analyze."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    lines = [ln for ln in block.splitlines() if ln.strip() and not ln.startswith("#")]
    start = next(i for i, ln in enumerate(lines) if ln.startswith("mkdir -p ~/my-gitops"))
    end = next(i for i, ln in enumerate(lines) if ln.startswith("topogen analyze -c ~/my-gitops"))
    return lines[start : end + 1]


def test_the_quick_start_copy_says_what_the_example_says(tmp_path: Path) -> None:
    commands = _quick_start()
    assert any("cilium-config.yaml" in c for c in commands)
    venv = Path(sys.executable).parent
    env = {"HOME": str(tmp_path), "PATH": f"{venv}:/usr/bin:/bin", "LANG": "C.UTF-8"}
    for command in commands:
        line = command.split("  #", 1)[0]
        proc = subprocess.run(
            ["bash", "-c", line], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
        )
        said = command.split("  #", 1)[1] if "  #" in command else ""
        want = 1 if "exit 1" in said else 0
        assert proc.returncode == want, (line, proc.stdout, proc.stderr)
    assert "HARD_BLOCK" in said and "research/resnet" in said
    assert "HARD_BLOCK  default/resnet job research/resnet" in proc.stdout
    assert _verdicts(tmp_path / "my-gitops") == _verdicts(THREE_ZONE)
