"""A queued job, analysed with its Kueue objects: the example (examples/kueue-tas) and
variations of its Kueue objects and job, each the verdict the real controller's behaviour
calls for (tests/live/test_live_kueue.py shows that behaviour)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tooling import REPO
from topogen.config import load_config
from topogen.model import FindingKind
from topogen.pipeline.analyze import AnalysisReport, analyze
from topogen.pipeline.render import render

EXAMPLE = REPO / "examples" / "kueue-tas"
ZONE = "topology.kubernetes.io/zone"
Docs = list[dict[str, Any]]


def _tree(tmp: Path, queues: Callable[[Docs], None] | None = None,
          job: Callable[[dict[str, Any]], None] | None = None) -> Path:  # fmt: skip
    """The example copied, its Kueue objects and job changed."""
    root = tmp / "kueue-tas"
    shutil.copytree(EXAMPLE, root)
    if queues is not None:
        path = root / "kueue" / "queues.yaml"
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        queues(docs)
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    if job is not None:
        path = root / "workloads" / "resnet.yaml"
        doc = yaml.safe_load(path.read_text())
        job(doc)
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return root / "topogen.yaml"


def _report(config: Path) -> AnalysisReport:
    return analyze(load_config(config))


def _kinds(report: AnalysisReport) -> set[FindingKind]:
    return {f.kind for f in report.findings}


def _one(docs: Docs, kind: str) -> dict[str, Any]:
    (doc,) = [d for d in docs if d["kind"] == kind]
    return doc


def test_the_example_job_is_constrained_to_the_allowed_zones() -> None:
    report = _report(EXAMPLE / "topogen.yaml")
    assert _kinds(report) == {FindingKind.KUEUE_CONSTRAINED}
    for f in report.findings:
        assert f.zones == ("zone-a", "zone-b")
        assert "podset-group-name" in f.fix and "[zone-a, zone-b]" in f.fix
    (plan,) = report.plans
    assert plan.kueue is not None and plan.kueue.zones == ("zone-a", "zone-b")
    assert plan.kueue.queues == (("research", "training"),) and plan.kueue.level == ZONE
    assert plan.domain is None  # no pod of the group is left to kube-scheduler


def test_topogen_analyze_prints_kueue_constrained() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "topogen", "analyze", "-c", str(EXAMPLE / "topogen.yaml")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("KUEUE_CONSTRAINED") == 2  # the master and the workers


def _levels(*levels: str) -> Callable[[Docs], None]:
    def change(docs: Docs) -> None:
        _one(docs, "Topology")["spec"]["levels"] = [{"nodeLabel": lv} for lv in levels]

    return change


def _flavor(**spec: Any) -> Callable[[Docs], None]:
    def change(docs: Docs) -> None:
        flavor = _one(docs, "ResourceFlavor")["spec"]
        for key, value in spec.items():
            if value is None:
                flavor.pop(key, None)
            else:
                flavor[key] = value

    return change


def _drop(kind: str) -> Callable[[Docs], None]:
    def change(docs: Docs) -> None:
        docs[:] = [d for d in docs if d["kind"] != kind]

    return change


def _annotate(annotations: dict[str, str], replicas: int | None = None) -> Callable[[Any], None]:
    def change(job: dict[str, Any]) -> None:
        master = job["spec"]["pytorchReplicaSpecs"]["Master"]
        master["template"]["metadata"]["annotations"] = annotations
        if replicas is not None:
            master["replicas"] = replicas

    return change


PREFERRED = {"kueue.x-k8s.io/podset-preferred-topology": ZONE}
LEFT_TO_KUEUE = [
    ("no-hostname-level", _levels(ZONE), None,
     "add kubernetes.io/hostname as the lowest level of Topology default"),
    ("no-zone-level", _levels("kubernetes.io/hostname"), None,
     f"Topology default has no level {ZONE}: add it above kubernetes.io/hostname"),
    ("flavor-pins-zone-c", _flavor(nodeLabels={ZONE: "zone-c"}), None,
     f"pins {ZONE}=zone-c, where it cannot be kept with its traffic allowed"),
    ("no-topology-object", _drop("Topology"), None,
     "names Topology default, which topogen was not given"),
    ("no-local-queue", _drop("LocalQueue"), None,
     "queued to Kueue (research/training), but topogen was not given LocalQueue research/training"),
    ("preferred", None, _annotate(PREFERRED), "asks podset-preferred-topology"),
    ("two-masters", None, _annotate({}, replicas=2), "only when one of them is a single pod"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("queues", "job", "reason"), [c[1:] for c in LEFT_TO_KUEUE], ids=[c[0] for c in LEFT_TO_KUEUE]
)
def test_what_topogen_cannot_constrain_is_left_to_kueue_with_the_reason(
    tmp_path: Path,
    queues: Callable[[Docs], None] | None,
    job: Callable[[dict[str, Any]], None] | None,
    reason: str,
) -> None:
    report = _report(_tree(tmp_path, queues, job))
    assert _kinds(report) == {FindingKind.KUEUE_MANAGED}
    for f in report.findings:
        assert reason in f.message and "topogen adds no affinity" in f.message, f.message
    assert report.plans[0].kueue is None


def test_a_queue_without_tas_is_an_ordinary_job_with_the_flavors_tolerations(
    tmp_path: Path,
) -> None:
    """kube-scheduler places it: analysed like any job, with what Kueue adds to its pods
    (the master has no GPU toleration of its own: the flavor's lets it on the GPU nodes)."""
    no_tas = _flavor(topologyName=None)
    report = _report(_tree(tmp_path, no_tas, _untopologied))
    assert not _kinds(report) & {FindingKind.KUEUE_CONSTRAINED, FindingKind.KUEUE_MANAGED}
    assert FindingKind.UNSCHEDULABLE not in _kinds(report)
    bare = _flavor(topologyName=None, tolerations=None)
    plain = _report(_tree(tmp_path / "plain", bare, _untopologied))
    assert FindingKind.UNSCHEDULABLE in _kinds(plain)  # no toleration, tainted nodes only
    # a topology request on a queue without TAS: Kueue admits it nowhere
    asks = _report(_tree(tmp_path / "asks", no_tas))
    assert _kinds(asks) == {FindingKind.KUEUE_MANAGED}
    assert "Kueue admits it nowhere" in asks.findings[0].message


def _untopologied(job: dict[str, Any]) -> None:
    for spec in job["spec"]["pytorchReplicaSpecs"].values():
        spec["template"]["metadata"].pop("annotations")


def test_a_local_queue_without_cluster_queue_is_an_input_error(tmp_path: Path) -> None:
    def broken(docs: Docs) -> None:
        _one(docs, "LocalQueue")["spec"] = {}

    config = _tree(tmp_path, broken)
    out = subprocess.run(
        [sys.executable, "-m", "topogen", "analyze", "-c", str(config)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) <= 2
    assert "queues.yaml" in out.stderr and "spec.clusterQueue is required" in out.stderr


def _with_engines(config: Path, engines: list[str]) -> Path:
    raw = yaml.safe_load(config.read_text())
    raw["engines"] = engines
    config.write_text(yaml.safe_dump(raw, sort_keys=False))
    return config


def test_an_engine_without_kueue_job_policies_is_named(tmp_path: Path) -> None:
    """gatekeeper and kyverno-legacy render no Kueue job policy: a warning names each;
    the job stays KUEUE_CONSTRAINED by the engines that do, and says by which."""
    report = _report(_with_engines(_tree(tmp_path), ["kyverno", "gatekeeper", "kyverno-legacy"]))
    assert _kinds(report) == {FindingKind.KUEUE_CONSTRAINED}
    assert all("(by kyverno; not by gatekeeper, kyverno-legacy)" in f.message
               for f in report.findings)  # fmt: skip
    gaps = [w for w in report.warnings if "renders no policy for the Kueue" in w]
    assert [g.split(": ")[1].split(" renders")[0] for g in gaps] == [
        "engine gatekeeper",
        "engine kyverno-legacy",
    ]


def test_no_engine_with_kueue_job_policies_leaves_the_job_to_kueue(tmp_path: Path) -> None:
    report = _report(_with_engines(_tree(tmp_path), ["gatekeeper"]))
    assert _kinds(report) == {FindingKind.KUEUE_MANAGED}
    for f in report.findings:
        assert "engine gatekeeper renders no Kueue job policy" in f.message
        assert f.fix.startswith("add kyverno or native to the cluster's engines")
    out = tmp_path / "out"
    result = render(load_config(tmp_path / "kueue-tas" / "topogen.yaml"), out=out)
    assert not [f.path for f in result.files if "kueue" in f.path]


def test_a_queued_trainjob_is_left_to_kueue_with_the_reason(tmp_path: Path) -> None:
    """A TrainJob holds no pod template (its runtime does; Trainer v2.0's podSpecOverrides
    carry no affinity): topogen's job mutation does not reach it, so KUEUE_MANAGED."""
    config = _tree(tmp_path)
    case = REPO / "tests" / "operators" / "cases" / "trainjob-podspecoverrides" / "manifest.yaml"
    docs = [d for d in yaml.safe_load_all(case.read_text()) if d]
    for d in docs:
        d["metadata"]["namespace"] = "research"
        if d["kind"] == "TrainJob":
            d["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "training"}
            del d["spec"]["podSpecOverrides"][0]["nodeSelector"]  # a label no node here has
    (config.parent / "workloads" / "resnet.yaml").unlink()
    (config.parent / "workloads" / "trainjob.yaml").write_text(yaml.safe_dump_all(docs))
    raw = yaml.safe_load(config.read_text())
    raw["groups"][0]["profile"] = "kubeflow-trainer"
    config.write_text(yaml.safe_dump(raw, sort_keys=False))
    report = _report(config)
    assert _kinds(report) == {FindingKind.KUEUE_MANAGED}
    assert all("topogen cannot mutate this kind's templates" in f.message for f in report.findings)
