"""Stable placements from where jobs run (issue 33): a snapshot's bound pods of the groups'
jobs keep each job in the domain its pods run in, over a placements.yaml that disagrees;
a job split across domains keeps nothing and is named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from diff.prs import QUARANTINE, pytorchjob
from topogen.analysis.running import running_jobs, training_pods
from topogen.cli import main
from topogen.config import load_config
from topogen.errors import InputError
from topogen.model import LastPlacements
from topogen.operators.registry import profile_for
from topogen.pipeline.running import snapshot_groups, snapshot_pods
from topogen.sources.live import LiveError, PodRecord, check_snapshot
from topogen.sources.loader import load_cluster_inputs
from topogen.sources.running import profile_keys, running_pods
from topogen.sources.yamlio import Document

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pytorch-three-zone"
JOB, REPLICA, ROLE = (
    "training.kubeflow.org/job-name",
    "training.kubeflow.org/replica-type",
    "training.kubeflow.org/job-role",
)


def _pod(name: str, node: str, job: str = "resnet", role: str = "worker") -> dict[str, Any]:
    labels = {JOB: job, REPLICA: role, **({ROLE: "master"} if role == "master" else {})}
    return {"namespace": "research", "name": name, "labels": labels, "nodeName": node}


def resnet_pods(master: str, *workers: str, job: str = "resnet") -> list[dict[str, Any]]:
    """The bound pods of a PyTorchJob: its master on `master`, a worker on each of `workers`."""
    return [
        _pod(f"{job}-master-0", master, job, "master"),
        *(_pod(f"{job}-worker-{i}", n, job) for i, n in enumerate(workers)),
    ]


def snapshot_repo(tmp_path: Path, pods: list[dict[str, Any]] | None) -> Path:
    """The three-zone example with its nodes as a snapshot holding `pods` (None: no key)."""
    root = tmp_path / "gitops"
    shutil.copytree(EXAMPLE, root)
    nodes = root / "cluster" / "nodes.yaml"
    items = [i for d in yaml.safe_load_all(nodes.read_text()) if d for i in d.get("items", [d])]
    doc: dict[str, Any] = {"apiVersion": "topogen.io/v1alpha1", "kind": "TopogenSnapshot"}
    doc["items"] = items
    if pods is not None:
        doc["pods"] = pods
    nodes.unlink()
    (root / "cluster" / "snapshot.yaml").write_text(json.dumps(doc, indent=2) + "\n")
    return root


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def _placed(root: Path) -> dict[str, dict[str, Any]]:
    result = CliRunner().invoke(main, ["analyze", "-c", str(root / "topogen.yaml"), "-o", "json"])
    assert result.exit_code in (0, 1), result.output
    (plan,) = json.loads(result.stdout)["plans"]
    return {p["job"]: p for p in plan["jobPlacements"]}


def _docs(pods: Any) -> list[Document]:
    return [Document({"kind": "TopogenSnapshot", "items": [], "pods": pods}, "snap.yaml", 0)]


# -- reading ---------------------------------------------------------------------------------


def test_profile_keys_are_the_labels_the_profile_reads() -> None:
    cfg = load_config(EXAMPLE / "topogen.yaml")
    keys = profile_keys([profile_for(cfg.groups[0])])
    assert {JOB, REPLICA, ROLE} <= keys
    assert "pod-template-hash" not in keys and "app" not in keys


def test_running_pods_are_read_sorted_and_older_snapshots_have_none() -> None:
    pods = running_pods(_docs(resnet_pods("cpu-1b-1", "gpu-1b-2", "gpu-1b-1")[::-1]))
    assert [(p.workload.name, p.node) for p in pods] == [
        ("resnet-master-0", "cpu-1b-1"),
        ("resnet-worker-0", "gpu-1b-2"),
        ("resnet-worker-1", "gpu-1b-1"),
    ]
    assert pods[0].workload.template.labels[ROLE] == "master"
    older = [Document({"kind": "TopogenSnapshot", "items": []}, "snap.yaml", 0)]
    assert running_pods(older) == ()


@pytest.mark.parametrize(
    ("pods", "said"),
    [
        ({"a": 1}, "pods must be a list"),
        (["x"], "pods[0]: expected a mapping"),
        ([{"namespace": "research", "name": "p"}], "pods[0]: nodeName must be a non-empty"),
        ([_pod("p", "n") | {"namespace": "Research"}], "pods[0]: 'Research' is not a DNS label"),
        ([_pod("p", "n") | {"labels": {"a": 1}}], "pods[0]: labels must map strings to strings"),
        ([_pod("p", "n") | {"labels": {"a b": "c"}}], "pods[0].labels: label key 'a b'"),
        ([_pod("p", "n"), _pod("p", "m")], "pods[1]: pod research/p is listed twice"),
    ],
)
def test_a_malformed_pod_entry_is_refused_naming_the_file(pods: Any, said: str) -> None:
    with pytest.raises(InputError) as err:
        running_pods(_docs(pods))
    assert said in str(err.value) and err.value.path == "snap.yaml"


def test_a_malformed_snapshot_is_one_line_and_exit_2(tmp_path: Path) -> None:
    root = snapshot_repo(tmp_path, [{"namespace": "research", "name": "x"}])
    code, out = _cli("render", "-c", str(root / "topogen.yaml"))
    assert code == 2 and "Traceback" not in out
    assert "snapshot.yaml" in out and "pods[0]: nodeName must be a non-empty string" in out
    assert not (root / "policies").exists()  # nothing half-written
    # check_snapshot (what `topogen snapshot` runs before writing) refuses it too
    text = (root / "cluster" / "snapshot.yaml").read_text()
    with pytest.raises(LiveError, match=r"nothing was written: .*pods\[0\]: nodeName"):
        check_snapshot(text)


# -- which job runs where ----------------------------------------------------------------------


def _inputs(root: Path) -> tuple[Any, Any]:
    cfg = load_config(root / "topogen.yaml")
    return cfg, load_cluster_inputs(cfg, cfg.clusters[0]).topology


def test_a_job_in_one_zone_runs_there_a_split_one_nowhere(tmp_path: Path) -> None:
    cfg, topology = _inputs(snapshot_repo(tmp_path, []))
    pods = running_pods(
        _docs(
            [
                *resnet_pods("cpu-1b-1", "gpu-1b-1", "gpu-1b-2"),
                *resnet_pods("cpu-1a-1", "gpu-1a-1", "gpu-1b-1", job="split"),
                *resnet_pods("gone-node", "gpu-1a-1", job="lost"),
                _pod("stranger", "gpu-1a-2", job="x", role="sidecar"),  # no role: not a job's
            ]
        )
    )
    found = running_jobs(cfg.groups, pods, topology, None)
    assert found.jobs == {("pytorch", "research/resnet"): "us-east-1b"}
    assert found.groups == {"pytorch": "us-east-1b"}
    split, lost = sorted(found.warnings, key=lambda w: "lost" not in w)[::-1]
    assert "research/split" in split and "us-east-1a, us-east-1b (SPLIT_ZONES)" in split
    assert "research/lost" in lost and "not known" in lost
    assert ("research", "stranger") not in training_pods(cfg.groups, pods)


def test_the_running_domain_wins_over_the_file() -> None:
    last = LastPlacements(
        "placements.yaml",
        {"g": "a"},
        {("g", "ns/j"): "a", ("g", "ns/q"): "b"},
        frozenset({("g", "ns/j"), ("g", "ns/q")}),
        running={("g", "ns/j"): "c", ("g", "ns/q"): "b"},
        running_groups={"g": "c"},
    )
    assert last.kept_domain("g", "ns/j") == "c" and last.job_domain("g", "ns/j") == "a"
    assert not last.was_queued("g", "ns/j")  # queued in a, runs in c: runs
    assert last.was_queued("g", "ns/q")  # queued in b and runs there: the one of its slot
    assert last.group_domain("g") == "c"
    assert LastPlacements("p", {"g": "a"}).group_domain("g") == "a"


def test_snapshot_pods_keep_bound_live_training_pods_with_their_labels_cut() -> None:
    cfg = load_config(EXAMPLE / "topogen.yaml")

    def record(name: str, node: str, labels: dict[str, str], **kw: Any) -> PodRecord:
        meta = {"name": name, "namespace": "research", "labels": labels}
        return PodRecord({"metadata": meta, "spec": {}}, node, kw.pop("phase", "Running"), "", **kw)

    worker = {JOB: "resnet", REPLICA: "worker", "pod-template-hash": "x"}
    records = [
        record("resnet-worker-1", "gpu-1b-2", worker),
        record("resnet-worker-0", "gpu-1b-1", worker),
        record("resnet-worker-2", "", worker, phase="Pending"),  # not bound
        record("resnet-worker-3", "gpu-1b-1", worker, terminating=True),
        record("resnet-worker-4", "gpu-1b-1", worker, phase="Succeeded"),
        record("web", "cpu-1a-1", {"app": "web"}),  # no job's
    ]
    assert snapshot_pods(cfg.groups, records) == [
        _pod("resnet-worker-0", "gpu-1b-1"),
        _pod("resnet-worker-1", "gpu-1b-2"),
    ]
    assert snapshot_groups(cfg, None, None) == cfg.groups


def test_snapshot_cluster_needs_a_config() -> None:
    code, out = _cli("snapshot", "--cluster", "prod-east")
    assert code == 2 and "give -c too" in out


# -- end to end: the three-zone example ------------------------------------------------------


def test_render_keeps_resnet_where_it_runs(tmp_path: Path) -> None:
    """A fresh packing puts resnet in us-east-1a; it runs in us-east-1b: it stays there."""
    fresh = snapshot_repo(tmp_path / "fresh", None)
    assert _placed(fresh)["research/resnet"]["domain"] == "us-east-1a"

    root = snapshot_repo(tmp_path / "running", resnet_pods("cpu-1b-1", "gpu-1b-1", "gpu-1b-2"))
    resnet = _placed(root)["research/resnet"]
    assert (resnet["domain"], resnet["change"], resnet["runningDomain"]) == (
        "us-east-1b",
        "kept",
        "us-east-1b",
    )
    assert resnet["reason"].startswith("running in us-east-1b: kept there; packed:")
    code, out = _cli("diff", "-c", str(root / "topogen.yaml"))  # nothing rendered yet
    assert code == 0, out
    assert "research/resnet (6 GPUs) none -> us-east-1b: new (running in us-east-1b)" in out
    code, out = _cli("render", "-c", str(root / "topogen.yaml"))
    assert code == 0, out
    placements = yaml.safe_load((root / "policies/prod-east/placements.yaml").read_text())
    (group,) = placements["groups"]
    assert group["jobs"] == [{"job": "research/resnet", "domain": "us-east-1b", "gpus": 6}]
    mutate = (root / "policies/prod-east/kyverno/topogen-pytorch-mutate.yaml").read_text()
    assert """'{"research/resnet": dyn(["us-east-1b"])}'""" in mutate  # the job zone table
    # rendered again from its own placements: nothing moves
    again = _placed(root)["research/resnet"]
    assert (again["domain"], again["change"], again["previousDomain"]) == (
        "us-east-1b",
        "kept",
        "us-east-1b",
    )


def test_placements_and_running_pods_disagree_the_pods_win(tmp_path: Path) -> None:
    root = snapshot_repo(tmp_path, None)
    assert _cli("render", "-c", str(root / "topogen.yaml"))[0] == 0  # resnet -> us-east-1a
    snap = root / "cluster" / "snapshot.yaml"
    doc = json.loads(snap.read_text())
    doc["pods"] = resnet_pods("cpu-1b-1", "gpu-1b-1", "gpu-1b-2")
    snap.write_text(json.dumps(doc))
    resnet = _placed(root)["research/resnet"]
    assert (resnet["domain"], resnet["change"], resnet["previousDomain"]) == (
        "us-east-1b",
        "moved",
        "us-east-1a",
    )
    assert resnet["repin"].startswith("running in us-east-1b: its pods run there")
    code, out = _cli("diff", "-c", str(root / "topogen.yaml"))
    assert code == 0, out
    assert "research/resnet (6 GPUs) us-east-1a -> us-east-1b: moved (running in us-east-1b" in out
    # a bert-large added beside it is packed around it
    (root / "workloads" / "bert-large.yaml").write_text(pytorchjob("bert-large", 4, 2))
    placed = _placed(root)
    assert placed["research/resnet"]["domain"] == "us-east-1b"
    assert placed["research/bert-large"]["domain"] == "us-east-1a"


def test_a_split_job_keeps_nothing_and_is_named(tmp_path: Path) -> None:
    root = snapshot_repo(tmp_path, resnet_pods("cpu-1b-1", "gpu-1a-1", "gpu-1b-1"))
    resnet = _placed(root)["research/resnet"]
    assert (resnet["domain"], resnet["change"], resnet["runningDomain"]) == (
        "us-east-1a",
        "new",
        None,
    )
    code, out = _cli("analyze", "-c", str(root / "topogen.yaml"))
    assert code == 1  # HARD_BLOCK, as without the snapshot: the plan fixes it
    assert "job research/resnet of group pytorch runs split across us-east-1a, us-east-1b" in out
    assert "SPLIT_ZONES" in out


def test_a_pinned_group_stays_where_its_jobs_run(tmp_path: Path) -> None:
    root = snapshot_repo(
        tmp_path,
        [
            *resnet_pods("cpu-1b-1", "gpu-1b-1", "gpu-1b-2"),
            *resnet_pods("cpu-1a-1", "gpu-1a-1", job="small"),
        ],
    )
    config = root / "topogen.yaml"
    config.write_text(config.read_text() + "    placement: pin\n")
    (root / "workloads" / "small.yaml").write_text(pytorchjob("small", 1, 2))
    result = CliRunner().invoke(main, ["analyze", "-c", str(config), "-o", "json"])
    (plan,) = json.loads(result.stdout)["plans"]
    assert plan["domain"] == "us-east-1b"  # where most of its running pods run
    code, out = _cli("analyze", "-c", str(config))
    assert code == 1
    assert "job research/small of group pytorch runs in us-east-1a, but the group is pinned " \
        "to us-east-1b" in " ".join(out.split())  # fmt: skip


def test_a_running_job_the_render_does_not_know_is_named_where_it_would_split(
    tmp_path: Path,
) -> None:
    root = snapshot_repo(
        tmp_path,
        [
            *resnet_pods("cpu-1b-1", "gpu-1b-1", "gpu-1b-2"),
            *resnet_pods("cpu-1c-1", "gpu-1c-1", job="ghost"),  # not among the workloads
            *resnet_pods("cpu-1a-1", "gpu-1a-1", job="known-here"),
        ],
    )
    assert set(_placed(root)) == {"research/resnet"}
    _code, out = _cli("analyze", "-c", str(root / "topogen.yaml"))
    said = " ".join(out.split())
    assert (
        "job research/ghost of group pytorch runs in us-east-1c, but the render does not know "
        "it (not among the workloads): its pods created from now on go to us-east-1a" in said
    )
    assert "research/known-here" not in said  # runs where unknown jobs go: no split


def test_a_running_job_whose_domain_no_longer_allows_it_moves_and_the_split_is_said(
    tmp_path: Path,
) -> None:
    root = snapshot_repo(tmp_path, resnet_pods("cpu-1b-1", "gpu-1b-1", "gpu-1b-2"))
    (root / "cilium" / "quarantine.yaml").write_text(QUARANTINE)
    resnet = _placed(root)["research/resnet"]
    assert (resnet["domain"], resnet["change"], resnet["previousDomain"]) == (
        "us-east-1a",
        "moved",
        "us-east-1b",
    )
    assert resnet["repin"].startswith(
        "running in us-east-1b, but us-east-1b no longer allows its traffic"
    )
    assert resnet["repin"].endswith("while the others stay (a split)")
