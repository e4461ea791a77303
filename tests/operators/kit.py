"""The operator cases of tests/operators/cases as data, and what topogen makes of them."""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from topogen.config import load_config
from topogen.model import PodTemplate, Workload
from topogen.sources.loader import load_workload_inputs

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
CLUSTER = HERE / "cluster"
NAMESPACE = "ml"
ZONE = "topology.kubernetes.io/zone"
# Labels whose values the controllers draw at random or from UIDs: topogen cannot know
# them and must not invent them.
UNKNOWABLE = frozenset(
    {
        "controller-uid",
        "batch.kubernetes.io/controller-uid",
        "jobset.sigs.k8s.io/jobset-uid",
        "controller-revision-hash",
        "leaderworkerset.sigs.k8s.io/template-revision-hash",
    }
)
NAMES = sorted(p.name for p in CASES.iterdir() if (p / "case.yaml").exists())
# Pods the real kube-scheduler places (Volcano's pods name the Volcano scheduler).
SCHEDULED_BY_KUBE = [n for n in NAMES if n != "volcano"]


@dataclass(frozen=True)
class Case:
    name: str
    meta: dict[str, Any]
    pods: list[dict[str, Any]]

    @property
    def folder(self) -> Path:
        return CASES / self.name

    @property
    def profile(self) -> str:
        return str(self.meta["profile"])

    def role(self, pod: str) -> str:
        return str(self.meta["pods"][pod]["role"])

    def job(self, pod: str) -> str:
        return str(self.meta["pods"][pod]["job"])

    def members(self) -> list[str]:
        """Pods of the co-located group (initializers and other non-members left out)."""
        return [p for p in self.meta["pods"] if self.role(p) != "none"]


def load_case(name: str) -> Case:
    folder = CASES / name
    meta = yaml.safe_load((folder / "case.yaml").read_text())
    pods = yaml.safe_load((folder / "pods.yaml").read_text())["items"]
    return Case(name, meta, pods)


def group_config(profile: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": "training",
        "profile": profile,
        "namespaces": [NAMESPACE],
        "identityLabel": "zone",
        **extra,
    }


def _inside(tmp: Path, path: Path) -> str:
    """The input beside the config (topogen reads only inside the config's folder): a file
    from elsewhere is copied to inputs/<its folder>/<its name>."""
    if path.resolve().is_relative_to(tmp.resolve()):
        return str(path)
    dest = tmp / "inputs" / path.parent.name / path.name
    if not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    return str(dest)


def write_config(
    tmp: Path,
    profile: str,
    workloads: list[Path],
    *,
    name: str = "topogen.yaml",
    **group: Any,
) -> Path:
    cfg = {
        "apiVersion": "topogen.io/v1alpha1",
        "kind": "TopogenConfig",
        "clusters": [
            {
                "name": "lab",
                "nodes": [_inside(tmp, CLUSTER / "nodes.yaml")],
                "networkPolicies": [_inside(tmp, CLUSTER / "zone-isolation.yaml")],
                "zoneLabel": ZONE,
            }
        ],
        "workloads": [_inside(tmp, w) for w in workloads],
        "groups": [group_config(profile, **group)],
    }
    path = tmp / name
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def workloads_of(config: Path) -> list[Workload]:
    return list(load_workload_inputs(load_config(config)).workloads)


def expand(w: Workload) -> list[PodTemplate]:
    """One template per pod of the workload: its indexed labels count up per pod."""
    out = []
    for k in range(w.replicas):
        labels = dict(w.template.labels)
        for key in w.indexed:
            head, number = re.fullmatch(r"(.*?)(\d+)", labels[key]).groups()  # type: ignore[union-attr]
            labels[key] = f"{head}{int(number) + k}"
        out.append(replace(w.template, labels=labels))
    return out


def comparable(t: PodTemplate) -> tuple[Any, ...]:
    """A pod template as the analysis sees it, without the labels no one can know."""
    labels = tuple(sorted((k, v) for k, v in t.labels.items() if k not in UNKNOWABLE))
    return (
        labels,
        tuple(sorted(t.node_selector.items())),
        t.node_affinity,
        tuple(sorted(t.tolerations, key=repr)),
        tuple(sorted(t.pod_affinity, key=repr)),
        tuple(sorted(t.requests.items())),
        t.host_network,
        t.ports,
    )


def mutated_pods_config(tmp: Path, profile: str, pods: list[dict[str, Any]], **group: Any) -> Path:
    """A config analysing these pods (as a List in one file) instead of the manifest."""
    path = tmp / "mutated-pods.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": pods}))
    return write_config(tmp, profile, [path], name="topogen-after.yaml", **group)


def fresh(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return copy.deepcopy(pods)


def render(config: Path, out: Path) -> Path:
    """`topogen render` (in process): the cluster's Kyverno policies folder."""
    from click.testing import CliRunner

    from topogen.cli import main

    result = CliRunner().invoke(main, ["render", "-c", str(config), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out / "policies" / "lab" / "kyverno"


def kyverno(args: list[Any]) -> subprocess.CompletedProcess[str]:
    from tooling import require_tool

    cli = require_tool("kyverno")
    return subprocess.run(
        [str(cli), *map(str, args), "--remove-color"], capture_output=True, text=True, timeout=300
    )


def kyverno_apply(
    policies: list[Path], pods: list[dict[str, Any]], tmp: Path
) -> list[dict[str, Any]]:
    """The pods as the real Kyverno CLI mutates them (last document per pod of -o DIR/)."""
    res = tmp / "admission-pods.yaml"
    res.write_text(yaml.safe_dump_all(pods, sort_keys=True))
    out = tmp / "mutated"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    result = kyverno(["apply", *policies, "-r", res, "-o", f"{out}/"])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    mutated = []
    for pod in pods:
        got = [
            d
            for d in yaml.safe_load_all(
                (out / f"{pod['metadata']['name']}-mutated.yaml").read_text()
            )
            if d
        ]
        mutated.append(got[-1])
    return mutated


def mutated_case_pods(case: Case, tmp: Path) -> tuple[list[dict[str, Any]], Path]:
    """render the case's manifest, then the real Kyverno CLI's mutation of its real pods."""
    config = write_config(tmp, case.profile, [case.folder / "manifest.yaml"])
    policies = render(config, tmp / "out")
    mutating = [
        *sorted(policies.glob("topogen-*-mutate.yaml")),
        *sorted(policies.glob("topogen-*-detached.yaml")),  # KubeRay's submitter
    ]
    assert mutating, sorted(p.name for p in policies.iterdir())
    return kyverno_apply(mutating, fresh(case.pods), tmp), policies
