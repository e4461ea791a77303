"""The workload-patches component: the admission mutation as Kustomize patches."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from topogen.cli import main
from topogen.config import GroupConfig, load_config
from topogen.model import FindingKind
from topogen.operators.registry import profile_for
from topogen.pipeline.analyze import analyze
from topogen.render.base import to_yaml
from topogen.render.intent import AdmissionIntent, intent_for
from topogen.render.reference import mutate
from topogen.render.workload_patches import json_patch_ops, workload_patches
from topogen.sources.objects import flatten
from topogen.sources.workloads import read_workloads
from topogen.sources.yamlio import Document

from .gitops_kit import (
    EXAMPLES,
    ZONE_SPLIT,
    kustomize,
    kustomize_fails,
    relocated_config,
    render,
    write_kustomization,
)

PROBLEMS = {
    FindingKind.HARD_BLOCK,
    FindingKind.UNSCHEDULABLE,
    FindingKind.IDENTITY_MISMATCH,
    FindingKind.CROSS_ZONE,
}


def _problems(config: Path) -> list[str]:
    return [f.message for f in analyze(load_config(config)).findings if f.kind in PROBLEMS]


def _patched(example: Path, workloads: Path, tmp: Path) -> Path:
    """Render `example`, then build its training manifests with the workload-patches."""
    out = render(example / "topogen.yaml", tmp / "out")
    (cluster,) = [p.name for p in (out / "kustomize" / "overlays").iterdir()]
    build = tmp / "build"
    build.mkdir()
    files = sorted(workloads.rglob("*.yaml"))
    for f in files:
        (build / f.name).write_text(f.read_text())
    component = out / "kustomize" / "components" / "workload-patches" / cluster
    write_kustomization(
        build,
        resources=[f.name for f in files],
        components=[str(Path("..") / component.relative_to(tmp))],
    )
    built = tmp / "built.yaml"
    built.write_text(yaml.safe_dump_all(kustomize(build), sort_keys=True))
    return built


@pytest.mark.parametrize(
    ("example", "workloads"),
    [
        ("zone-split", "workloads/before"),
        ("pytorch-three-zone", "workloads"),
        ("hostnetwork-mpi", "workloads"),
    ],
)
def test_patched_manifests_analyze_clean(example: str, workloads: str, tmp_path: Path) -> None:
    """kubectl kustomize with the component over the before manifests, then analyze: clean."""
    root = EXAMPLES / example
    if not (root / "topogen.yaml").exists():
        pytest.skip(f"example {example} is not in this checkout")
    assert _problems(root / "topogen.yaml"), "the example must start with a conflict"
    built = _patched(root, root / workloads, tmp_path)
    config = relocated_config(root, tmp_path, [str(built)])
    assert _problems(config) == []
    result = CliRunner().invoke(main, ["analyze", "-c", str(config)])
    assert result.exit_code == 0, result.output


def test_zone_split_patches_equal_the_reference_mutation(tmp_path: Path) -> None:
    """Each patched pod template is what the generated policies make of its pods."""
    built = _patched(ZONE_SPLIT, ZONE_SPLIT / "workloads" / "before", tmp_path)
    intent = intent_for(analyze(load_config(ZONE_SPLIT / "topogen.yaml")).plans[0], "Audit")
    docs = {d["metadata"]["name"]: d for d in yaml.safe_load_all(built.read_text())}
    for name in ("trainer-coordinator", "trainer-workers"):
        before = yaml.safe_load(
            (
                ZONE_SPLIT
                / "workloads"
                / "before"
                / ("coordinator.yaml" if "coord" in name else "workers.yaml")
            ).read_text()
        )
        tmpl = before["spec"]["template"]
        pod = {"metadata": {"namespace": "ml-demo", **tmpl["metadata"]}, "spec": tmpl["spec"]}
        want = mutate(pod, intent)
        got = docs[name]["spec"]["template"]
        assert got["spec"] == want["spec"]
        assert got["metadata"]["labels"] == want["metadata"]["labels"]


# --- every kind, with the real kustomize ---------------------------------------------------


def _intent(profile: str, **group: Any) -> AdmissionIntent:
    """zone-split's plan (zone-a, the GPU toleration, identity zone) for another profile."""
    plan = analyze(load_config(ZONE_SPLIT / "topogen.yaml")).plans[0]
    base = intent_for(plan, "Audit")
    p = profile_for(
        GroupConfig.model_validate({"name": "g", "profile": profile, "namespaces": ["ml"], **group})
    )
    return dataclasses.replace(
        base,
        namespaces=("ml",),
        job_label=p.job_label,
        coordinator=p.coordinator,
        worker=p.worker,
        coordinator_selector=p.coordinator[-1],
        anchors=tuple(a for _, a in p.worker_anchors),
        scope=p.scope,
    )


