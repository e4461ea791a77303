"""tests/hostile/api_rules.py: topogen refuses what the API server (or Cilium) refuses, by
the same rule, one line naming the file, the object and the field, exit 2, nothing
written; it reads what they accept. Cilium's rules are checked against Cilium's own code
(tools/cilium-oracle); the API server's against the real kube-apiserver in
tests/live/test_live_api_rules.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tooling import REPO
from topogen.cli import main

from .api_rules import ACCEPTED, BASE_FILES, RULES, Rule, edited, target
from .test_hostile import stored

EXAMPLE = REPO / "examples" / "zone-split"
WHERE = {
    "cluster/nodes.yaml": "Node gpu-a1",
    "workloads/before/coordinator.yaml": "Deployment ml-demo/trainer-coordinator",
    "workloads/before/namespace.yaml": "Namespace ml-demo",
    "cilium/zone-policies.yaml": "CiliumNetworkPolicy ml-demo/allow-intra-zone-a",
    "cilium/netpol.yaml": "NetworkPolicy ml-demo/hostile-np",
    "cilium/service.yaml": "Service ml-demo/hostile-svc",
}


def _render(root: Path) -> tuple[int, str]:
    result = CliRunner().invoke(
        main, ["render", "-c", str(root / "topogen.yaml"), "--out", str(root / "out")]
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stderr


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example with a NetworkPolicy and a Service beside its policies, rendered: the
    unedited objects are read and rendered (exit 0)."""
    root = tmp_path_factory.mktemp("base") / "repo"
    shutil.copytree(EXAMPLE, root)
    for file, obj in BASE_FILES.items():
        (root / file).write_text(yaml.safe_dump(obj, sort_keys=False))
    code, err = _render(root)
    assert code == 0, err
    return root


def _edit(base: Path, tmp: Path, rule: Rule) -> Path:
    root = tmp / "repo"
    shutil.copytree(base, root, symlinks=True)
    path = root / rule.file
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    target(rule, docs).clear()
    target(rule, docs).update(edited(rule, target(rule, list(yaml.safe_load_all(
        (base / rule.file).read_text())))))  # fmt: skip
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return root


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_refused_as_the_api_server_refuses_it(rule: Rule, base: Path, tmp_path: Path) -> None:
    root = _edit(base, tmp_path, rule)
    before = stored(root / "out")
    code, err = _render(root)
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("topogen: error: "), err
    line = lines[0]
    assert rule.file.rsplit("/", 1)[-1] in line and WHERE[rule.file] in line, line
    assert rule.says in line, line
    assert stored(root / "out") == before


@pytest.mark.parametrize("rule", ACCEPTED, ids=[r.id for r in ACCEPTED])
def test_read_as_the_api_server_reads_it(rule: Rule, base: Path, tmp_path: Path) -> None:
    """Read and planned: rendered, or a group refused for its capacity (exit 1)."""
    code, err = _render(_edit(base, tmp_path, rule))
    assert code == 0 or (code == 1 and "no domain can hold it" in err), err


def test_every_class_has_rules() -> None:
    ids = {r.id for r in RULES}
    assert len(ids) == len(RULES)
    for word in ("allocatable", "request", "gpu", "port", "cidr", "ipblock", "label",
                 "selector", "taint", "toleration", "affinity"):  # fmt: skip
        assert any(word in i for i in ids), word


@pytest.mark.tools
def test_cilium_refuses_the_cilium_rules_and_accepts_the_rest(base: Path) -> None:
    """Cilium v1.20.2's CRD schema (through the API server's validation code) and agent
    parser, in tools/cilium-oracle: each cilium rule's policy rejected, the unedited policy
    and the accepted ones taken."""
    from cilium import oracle

    cilium = [r for r in RULES if r.judge == "cilium"]
    accepted = [r for r in ACCEPTED if r.judge == "cilium"]
    policies = "cilium/zone-policies.yaml"
    original = next(yaml.safe_load_all((base / policies).read_text()))
    scenarios = [{"name": "unedited", "policies": [original]}] + [
        {"name": r.id, "policies": [edited(r, original)]} for r in [*cilium, *accepted]
    ]
    results = {res.name: res for res in oracle.run(scenarios)}
    assert not results["unedited"].rejected()
    for r in accepted:
        assert not results[r.id].rejected(), (r.id, results[r.id].rejected())
    for r in cilium:
        errors = list(results[r.id].rejected().values())
        assert errors, f"{r.id}: Cilium accepts it"
        assert r.field in errors[0], (r.id, errors[0])
