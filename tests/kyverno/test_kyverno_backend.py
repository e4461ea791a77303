"""The generated Kyverno CEL policies, checked with the real Kyverno CLI."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from gitops.gitops_kit import copy_inputs
from tooling import REPO, require_tool
from topogen.cli import main
from topogen.config import load_config
from topogen.model import FindingKind
from topogen.pipeline.analyze import analyze
from topogen.render.intent import intent_for
from topogen.render.reference import mutate, sample_pods
from topogen.sources.loader import load_workload_inputs

pytestmark = pytest.mark.tools

EXAMPLE = REPO / "examples" / "zone-split"


@pytest.fixture(scope="module")
def kyverno() -> Path:
    return require_tool("kyverno")


def _render(tmp: Path, config: Path = EXAMPLE / "topogen.yaml", *extra: str) -> Path:
    out = tmp / "out"
    result = CliRunner().invoke(main, ["render", "-c", str(config), "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    return out / "policies" / "lab" / "kyverno"


def _run(*args: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300)


def test_generated_kyverno_tests_pass(kyverno: Path, tmp_path: Path) -> None:
    policies = _render(tmp_path)
    result = _run(kyverno, "test", policies, "--remove-color")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "0 tests failed" in result.stdout
    assert "22 tests passed" in result.stdout


def test_generated_kyverno_tests_can_fail(kyverno: Path, tmp_path: Path) -> None:
    """A wrong expectation in the generated test must make `kyverno test` fail."""
    policies = _render(tmp_path)
    patched = policies / "tests" / "topogen-ml-training-mutate" / "patched.yaml"
    patched.write_text(patched.read_text().replace("zone-a", "zone-b"))
    result = _run(kyverno, "test", policies, "--remove-color")
    assert result.returncode != 0
    assert "tests failed" in result.stdout and "0 tests failed" not in result.stdout


def _admission_pods(config: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One pod per pod template of the example's workloads, as admission would see it."""
    cfg = load_config(config)
    pods, owners = [], {}
    for w in load_workload_inputs(cfg).workloads:
        raw = _template_of(w.source, w.kind, w.name, w.replica_name)
        name = f"{w.name}-{w.replica_name.lower() or 'pod'}"
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": w.namespace, "labels": dict(w.template.labels)},
            "spec": raw["spec"],
        }
        pods.append(pod)
        owners[name] = w
    return pods, owners


def _template_of(source: str, kind: str, name: str, replica: str) -> dict[str, Any]:
    for doc in yaml.safe_load_all(Path(source).read_text()):
        if doc and doc.get("kind") == kind and doc["metadata"]["name"] == name:
            spec = doc["spec"]
            if not replica:
                return spec["template"]
            field = next(k for k in spec if k.endswith("ReplicaSpecs"))
            return spec[field][replica]["template"]
    raise AssertionError(f"{kind} {name} not in {source}")


def _relocated_config(example: Path, tmp: Path, workloads: str) -> Path:
    """The example's config in tmp, its cluster inputs copied beside it, other workloads."""
    data = yaml.safe_load((example / "topogen.yaml").read_text())
    for c in data["clusters"]:
        copy_inputs(example, tmp, [*c["nodes"], *c.get("networkPolicies", [])])
    data["workloads"] = [workloads]
    path = tmp / "topogen.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _apply(
    kyverno: Path, policies: list[Path], pods: list[dict[str, Any]], tmp: Path
) -> list[dict[str, Any]]:
    res = tmp / "pods.yaml"
    res.write_text(yaml.safe_dump_all(pods, sort_keys=True))
    out = tmp / "mutated"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    result = _run(kyverno, "apply", *policies, "-r", res, "-o", f"{out}/")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    mutated = []
    for pod in pods:
        docs = [
            d
            for d in yaml.safe_load_all(
                (out / f"{pod['metadata']['name']}-mutated.yaml").read_text()
            )
            if d
        ]
        mutated.append(docs[-1])  # -o DIR appends one document per policy
    return mutated


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(p.as_posix().encode() + p.read_bytes())
    return h.hexdigest()


EXAMPLES = ["zone-split", "pytorch-three-zone", "hostnetwork-mpi"]