def _tmpl(labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    body = {"containers": [{"name": "main", "image": "img"}], **spec}
    return {"metadata": {"labels": labels}, "spec": body} if labels else {"spec": body}


EXISTING = [{"key": "example.com/spot", "operator": "Exists", "effect": "NoSchedule"}]
USER_TERM = {
    "matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]
}
USER_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [copy.deepcopy(USER_TERM)]
        }
    }
}

CASES: dict[
    str, tuple[str, dict[str, Any], dict[str, list[tuple[tuple[Any, ...], dict[str, str]]]]]
] = {
    # kind: (profile, object, {role: [(template path, pod labels the operator adds)]})
    "StatefulSet": (
        "custom",
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "coord.v1", "namespace": "ml"},
            "spec": {
                "template": _tmpl(
                    {"app": "j", "role": "coordinator"},
                    tolerations=EXISTING,
                    affinity=USER_AFFINITY,
                )
            },
        },
        {"coordinator": [(("spec", "template"), {})]},
    ),
    "PyTorchJob": (
        "kubeflow-training-operator",
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "pt", "namespace": "ml"},
            "spec": {
                "pytorchReplicaSpecs": {
                    "Master": {"template": _tmpl()},
                    "Worker": {"template": _tmpl(tolerations=EXISTING)},
                }
            },
        },
        {
            "coordinator": [
                (
                    ("spec", "pytorchReplicaSpecs", "Master", "template"),
                    {
                        "training.kubeflow.org/job-name": "pt",
                        "training.kubeflow.org/replica-type": "master",
                    },
                )
            ],
            "worker": [
                (
                    ("spec", "pytorchReplicaSpecs", "Worker", "template"),
                    {
                        "training.kubeflow.org/job-name": "pt",
                        "training.kubeflow.org/replica-type": "worker",
                    },
                )
            ],
        },
    ),
    "MPIJob": (
        "mpi-operator",
        {
            "apiVersion": "kubeflow.org/v2beta1",
            "kind": "MPIJob",
            "metadata": {"name": "mpi", "namespace": "ml"},
            "spec": {
                "mpiReplicaSpecs": {
                    "Launcher": {"template": _tmpl()},
                    "Worker": {"template": _tmpl()},
                }
            },
        },
        {
            "coordinator": [
                (
                    ("spec", "mpiReplicaSpecs", "Launcher", "template"),
                    {
                        "training.kubeflow.org/job-name": "mpi",
                        "training.kubeflow.org/job-role": "launcher",
                    },
                )
            ],
            "worker": [
                (
                    ("spec", "mpiReplicaSpecs", "Worker", "template"),
                    {
                        "training.kubeflow.org/job-name": "mpi",
                        "training.kubeflow.org/job-role": "worker",
                    },
                )
            ],
        },
    ),
    "JobSet": (
        "jobset",
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "js", "namespace": "ml"},
            "spec": {
                "replicatedJobs": [
                    {"name": "leader", "template": {"spec": {"template": _tmpl()}}},
                    {
                        "name": "workers",
                        "replicas": 2,
                        "template": {"spec": {"template": _tmpl(affinity=USER_AFFINITY)}},
                    },
                ]
            },
        },
        {
            "coordinator": [
                (
                    ("spec", "replicatedJobs", 0, "template", "spec", "template"),
                    {
                        "jobset.sigs.k8s.io/jobset-name": "js",
                        "jobset.sigs.k8s.io/replicatedjob-name": "leader",
                    },
                )
            ],
            "worker": [
                (
                    ("spec", "replicatedJobs", 1, "template", "spec", "template"),
                    {
                        "jobset.sigs.k8s.io/jobset-name": "js",
                        "jobset.sigs.k8s.io/replicatedjob-name": "workers",
                    },
                )
            ],
        },
    ),
    "Job": (
        "custom",
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "w", "namespace": "ml"},
            "spec": {"template": _tmpl({"app": "j", "role": "worker", "zone": "zone-b"})},
        },
        {"worker": [(("spec", "template"), {})]},
    ),
    "VolcanoJob": (
        "volcano",
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "vc", "namespace": "ml"},
            "spec": {
                "tasks": [
                    {"name": "master", "template": _tmpl()},
                    {"name": "worker", "replicas": 2, "template": _tmpl()},
                ]
            },
        },
        {
            "coordinator": [
                (
                    ("spec", "tasks", 0, "template"),
                    {"volcano.sh/job-name": "vc", "volcano.sh/task-spec": "master"},
                )
            ],
            "worker": [
                (
                    ("spec", "tasks", 1, "template"),
                    {"volcano.sh/job-name": "vc", "volcano.sh/task-spec": "worker"},
                )
            ],
        },
    ),
}
CUSTOM = {
    "groupLabel": "app",
    "roleLabel": "role",
    "coordinatorRoles": ["coordinator"],
    "workerRoles": ["worker"],
}


