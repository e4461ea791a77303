"""`topogen init`: topogen.yaml for an existing GitOps repository."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from click.testing import CliRunner

from topogen.cli import main
from topogen.config import load_config

from .gitops_kit import EXAMPLES, kustomize

JOBS = {
    "training/pytorch/resnet.yaml": """
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata: {name: resnet, namespace: research}
        spec: {pytorchReplicaSpecs: {Master: {template: {spec: {containers: []}}}}}
    """,
    "training/mpi/allreduce.yaml": """
        apiVersion: kubeflow.org/v2beta1
        kind: MPIJob
        metadata: {name: allreduce, namespace: hpc}
        spec: {mpiReplicaSpecs: {Launcher: {template: {spec: {containers: []}}}}}
    """,
    # no namespace of its own: the kustomization next to it sets one
    "training/llm/trainjob.yaml": """
        apiVersion: trainer.kubeflow.org/v1alpha1
        kind: TrainJob
        metadata: {name: llama}
        spec: {trainer: {numNodes: 2}}
    """,
    "training/llm/kustomization.yaml": """
        namespace: llm
        resources: [trainjob.yaml]
    """,
    "training/jobset.yaml": """
        apiVersion: jobset.x-k8s.io/v1alpha2
        kind: JobSet
        metadata: {name: js, namespace: batch-a}
        spec: {replicatedJobs: []}
        ---
        apiVersion: jobset.x-k8s.io/v1alpha2
        kind: JobSet
        metadata: {name: js, namespace: batch-b}
        spec: {replicatedJobs: []}
    """,
    "training/volcano.yaml": """
        apiVersion: batch.volcano.sh/v1alpha1
        kind: Job
        metadata: {name: vc, namespace: vc}
        spec: {tasks: []}
    """,
    "training/ray.yaml": """
        apiVersion: ray.io/v1
        kind: RayJob
        metadata: {name: tune, namespace: ray}
        spec: {entrypoint: python tune.py}
    """,
    # a typed list, as `kubectl get lws -o yaml` prints it: items name no kind
    "training/lws.yaml": """
        apiVersion: leaderworkerset.x-k8s.io/v1
        kind: LeaderWorkerSetList
        items:
          - metadata: {name: vllm, namespace: serve}
            spec: {replicas: 2}
    """,
    # a plain batch Job is not an operator's object
    "apps/batch.yaml": """
        apiVersion: batch/v1
        kind: Job
        metadata: {name: nightly, namespace: ops}
        spec: {template: {spec: {containers: []}}}
    """,
    "network/zones.yaml": """
        apiVersion: cilium.io/v2
        kind: CiliumNetworkPolicy
        metadata: {name: zone-a, namespace: research}
        spec: {endpointSelector: {}}
    """,
    # a Helm template is not YAML: reported, not fatal
    "charts/app/templates/deploy.yaml": "{{- if .Values.enabled }}\nkind: {{ .Values.kind\n",
    # topogen's own output is never scanned
    "policies/lab/kyverno/old.yaml": """
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata: {name: stale, namespace: nowhere}
    """,
}


def _repo(root: Path, files: dict[str, str]) -> Path:
    import textwrap

    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def test_init_detects_operators_and_namespaces(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "gitops", JOBS)
    result = CliRunner().invoke(main, ["init", str(repo), "--cluster", "lab"])
    assert result.exit_code == 0, result.output
    cfg = load_config(repo / "topogen.yaml")
    groups = {g.profile: sorted(g.namespaces) for g in cfg.groups}
    assert groups == {
        "kubeflow-training-operator": ["research"],
        "mpi-operator": ["hpc"],
        "kubeflow-trainer": ["llm"],
        "jobset": ["batch-a", "batch-b"],
        "volcano": ["vc"],
        "kuberay": ["ray"],
        "leaderworkerset": ["serve"],
    }
    # folders, not files: a manifest added there later is read too
    assert cfg.workloads == ["training/"]
    # named after the workloads, not the profile
    names = {g.profile: g.name for g in cfg.groups}
    assert names == {
        "kubeflow-training-operator": "resnet",
        "mpi-operator": "allreduce",
        "kubeflow-trainer": "llama",
        "jobset": "batch-a-training",  # two jobs in two namespaces
        "volcano": "vc",
        "kuberay": "tune",
        "leaderworkerset": "vllm",
    }
    (cluster,) = cfg.clusters
    assert cluster.name == "lab"
    assert cluster.network_policies == ["network/"]
    # the workload folder gets a kustomization (its subfolder with one of its own as a
    # folder), so `resources: [../training/]` builds
    kust = yaml.safe_load((repo / "training" / "kustomization.yaml").read_text())
    assert kust["resources"] == [
        "jobset.yaml",
        "llm/",
        "lws.yaml",
        "mpi/allreduce.yaml",
        "pytorch/resnet.yaml",
        "ray.yaml",
        "volcano.yaml",
    ]
    assert (
        (repo / "topogen.yaml")
        .read_text()
        .startswith("# yaml-language-server: $schema=topogen.schema.json\n")
    )
    assert json.loads((repo / "topogen.schema.json").read_text())["title"] == "topogen.yaml"
    # no nodes found: the folder they go in (with the agent's cilium-config beside them)
    assert cluster.nodes == ["cluster/"] and (repo / "cluster").is_dir()
    assert "charts/app/templates/deploy.yaml" in result.stderr  # skipped, said so
    assert "kubectl get nodes -o yaml" in result.stderr


def test_init_refuses_to_overwrite(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"training/volcano.yaml": JOBS["training/volcano.yaml"]})
    (repo / "topogen.yaml").write_text("# mine\n")
    result = CliRunner().invoke(main, ["init", str(repo)])
    assert result.exit_code == 2
    assert "topogen.yaml: already exists (pass --force" in result.stderr
    assert result.stderr.count("topogen.yaml") == 1  # said once
    assert (repo / "topogen.yaml").read_text() == "# mine\n"
    result = CliRunner().invoke(main, ["init", str(repo), "--force"])
    assert result.exit_code == 0, result.output
    assert load_config(repo / "topogen.yaml").groups[0].profile == "volcano"


def test_init_without_training_operators_writes_a_custom_group(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"apps/batch.yaml": JOBS["apps/batch.yaml"]})
    result = CliRunner().invoke(main, ["init", str(repo)])
    assert result.exit_code == 0, result.output
    assert "no training operator" in result.stderr
    (group,) = load_config(repo / "topogen.yaml").groups
    assert group.profile == "custom"


def test_init_usage_errors(tmp_path: Path) -> None:
    assert CliRunner().invoke(main, ["init", str(tmp_path / "missing")]).exit_code == 2
    result = CliRunner().invoke(main, ["init", str(tmp_path), "--cluster", "Not_A_Name"])
    assert (
        result.exit_code == 2
        and "clusters.Not_A_Name.name: 'Not_A_Name' is not a DNS label" in result.stderr
    )
    assert not (tmp_path / "topogen.yaml").exists()


def test_init_then_render(tmp_path: Path) -> None:
    """An example repository without its topogen.yaml: init, render, build the overlay."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "hostnetwork-mpi", repo)
    (repo / "topogen.yaml").unlink()
    result = CliRunner().invoke(main, ["init", str(repo), "--cluster", "hpc"])
    assert result.exit_code == 0, result.output
    cfg = yaml.safe_load((repo / "topogen.yaml").read_text())
    # the nodes and the agent's settings it found
    assert cfg["clusters"][0]["nodes"] == ["cluster/cilium-config.yaml", "cluster/nodes.yaml"]
    result = CliRunner().invoke(main, ["render", "-c", str(repo / "topogen.yaml")])
    assert result.exit_code == 0, result.output
    names = {o["metadata"]["name"] for o in kustomize(repo / "kustomize" / "overlays" / "hpc")}
    assert "topogen-allreduce-validate" in names  # the group is named after its job