@pytest.mark.parametrize("example", EXAMPLES)
def test_mutated_example_pods_are_no_longer_blocked(
    kyverno: Path, tmp_path: Path, example: str
) -> None:
    """Before workloads -> generated policies (real CLI) -> analyze: the conflict is gone."""
    root = REPO / "examples" / example
    policies_before = _digest(root / "cilium")
    before = analyze(load_config(root / "topogen.yaml"))
    assert FindingKind.HARD_BLOCK in {f.kind for f in before.findings}
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main, ["render", "-c", str(root / "topogen.yaml"), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    mutating = sorted(out.glob("policies/*/kyverno/topogen-*-mutate.yaml"))
    assert mutating
    pods, owners = _admission_pods(root / "topogen.yaml")
    mutated = _apply(kyverno, mutating, pods, tmp_path)
    assert mutated != pods

    # the mutated pods, as Deployments again with their replica counts
    docs: list[dict[str, Any]] = []
    for pod in mutated:
        w = owners[pod["metadata"]["name"]]
        docs.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": pod["metadata"]["name"], "namespace": w.namespace},
                "spec": {
                    "replicas": w.replicas,
                    "template": {
                        "metadata": {"labels": pod["metadata"]["labels"]},
                        "spec": pod["spec"],
                    },
                },
            }
        )
    (tmp_path / "workloads.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=True))
    report = analyze(load_config(_relocated_config(root, tmp_path, "workloads.yaml")))
    bad = {
        FindingKind.HARD_BLOCK,
        FindingKind.UNSCHEDULABLE,
        FindingKind.IDENTITY_MISMATCH,
        FindingKind.CROSS_ZONE,
    }
    assert not [f.message for f in report.findings if f.kind in bad]
    assert _digest(root / "cilium") == policies_before


def test_second_application_and_non_training_pods_change_nothing(
    kyverno: Path, tmp_path: Path
) -> None:
    policies = _render(tmp_path)
    mutating = [policies / "topogen-ml-training-mutate.yaml"]
    intent = intent_for(analyze(load_config(EXAMPLE / "topogen.yaml")).plans[0], "Audit")
    pods = sample_pods(intent)
    once = _apply(kyverno, mutating, pods, tmp_path)
    assert once == [mutate(p, intent) for p in pods]
    twice = _apply(kyverno, mutating, once, tmp_path)
    assert twice == once
    untouched = {"not-training", "other-namespace", "kueue-tas", "kueue-gated"}
    for before, after in zip(pods, once, strict=True):
        if before["metadata"]["name"] in untouched:
            assert before == after


@pytest.mark.parametrize("action", ["Audit", "Enforce"])
def test_validation_reports_or_rejects_bad_pods(kyverno: Path, tmp_path: Path, action: str) -> None:
    config = tmp_path / "topogen.yaml"
    text = (EXAMPLE / "topogen.yaml").read_text()
    copy_inputs(EXAMPLE, tmp_path, ["cluster/nodes.yaml", "cilium/", "workloads/before/"])
    config.write_text(text + f"validationAction: {action}\n")
    policies = _render(tmp_path, config)
    policy = policies / "topogen-ml-training-validate.yaml"
    doc = yaml.safe_load(policy.read_text())
    assert doc["spec"]["validationActions"] == (["Deny"] if action == "Enforce" else ["Audit"])
    bad = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "unpinned-coordinator",
                "namespace": "ml-demo",
                "labels": {"app": "ml-training", "role": "coordinator"},
            },
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "spoofed-identity",
                "namespace": "ml-demo",
                "labels": {"app": "ml-training", "role": "coordinator", "zone": "zone-b"},
            },
            "spec": {
                "containers": [{"name": "c", "image": "x"}],
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {
                                            "key": "topology.kubernetes.io/zone",
                                            "operator": "In",
                                            "values": ["zone-a"],
                                        }
                                    ]
                                }
                            ]
                        }
                    }
                },
            },
        },
    ]
    res = tmp_path / "bad.yaml"
    res.write_text(yaml.safe_dump_all(bad))
    result = _run(kyverno, "apply", policy, "-r", res, "--remove-color")
    text = result.stdout + result.stderr
    assert "unpinned-coordinator" in text and "must be pinned" in text
    assert "claims a zone the pod is not pinned to" in text
    assert "fail: 2" in text
    if action == "Enforce":
        assert result.returncode != 0


def test_render_refuses_a_group_no_domain_can_hold(tmp_path: Path) -> None:
    config = tmp_path / "topogen.yaml"
    text = (EXAMPLE / "topogen.yaml").read_text()
    copy_inputs(EXAMPLE, tmp_path, ["cluster/nodes.yaml", "cilium/"])
    text = text.replace("[workloads/before/]", "[workloads.yaml]")
    config.write_text(text)
    workers = (EXAMPLE / "workloads" / "before" / "workers.yaml").read_text()
    coordinator = (EXAMPLE / "workloads" / "before" / "coordinator.yaml").read_text()
    (tmp_path / "workloads.yaml").write_text(
        coordinator + "---\n" + workers.replace("parallelism: 4", "parallelism: 8")
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["render", "-c", str(config), "--out", str(out)])
    assert result.exit_code == 1
    assert "group ml-training" in result.output
    assert "needs 8 GPUs" in result.output
    assert not list(out.rglob("topogen-ml-training-*.yaml"))