def _get(body: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        body = body[p]
    return body


def _build(tmp: Path, objs: list[dict[str, Any]], intent: AdmissionIntent) -> Path:
    """A component of workload_patches() for `objs`, built with kubectl kustomize."""
    kobjs = list(flatten(Document(o, "inline.yaml", i) for i, o in enumerate(objs)))
    patches, skipped = workload_patches(kobjs, read_workloads(kobjs, []), [intent])
    assert not skipped
    comp = tmp / "component"
    comp.mkdir()
    entries = []
    for i, p in enumerate(patches):
        (comp / f"p{i}.yaml").write_text(to_yaml(list(p.ops)) + "\n")
        entries.append({"path": f"p{i}.yaml", "target": p.target})
    (comp / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1alpha1",
                "kind": "Component",
                "patches": entries,
            }
        )
    )
    build = tmp / "build"
    build.mkdir()
    (build / "objects.yaml").write_text(yaml.safe_dump_all(objs))
    write_kustomization(build, resources=["objects.yaml"], components=["../component"])
    return build


@pytest.mark.parametrize("kind", sorted(CASES))
def test_every_kind_is_patched_as_admission_would(kind: str, tmp_path: Path) -> None:
    profile, obj, roles = CASES[kind]
    intent = _intent(profile, **(CUSTOM if profile == "custom" else {}))
    (built,) = kustomize(_build(tmp_path, [obj], intent))
    for role, sites in roles.items():
        for path, extra in sites:
            raw = _get(obj, path)
            labels = {**(raw.get("metadata") or {}).get("labels", {}), **extra}
            pod = {"metadata": {"namespace": "ml", "labels": labels}, "spec": raw["spec"]}
            want = mutate(pod, intent)
            got = _get(built, path)
            assert got["spec"] == want["spec"], (kind, role)
            got_labels = {**(got.get("metadata") or {}).get("labels", {}), **extra}
            assert got_labels == want["metadata"]["labels"]
            assert want["spec"] != raw["spec"]  # something was added


