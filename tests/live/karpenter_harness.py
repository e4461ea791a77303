"""Karpenter's controller with its KWOK cloud provider (the kwok/ program of
sigs.k8s.io/karpenter) and the KWOK controller (sigs.k8s.io/kwok cmd/kwok), out of cluster
against the harness's control plane.

What an install puts in a cluster comes from the pinned modules themselves (found in the Go
module cache with `go list -m` in tools/karpenter-kwok and tools/kwok):

- Karpenter: the CRDs its KWOK chart applies (kwok/charts/crds: NodePool, NodeClaim,
  NodeOverlay, CapacityBuffer, with the label-domain rules hack/kwok/requirements.sh adds)
  and the KWOKNodeClass CRD (kwok/apis/crds). The chart's Deployment sets the binary's own
  defaults (log level, batch windows, feature gates), so only what differs out of cluster
  is set: KUBECONFIG (admin: the chart's RBAC is not reproduced), leader election off (one
  process; the chart elects in its namespace), its own metrics and health ports, and
  INSTANCE_TYPES_FILE_PATH (the instance types, their resources and zone offerings).
  Ready: /readyz answers 200 (its caches synced, the NodePool and NodeClaim kinds served).
- KWOK: as Karpenter's hack/install-kwok.sh installs release v0.8.0: KWOK's CRDs
  (kustomize/crd), its configuration kustomize/kwok/kwok.yaml with the script's one
  partition (manageNodesWithLabelSelector kwok-partition=a, beside the annotation selector
  kwok.x-k8s.io/node=fake: Karpenter's KWOK provider sets both on its nodes), the Stages of
  kustomize/stage/fast (the release's stage-fast.yaml), then Karpenter's own
  hack/kwok/stages (a Stage of the same name replaces KWOK's). Out of cluster:
  --kubeconfig, --node-ip 127.0.0.1 (the Deployment passes its pod IP) and its own server
  port. Ready: a canary Node it manages turns Ready (then it is removed).

Nodes and NodeClaims carry Karpenter's finalizers and no garbage collector runs here, so
`Karpenter.clear` deletes the NodeClaims (Karpenter drains and deletes their Nodes, as
when a NodePool's deletion cascades in a cluster) and waits until Karpenter has.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from live_harness import (
    ADMIN_TOKEN,
    ControlPlane,
    KubeError,
    Process,
    collection_path,
    free_port,
    wait_until,
)
from webhook_harness import CONTROLLER_TIMEOUT, Controller, install_crds

from tooling import module_dir

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
NODEPOOLS = "/apis/karpenter.sh/v1/nodepools"
NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims"
NODECLASSES = "/apis/karpenter.kwok.sh/v1alpha1/kwoknodeclasses"
STAGES = "/apis/kwok.x-k8s.io/v1alpha1/stages"
NODECLASS = "default"
NODECLASS_REF = {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": NODECLASS}
# what Karpenter's KWOK provider puts on its nodes (kwok/apis/v1alpha1/labels.go,
# kwok/cloudprovider/const.go: one partition, "a")
KWOK_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}
KWOK_PARTITION = {"kwok-partition": "a"}
NODEPOOL_LABEL = "karpenter.sh/nodepool"
ZONE = "topology.kubernetes.io/zone"


def yaml_docs(paths: Sequence[Path]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in paths:
        out.extend(d for d in yaml.load_all(path.read_text(encoding="utf-8"), Loader=LOADER) if d)
    return out


def kustomization_files(folder: Path) -> list[Path]:
    """The files a kustomization's `resources` name, folders followed (what `kubectl
    kustomize` would emit, for kustomizations that only list resources)."""
    (kustomization,) = yaml_docs([folder / "kustomization.yaml"])
    files: list[Path] = []
    for entry in kustomization["resources"]:
        path = (folder / entry).resolve()
        files.extend(kustomization_files(path) if path.is_dir() else [path])
    return files


def conditions(obj: Mapping[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or []}


def _get(cp: ControlPlane, path: str) -> dict[str, Any] | None:
    try:
        got: dict[str, Any] = cp.kube().get(path)
    except KubeError as exc:
        if exc.status == 404:
            return None
        raise
    return got


def _served(cp: ControlPlane, collections: Sequence[str]) -> None:
    """Until the API server serves these collections (a CRD reports Established a moment
    before its REST path answers)."""

    def served() -> bool:
        for path in collections:
            cp.kube().get(path)
        return True

    wait_until(f"{', '.join(collections)} served", served, CONTROLLER_TIMEOUT, cp.apiserver)


def _create_or_replace(cp: ControlPlane, obj: Mapping[str, Any]) -> None:
    """kubectl apply's outcome for a whole object: created, or the stored one replaced."""
    kube = cp.kube()
    path = collection_path(obj)
    try:
        kube.create(path, obj)
    except KubeError as exc:
        if exc.status != 409:
            raise
        name = obj["metadata"]["name"]
        stored = kube.get(f"{path}/{name}")
        body = {**obj, "metadata": {**obj["metadata"], **_version(stored)}}
        kube.request("PUT", f"{path}/{name}", body)


def _version(obj: Mapping[str, Any]) -> dict[str, str]:
    return {"resourceVersion": obj["metadata"]["resourceVersion"]}


@dataclass
class Kwok(Controller):
    """The KWOK controller: it makes the Nodes Karpenter creates Ready, and the pods bound
    to them Running."""

    cp: ControlPlane
    binary: Path
    work: Path
    module: Path  # sigs.k8s.io/kwok
    karpenter_module: Path  # for its hack/kwok/stages
    proc: Process | None = None
    installed: bool = False

    def install(self) -> None:
        install_crds(self.cp, yaml_docs(sorted((self.module / "kustomize/crd/bases").glob("*"))))
        _served(self.cp, [STAGES])
        release_stages = kustomization_files(self.module / "kustomize/stage/fast")
        karpenter_stages = sorted((self.karpenter_module / "hack/kwok/stages").glob("*.yaml"))
        for obj in yaml_docs([*release_stages, *karpenter_stages]):
            _create_or_replace(self.cp, obj)
        self.installed = True

    def config(self) -> Path:
        """kustomize/kwok/kwok.yaml as install-kwok.sh patches it for partition "a"."""
        (cfg,) = yaml_docs([self.module / "kustomize/kwok/kwok.yaml"])
        assert cfg["options"]["manageNodesWithLabelSelector"] == "", cfg["options"]
        cfg["options"]["manageNodesWithLabelSelector"] = "kwok-partition=a"
        path = self.work / "kwok.yaml"
        path.write_text(yaml.safe_dump(cfg, sort_keys=True))
        return path

    def argv(self) -> list[str]:
        port = free_port()
        return [
            str(self.binary),
            f"--config={self.config()}",
            f"--kubeconfig={self.cp.kubeconfig('kwok', ADMIN_TOKEN)}",
            "--node-ip=127.0.0.1",
            f"--node-port={port}",
            f"--server-address=127.0.0.1:{port}",
        ]

    def start(self) -> None:
        if not self.installed:
            self.install()
        # HOME: KWOK also loads ~/.kwok/kwok.yaml when it exists
        self.proc = Process(
            "kwok", self.argv(), self.work / "kwok.log", env={"HOME": str(self.work)}
        )
        self.proc.start()
        self._canary()

    def _canary(self) -> None:
        """Ready once a Node it manages turns Ready: a canary marked as Karpenter's KWOK
        provider marks its nodes, removed again before Karpenter starts."""
        name = "kwok-readiness-canary"
        path = f"/api/v1/nodes/{name}"
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "annotations": KWOK_ANNOTATION, "labels": KWOK_PARTITION},
        }
        kube = self.cp.kube()
        kube.create("/api/v1/nodes", node, exist_ok=True)
        wait_until(
            "kwok: its canary node Ready",
            lambda: conditions(kube.get(path)).get("Ready") == "True",
            CONTROLLER_TIMEOUT,
            self.proc,
            interval=0.2,
        )
        kube.delete(path)
        wait_until(
            "kwok: its canary node removed",
            lambda: _get(self.cp, path) is None,
            CONTROLLER_TIMEOUT,
            self.proc,
            interval=0.2,
        )


@dataclass
class Karpenter(Controller):
    """Karpenter's controller with its KWOK cloud provider; `start()` installs its CRDs and
    the KWOKNodeClass `default` first."""

    cp: ControlPlane
    binary: Path
    work: Path
    module: Path  # sigs.k8s.io/karpenter
    instance_types: Path
    proc: Process | None = None
    health_port: int = 0
    installed: bool = False

    def install(self) -> None:
        kwok = self.module / "kwok"
        crds = sorted((kwok / "charts/crds").glob("*.yaml")) + sorted(
            (kwok / "apis/crds").glob("*.yaml")
        )
        install_crds(self.cp, yaml_docs(crds))
        _served(self.cp, [NODEPOOLS, NODECLAIMS, NODECLASSES])
        nodeclass = {
            "apiVersion": "karpenter.kwok.sh/v1alpha1",
            "kind": "KWOKNodeClass",
            "metadata": {"name": NODECLASS},
        }
        self.cp.kube().create(NODECLASSES, nodeclass, exist_ok=True)
        self.installed = True

    def env(self) -> dict[str, str]:
        self.health_port = free_port()
        return {
            "KUBECONFIG": str(self.cp.kubeconfig("karpenter", ADMIN_TOKEN)),
            "DISABLE_LEADER_ELECTION": "true",
            "METRICS_PORT": str(free_port()),
            "HEALTH_PROBE_PORT": str(self.health_port),
            "INSTANCE_TYPES_FILE_PATH": str(self.instance_types),
            "LOG_LEVEL": "debug",
        }

    def start(self) -> None:
        if not self.installed:
            self.install()
        self.proc = Process(
            "karpenter", [str(self.binary)], self.work / "karpenter.log", env=self.env()
        )
        self.proc.start()
        wait_until(
            "karpenter /readyz",
            lambda: (
                urllib.request.urlopen(
                    f"http://127.0.0.1:{self.health_port}/readyz", timeout=2
                ).status
                == 200
            ),
            CONTROLLER_TIMEOUT,
            self.proc,
            interval=0.25,
        )

    # -- NodePools and what Karpenter made of them --

    def apply_nodepools(self, pools: Sequence[Mapping[str, Any]]) -> None:
        """Create the NodePools; until Karpenter reports each Ready (its NodeClass found
        Ready, its spec validated)."""
        kube = self.cp.kube()
        for pool in pools:
            kube.create(NODEPOOLS, pool)

        def ready() -> bool:
            return all(
                conditions(kube.get(f"{NODEPOOLS}/{p['metadata']['name']}")).get("Ready") == "True"
                for p in pools
            )

        wait_until("the NodePools Ready", ready, CONTROLLER_TIMEOUT, self.proc, interval=0.2)

    def nodepool(self, name: str) -> dict[str, Any]:
        got: dict[str, Any] = self.cp.kube().get(f"{NODEPOOLS}/{name}")
        return got

    def nodeclaims(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.cp.kube().get(NODECLAIMS)["items"]
        return items

    def nodes(self) -> list[dict[str, Any]]:
        """The Nodes of Karpenter's NodeClaims."""
        items: list[dict[str, Any]] = self.cp.kube().get(
            "/api/v1/nodes", labelSelector=NODEPOOL_LABEL
        )["items"]
        return items

    def events(self, namespace: str, pod: str) -> list[dict[str, Any]]:
        """Karpenter's events on a pod."""
        got = self.cp.kube().get(
            f"/api/v1/namespaces/{namespace}/events",
            fieldSelector=f"involvedObject.kind=Pod,involvedObject.name={pod}",
        )
        return [e for e in got["items"] if (e.get("source") or {}).get("component") == "karpenter"]

    def clear(self) -> None:
        """Delete every NodePool and NodeClaim; until Karpenter has deleted the NodeClaims
        and their Nodes (delete the pods first: Karpenter drains before it deletes)."""
        kube = self.cp.kube()
        kube.delete(NODEPOOLS)
        kube.delete(NODECLAIMS)
        wait_until(
            "Karpenter's NodeClaims and Nodes deleted",
            lambda: not self.nodeclaims() and not self.nodes(),
            CONTROLLER_TIMEOUT,
            self.proc,
            interval=0.2,
        )


@dataclass
class KarpenterPlane:
    """Karpenter and KWOK on one control plane."""

    cp: ControlPlane
    kwok: Kwok
    karpenter: Karpenter

    def stop(self) -> None:
        self.karpenter.stop()
        self.kwok.stop()


def start_karpenter(
    cp: ControlPlane, karpenter_bin: Path, kwok_bin: Path, work: Path, instance_types: Path
) -> KarpenterPlane:
    """KWOK, then Karpenter with these instance types, against `cp`."""
    karpenter_module = module_dir("karpenter-kwok", "sigs.k8s.io/karpenter")
    kwok_module = module_dir("kwok", "sigs.k8s.io/kwok")
    work.mkdir(parents=True, exist_ok=True)
    kwok = Kwok(cp, kwok_bin, work, kwok_module, karpenter_module)
    karpenter = Karpenter(cp, karpenter_bin, work, karpenter_module, instance_types)
    plane = KarpenterPlane(cp, kwok, karpenter)
    try:
        kwok.start()
        karpenter.start()
    except BaseException:
        plane.stop()
        raise
    return plane