def test_init_keeps_kustomizations_it_did_not_write_and_folders_it_cannot_read(
    tmp_path: Path,
) -> None:
    repo = _repo(
        tmp_path,
        {
            "jobs/a/resnet.yaml": JOBS["training/pytorch/resnet.yaml"],
            "jobs/b/vc.yaml": JOBS["training/volcano.yaml"],
            "jobs/b/kustomization.yaml": "resources: [vc.yaml]\n# mine\n",
            # unreadable (a Helm template) inside jobs/: jobs/ itself is never named
            "jobs/chart/t.yaml": "{{- if .Values.x }}\n",
        },
    )
    result = CliRunner().invoke(main, ["init", str(repo)])
    assert result.exit_code == 0, result.output
    cfg = load_config(repo / "topogen.yaml")
    assert cfg.workloads == ["jobs/a/", "jobs/b/"]
    assert (repo / "jobs/b/kustomization.yaml").read_text() == "resources: [vc.yaml]\n# mine\n"
    assert yaml.safe_load((repo / "jobs/a/kustomization.yaml").read_text())["resources"] == [
        "resnet.yaml"
    ]
    assert kustomize(repo / "jobs" / "a")[0]["kind"] == "PyTorchJob"
    # analyze reads the folders (their kustomization files are not objects)
    shutil.copy(EXAMPLES / "pytorch-three-zone" / "cluster" / "nodes.yaml", repo / "cluster")
    analyzed = CliRunner().invoke(main, ["analyze", "-c", str(repo)])
    assert analyzed.exit_code in (0, 1), analyzed.output


def test_init_finds_a_stamped_identity_label_by_the_nodes_zones(tmp_path: Path) -> None:
    """The zone-split example: its policies select pods on `zone`, which no manifest sets
    and whose values are the nodes' zones."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "zone-split", repo)
    (repo / "topogen.yaml").unlink()
    (repo / "topogen-after.yaml").unlink()
    shutil.rmtree(repo / "workloads" / "after")
    result = CliRunner().invoke(main, ["init", str(repo)])
    assert result.exit_code == 0, result.output
    (group,) = load_config(repo / "topogen.yaml").groups
    assert group.identity_label == "zone"