def test_trainjob_gets_a_pod_template_override(tmp_path: Path) -> None:
    intent = _intent("kubeflow-trainer")
    prior = {"targetJobs": [{"name": "node"}], "spec": {"tolerations": EXISTING}}
    obj = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "tj", "namespace": "ml"},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 3},
            "podTemplateOverrides": [prior],
        },
    }
    (built,) = kustomize(_build(tmp_path, [obj], intent))
    first, added = built["spec"]["podTemplateOverrides"]
    assert first == prior and added["targetJobs"] == [{"name": "node"}]
    base = {"key": "jobset.sigs.k8s.io/jobset-name", "value": "tj"}
    rank0 = {
        "metadata": {
            "namespace": "ml",
            "labels": {
                base["key"]: base["value"],
                "jobset.sigs.k8s.io/replicatedjob-name": "node",
                "batch.kubernetes.io/job-completion-index": "0",
            },
        },
        "spec": {"tolerations": EXISTING},
    }
    want = mutate(rank0, intent)
    # rank 0's tolerations and node affinity, plus the workers' pod affinity to rank 0
    assert added["spec"]["tolerations"] == want["spec"]["tolerations"]
    assert added["spec"]["affinity"]["nodeAffinity"] == want["spec"]["affinity"]["nodeAffinity"]
    (term,) = added["spec"]["affinity"]["podAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term["labelSelector"]["matchLabels"][base["key"]] == "tj"
    assert added["metadata"]["labels"] == {"zone": "zone-a"}


def test_trainjob_with_v20_overrides_is_reported_not_patched() -> None:
    obj = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "tj", "namespace": "ml"},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 2},
            "podSpecOverrides": [],
        },
    }
    kobjs = list(flatten([Document(obj, "inline.yaml", 0)]))
    patches, skipped = workload_patches(
        kobjs, read_workloads(kobjs, []), [_intent("kubeflow-trainer")]
    )
    assert patches == [] and "podSpecOverrides" in skipped[0]


def test_a_manifest_changed_since_the_render_fails_the_build(tmp_path: Path) -> None:
    """Appends are pinned with `test` ops: a drifted list fails loudly, never mis-patches."""
    _, obj, _ = CASES["StatefulSet"]
    build = _build(tmp_path, [obj], _intent("custom", **CUSTOM))
    kustomize(build)
    drifted = copy.deepcopy(obj)
    drifted["spec"]["template"]["spec"]["tolerations"].append(
        {"key": "example.com/other", "operator": "Exists"}
    )
    (build / "objects.yaml").write_text(yaml.safe_dump(drifted))
    assert "test failed" in kustomize_fails(build)


def test_objects_outside_the_group_are_left_alone() -> None:
    other = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ml"},
        "spec": {"template": _tmpl({"app": "web"})},
    }
    elsewhere = copy.deepcopy(CASES["StatefulSet"][1])
    elsewhere["metadata"]["namespace"] = "other"
    kueue = copy.deepcopy(CASES["StatefulSet"][1])
    kueue["spec"]["template"]["metadata"]["labels"]["kueue.x-k8s.io/tas"] = "true"
    kobjs = list(flatten(Document(o, "x.yaml", i) for i, o in enumerate([other, elsewhere, kueue])))
    assert workload_patches(kobjs, read_workloads(kobjs, []), [_intent("custom", **CUSTOM)]) == (
        [],
        [],
    )


# --- json_patch_ops -------------------------------------------------------------------------


def test_json_patch_ops() -> None:
    before = {
        "labels": {"a": "1"},
        "tolerations": [{"key": "t"}],
        "terms": [{"matchExpressions": [{"key": "arch"}]}],
        "zone": "zone-b",
    }
    after = {
        "labels": {"a": "1", "topology.kubernetes.io/zone": "z"},
        "tolerations": [{"key": "t"}, {"key": "gpu"}],
        "terms": [{"matchExpressions": [{"key": "arch"}, {"key": "zone"}]}],
        "zone": "zone-a",
        "new": {"x": 1},
    }
    assert json_patch_ops(before, after, "/t") == [
        {"op": "add", "path": "/t/labels/topology.kubernetes.io~1zone", "value": "z"},
        {"op": "add", "path": "/t/new", "value": {"x": 1}},
        {"op": "test", "path": "/t/terms/0/matchExpressions", "value": [{"key": "arch"}]},
        {"op": "add", "path": "/t/terms/0/matchExpressions/-", "value": {"key": "zone"}},
        {"op": "test", "path": "/t/tolerations", "value": [{"key": "t"}]},
        {"op": "add", "path": "/t/tolerations/-", "value": {"key": "gpu"}},
        {"op": "test", "path": "/t/zone", "value": "zone-b"},
        {"op": "replace", "path": "/t/zone", "value": "zone-a"},
    ]
    assert json_patch_ops(before, before) == []
