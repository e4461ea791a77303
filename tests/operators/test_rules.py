"""The rules around the pod model: unmatched affinity, profile and kind, runtimes, init."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from topogen.cli import main
from topogen.config import load_config
from topogen.model import FindingKind
from topogen.pipeline.analyze import analyze
from topogen.sources.loader import load_workload_inputs

from .kit import CASES, NAMES, load_case, write_config

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"namespace": "ml"},
    "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]},
}
CUSTOM = {
    "groupLabel": "app",
    "roleLabel": "role",
    "coordinatorRoles": ["coordinator"],
    "workerRoles": ["worker"],
}


def _pod(name: str, labels: dict[str, str], affinity: dict[str, str] | None = None) -> dict:
    pod = json.loads(json.dumps(POD))
    pod["metadata"].update(name=name, labels=labels)
    if affinity is not None:
        pod["spec"]["affinity"] = {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": affinity},
                        "topologyKey": "topology.kubernetes.io/zone",
                    }
                ]
            }
        }
    return pod


def _analyze_pods(tmp: Path, pods: list[dict]) -> list:
    path = tmp / "pods.yaml"
    path.write_text(yaml.safe_dump_all(pods))
    return list(analyze(load_config(write_config(tmp, "custom", [path], **CUSTOM))).findings)


def test_a_required_affinity_no_pod_matches_is_unschedulable(tmp_path: Path) -> None:
    pods = [
        _pod("w0", {"app": "j", "role": "worker"}, {"app": "j", "role": "coordinator"}),
        _pod("w1", {"app": "j", "role": "worker"}, {"app": "j", "role": "coordinator"}),
    ]
    findings = _analyze_pods(tmp_path, pods)
    stuck = [f for f in findings if f.kind is FindingKind.UNSCHEDULABLE]
    assert stuck, [f.message for f in findings]
    assert all("stays Pending: no pod matches" in f.message for f in stuck)
    assert "role=coordinator" in stuck[0].message


def test_a_term_the_pod_matches_itself_lets_the_first_one_go(tmp_path: Path) -> None:
    pods = [_pod(f"w{i}", {"app": "j", "role": "worker"}, {"app": "j"}) for i in range(2)]
    findings = _analyze_pods(tmp_path, pods)
    assert not [f for f in findings if f.kind is FindingKind.UNSCHEDULABLE]


def test_a_term_matching_another_analysed_pod_is_satisfiable(tmp_path: Path) -> None:
    pods = [
        _pod("w0", {"app": "j", "role": "worker"}, {"cache": "yes"}),
        _pod("cache", {"cache": "yes"}),
    ]
    findings = _analyze_pods(tmp_path, pods)
    assert not [f for f in findings if f.kind is FindingKind.UNSCHEDULABLE]


@pytest.mark.parametrize(
    ("case", "wrong"),
    [
        ("mpijob-v2beta1", "kubeflow-training-operator"),
        ("mpijob-v1", "mpi-operator"),
        ("pytorchjob", "mpi-operator"),
        ("rayjob", "jobset"),
        ("lws", "kubeflow-trainer"),
        ("trainjob-runtimepatches", "jobset"),
    ],
)
def test_a_profile_that_does_not_fit_the_kind_is_an_error_naming_both(
    tmp_path: Path, case: str, wrong: str
) -> None:
    c = load_case(case)
    config = write_config(tmp_path, wrong, [c.folder / "manifest.yaml"])
    result = CliRunner().invoke(main, ["analyze", "-c", str(config)])
    assert result.exit_code == 2, result.output
    line = result.output.strip().splitlines()[-1]
    assert c.meta["kind"] in line and c.meta["apiVersion"] in line
    assert f"profile {wrong}" in line and f"profile {c.profile}" in line
    assert "Traceback" not in result.output


def test_a_missing_runtime_is_a_warning_naming_it(tmp_path: Path) -> None:
    c = load_case("trainjob-runtimepatches")
    docs = list(yaml.safe_load_all((c.folder / "manifest.yaml").read_text()))
    only_job = tmp_path / "trainjob.yaml"
    only_job.write_text(yaml.safe_dump(docs[1]))
    config = write_config(tmp_path, "kubeflow-trainer", [only_job])
    result = CliRunner().invoke(main, ["analyze", "-c", str(config)])
    assert result.exit_code in (0, 1), result.output
    assert "ClusterTrainingRuntime torch-distributed" in result.output
    assert "TrainJob ml/pytorch-mnist" in result.output


def test_a_namespaced_runtime_written_without_a_namespace_is_in_default(
    tmp_path: Path,
) -> None:
    """kubectl applies a TrainingRuntime and a TrainJob without a namespace in `default`:
    the TrainJob finds its runtime there (no warning) and its pods get its node job."""
    c = load_case("trainjob-runtimepatches")
    runtime, job = yaml.safe_load_all((c.folder / "manifest.yaml").read_text())
    runtime["kind"] = "TrainingRuntime"
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    node["template"]["spec"]["nodeSelector"] = {"pool": "trainer"}  # the runtime's own
    del job["metadata"]["namespace"]
    job["spec"]["runtimeRef"] = {"name": runtime["metadata"]["name"], "kind": "TrainingRuntime"}
    path = tmp_path / "manifest.yaml"
    path.write_text(yaml.safe_dump_all([runtime, job]))
    inputs = load_workload_inputs(load_config(write_config(tmp_path, c.profile, [path])))
    assert not inputs.warnings, inputs.warnings
    nodes = [w for w in inputs.workloads if w.namespace == "default"]
    assert sum(w.replicas for w in nodes) == 3, nodes
    assert all(w.template.node_selector == {"gpu": "true", "pool": "trainer"} for w in nodes)


def test_a_runtime_patch_selecting_no_node_is_unschedulable(tmp_path: Path) -> None:
    c = load_case("trainjob-runtimepatches")
    text = (c.folder / "manifest.yaml").read_text().replace('gpu: "true"', "gpu: h100")
    path = tmp_path / "manifest.yaml"
    path.write_text(text)
    report = analyze(load_config(write_config(tmp_path, "kubeflow-trainer", [path])))
    kinds = {f.kind for f in report.findings}
    assert FindingKind.UNSCHEDULABLE in kinds and FindingKind.HARD_BLOCK not in kinds
    assert any("gpu=h100" in f.message for f in report.findings)


def test_init_detects_every_kind(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    for name in NAMES:
        dest = repo / "training" / name / "manifest.yaml"
        dest.parent.mkdir(parents=True)
        dest.write_text((CASES / name / "manifest.yaml").read_text())
    result = CliRunner().invoke(main, ["init", str(repo)])
    assert result.exit_code == 0, result.output
    cfg = yaml.safe_load((repo / "topogen.yaml").read_text())
    profiles = {g["profile"] for g in cfg["groups"]}
    assert profiles == {load_case(n).profile for n in NAMES}


def test_a_rayjob_with_generate_name_is_read(tmp_path: Path) -> None:
    c = load_case("rayjob")
    text = (
        (c.folder / "manifest.yaml")
        .read_text()
        .replace("name: rayjob-sample", "generateName: rayjob-sample-")
    )
    path = tmp_path / "rayjob.yaml"
    path.write_text(text)
    report = analyze(load_config(write_config(tmp_path, "kuberay", [path])))
    jobs = [j.job.job for cl in report.clusters for j in cl.jobs]
    assert jobs == ["rayjob-sample-xxxxx-xxxxx"], jobs


@pytest.mark.parametrize(
    ("name", "pinned", "why"),
    [
        ("rayjob", True, "batch.kubernetes.io/job-name ties them to their job"),
        ("lws", True, "names only with leaderworkerset.sigs.k8s.io/group-index"),
        ("raycluster", False, ""),
        ("pytorchjob-elastic", False, ""),
    ],
)
def test_spread_pins_groups_whose_jobs_no_job_label_alone_names(
    tmp_path: Path, name: str, pinned: bool, why: str
) -> None:
    """The per-job pins of placement spread match a job by its job label: a group with a
    detached pod (the RayJob's submitter) or scope labels (an LWS group) goes to one
    domain instead, and says why; the others spread over the three allowed zones."""
    from topogen.render.intent import intent_for

    case = load_case(name)
    result = analyze(
        load_config(write_config(tmp_path, case.profile, [case.folder / "manifest.yaml"]))
    )
    (plan,) = result.plans
    assert plan.enforceable, plan.refused
    intent = intent_for(plan, "Enforce")
    if pinned:
        assert plan.placement == "pin" and not intent.per_job
        assert why in plan.note and "all its jobs go to one domain" in plan.note
        assert len(plan.zones) == 1
    else:
        assert plan.placement == "spread" and len(plan.domains) == 3
        assert intent.per_job and not intent.detached and not intent.scope
        assert "go to one domain" not in plan.note
