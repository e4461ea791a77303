"""The reviewer's pull requests on a GitOps repository made from examples/pytorch-three-zone
(issue 33): each is a branch off main, rendered and committed as its author would, compared
with `topogen diff --against main`, then merged; the refusal is not merged."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from diff.test_git import commit, git
from topogen.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pytorch-three-zone"


def pytorchjob(name: str, workers: int, gpus: int) -> str:
    return f"""apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {name}
  namespace: research
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: registry.example/{name}:1.0
              resources:
                requests: {{cpu: "4", memory: 16Gi}}
    Worker:
      replicas: {workers}
      restartPolicy: OnFailure
      template:
        spec:
          tolerations:
            - {{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}
          containers:
            - name: pytorch
              image: registry.example/{name}:1.0
              resources:
                requests: {{cpu: "8", memory: 64Gi, nvidia.com/gpu: "{gpus}"}}
                limits: {{nvidia.com/gpu: "{gpus}"}}
"""


QUARANTINE = """apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata:
  name: quarantine-us-east-1b
spec:
  description: us-east-1b training pods accept no traffic from training pods
  endpointSelector:
    matchLabels:
      k8s:topology.kubernetes.io/zone: us-east-1b
    matchExpressions:
      - {key: k8s:training.kubeflow.org/job-name, operator: Exists}
  ingressDeny:
    - fromEndpoints:
        - matchExpressions:
            - {key: k8s:training.kubeflow.org/job-name, operator: Exists}
"""


def _append_config(line: str) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        path = root / "topogen.yaml"
        path.write_text(path.read_text(encoding="utf-8") + line, encoding="utf-8")

    return edit


def _write(rel: str, text: str) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        (root / rel).write_text(text, encoding="utf-8")

    return edit


# in order: each merged into main before the next (the refusal is not)
PULL_REQUESTS: list[tuple[str, Callable[[Path], None], bool]] = [
    ("bert-large", _write("workloads/bert-large.yaml", pytorchjob("bert-large", 4, 2)), True),
    ("ccnp-ingress-deny", _write("cilium/quarantine-us-east-1b.yaml", QUARANTINE), True),
    ("enforce", _append_config("validationAction: Enforce\n"), True),
    ("refused", _write("workloads/gpt-huge.yaml", pytorchjob("gpt-huge", 5, 2)), False),
    ("gatekeeper", _append_config("engines: [gatekeeper]\n"), True),
]


def run(root: Path, *args: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    monkeypatch.chdir(root)
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def build(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, dict[str, str]]:
    """Per pull request: the comment (markdown), the JSON report and render's exit code."""
    root = tmp / "gitops"
    shutil.copytree(EXAMPLE, root)
    git(root, "init", "-q")
    run(root, "render", "-c", "topogen.yaml", monkeypatch=monkeypatch)
    commit(root, "the example, rendered")
    out: dict[str, dict[str, str]] = {}
    for name, edit, merged in PULL_REQUESTS:
        git(root, "checkout", "-q", "-b", name)
        edit(root)
        rc, _ = run(root, "render", "-c", "topogen.yaml", monkeypatch=monkeypatch)
        commit(root, name)
        md = run(root, "diff", "-c", "topogen.yaml", "--against", "main", "-o", "markdown",
                 monkeypatch=monkeypatch)  # fmt: skip
        js = run(root, "diff", "-c", "topogen.yaml", "--against", "main", "-o", "json",
                 monkeypatch=monkeypatch)  # fmt: skip
        check = run(root, "diff", "-c", "topogen.yaml", "--check", monkeypatch=monkeypatch)
        out[name] = {
            "markdown": md[1],
            "json": js[1],
            "render": str(rc),
            "check": str(check[0]),
            "diff": str(md[0]),
        }
        git(root, "checkout", "-q", "main")
        if merged:
            git(root, "merge", "-q", "--ff-only", name)
    return out
