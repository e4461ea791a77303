"""Helpers for the live tests: the example as API objects, the CLI, Kyverno, a fake Prometheus."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner, Result
from live_harness import ADMIN_TOKEN, ControlPlane

from topogen.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "zone-split"
TOPOGEN = REPO / ".venv" / "bin" / "topogen"
NS = "ml-demo"
# the fields topogen's admission policies touch
POLICY_FIELDS = (
    ("metadata", "labels"),
    ("metadata", "annotations"),
    ("spec", "tolerations"),
    ("spec", "affinity"),
    ("spec", "nodeSelector"),
)

GROUP_CONFIG: dict[str, Any] = {
    "name": "ml-training",
    "profile": "custom",
    "namespaces": [NS],
    "groupLabel": "app",
    "roleLabel": "role",
    "coordinatorRoles": ["coordinator"],
    "workerRoles": ["gpu-worker"],
    "identityLabel": "zone",
    "ports": [29500],
    "placement": "spread",  # the default, named: the problem's states hold under it
}


def docs(path: Path) -> list[dict[str, Any]]:
    files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    out: list[dict[str, Any]] = []
    for f in files:
        for d in yaml.safe_load_all(f.read_text()):
            if not d:
                continue
            out.extend(d["items"] if d.get("kind") == "List" else [d])
    return out


def example_nodes(pod_cidrs: bool = True) -> list[dict[str, Any]]:
    nodes = docs(EXAMPLE / "cluster" / "nodes.yaml")
    if pod_cidrs:
        for i, n in enumerate(nodes):
            n.setdefault("spec", {})["podCIDRs"] = [f"10.244.{i}.0/24"]
    return nodes


def example_policies() -> list[dict[str, Any]]:
    return docs(EXAMPLE / "cilium")


def example_snapshot(cp: ControlPlane, tmp: Path) -> Path:
    """examples/zone-split's nodes and policies in the API server; their live snapshot
    (`topogen snapshot` as the admin) in tmp/snapshot.yaml."""
    cp.ensure_namespace(NS)
    cp.create_nodes(example_nodes())
    cp.apply(example_policies())
    snap = tmp / "snapshot.yaml"
    result = cli("snapshot", "--kubeconfig", cp.kubeconfig("admin", ADMIN_TOKEN), "-o", snap)
    assert result.exit_code == 0, result.output
    return snap


def pods_of(
    workloads: Sequence[Mapping[str, Any]], *, count: int | None = None
) -> list[dict[str, Any]]:
    """Pods as the Deployment/Job controllers would create them (there are no controllers)."""
    pods = []
    for w in workloads:
        if w["kind"] not in ("Deployment", "Job"):
            continue
        spec = w["spec"]
        n = spec.get("replicas", 1) if w["kind"] == "Deployment" else spec.get("parallelism", 1)
        if count is not None and w["kind"] == "Job":
            n = count
        tmpl = copy.deepcopy(spec["template"])
        for i in range(n):
            pod_spec = copy.deepcopy(tmpl["spec"])
            if w["kind"] == "Deployment":
                pod_spec["restartPolicy"] = "Always"
            pods.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{w['metadata']['name']}-{i}",
                        "namespace": w["metadata"]["namespace"],
                        "labels": dict(tmpl["metadata"].get("labels", {})),
                    },
                    "spec": pod_spec,
                }
            )
    return pods


def write_config(
    tmp: Path,
    *,
    nodes: Sequence[str | Path],
    workloads: Sequence[str | Path] = (),
    policies: Sequence[str | Path] = (),
    name: str = "topogen.yaml",
) -> Path:
    """A topogen.yaml in tmp; inputs from elsewhere are copied beside it (topogen reads
    only inside the config's folder)."""

    def inside(path: str | Path) -> str:
        src = Path(path)
        if src.resolve().is_relative_to(tmp.resolve()):
            return str(src)
        dest = tmp / "inputs" / src.name
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dest)
            else:
                shutil.copyfile(src, dest)
        return str(dest)

    cfg = {
        "apiVersion": "topogen.io/v1alpha1",
        "kind": "TopogenConfig",
        "clusters": [
            {
                "name": "lab",
                "nodes": [inside(n) for n in nodes],
                "networkPolicies": [inside(p) for p in policies],
                "zoneLabel": "topology.kubernetes.io/zone",
            }
        ],
        "workloads": [inside(w) for w in workloads],
        "groups": [GROUP_CONFIG],
    }
    path = tmp / name
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def cli(*args: Any) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def run_topogen(*args: Any, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The installed `topogen` as a subprocess (time bounds are measured on this)."""
    return subprocess.run(
        [str(TOPOGEN), *map(str, args)], capture_output=True, text=True, timeout=timeout
    )


def kyverno_apply(
    kyverno: Path, policies: Sequence[Path], pods: Sequence[Mapping[str, Any]], tmp: Path
) -> list[dict[str, Any]]:
    """The pods as the Kyverno CLI mutates them (`apply -o DIR/`: last document per pod)."""
    res = tmp / "admission-pods.yaml"
    res.write_text(yaml.safe_dump_all(list(pods), sort_keys=True))
    out = tmp / "mutated"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    result = subprocess.run(
        [
            str(kyverno),
            "apply",
            *map(str, policies),
            "-r",
            str(res),
            "-o",
            f"{out}/",
            "--remove-color",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    mutated = []
    for pod in pods:
        path = out / f"{pod['metadata']['name']}-mutated.yaml"
        got = [d for d in yaml.safe_load_all(path.read_text()) if d]
        mutated.append(got[-1])  # -o DIR appends one document per policy
    return mutated


@contextmanager
def fake_prometheus(
    samples: Sequence[tuple[Mapping[str, str], float]],
    status: int = 200,
    body: Mapping[str, Any] | None = None,
) -> Iterator[str]:
    """A Prometheus answering every query with these samples (or `body`); yields its URL."""
    queries: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            queries.append(self.path)
            answer = body or {
                "status": "success",
                "data": {
                    "resultType": "vector",
                    "result": [
                        {"metric": dict(m), "value": [1700000000.0, str(v)]} for m, v in samples
                    ],
                },
            }
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps(answer).encode())

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def create_pod_raw(
    cp: ControlPlane, pod: Mapping[str, Any], *, dry_run: bool = True
) -> tuple[int, dict[str, Any], list[str]]:
    """POST the pod (dryRun=All by default: admission runs in full, nothing is stored):
    (HTTP status, body, warnings)."""
    kube = cp.kube()
    ns = pod["metadata"]["namespace"]
    query = "?dryRun=All" if dry_run else ""
    req = urllib.request.Request(
        f"{kube.server}/api/v1/namespaces/{ns}/pods{query}",
        data=json.dumps(pod).encode(),
        method="POST",
        headers={
            "Authorization": f"Bearer {kube.token}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(req, context=kube.ctx, timeout=60) as resp:
            status, raw, headers = resp.status, resp.read(), resp.headers
    except urllib.error.HTTPError as exc:
        status, raw, headers = exc.code, exc.read(), exc.headers
    warnings = [_unquote(w) for w in headers.get_all("Warning") or []]
    return status, json.loads(raw), warnings


def _unquote(header: str) -> str:
    m = re.match(r'^\d{3} \S+ "(.*)"$', header)
    return m[1].replace('\\"', '"').replace("\\\\", "\\") if m else header


def project(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The fields topogen's policies touch, as the API server stores them: a typed Pod
    drops empty strings (a toleration's `effect: ""` means every effect either way)."""
    out = {f"{a}.{b}": (pod.get(a) or {}).get(b) or None for a, b in POLICY_FIELDS}
    if out["spec.tolerations"]:
        out["spec.tolerations"] = [
            {k: v for k, v in t.items() if v != ""} for t in out["spec.tolerations"]
        ]
    return out
