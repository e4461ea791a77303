"""Kueue's controller manager (sigs.k8s.io/kueue v0.17.0, cmd/kueue: upstream's `manager`)
out of cluster, in front of the harness's kube-apiserver, with Topology Aware Scheduling.

Everything comes from the Go modules tools/kueue/go.mod pins, read from the module cache
(`go list -m -json`, tests/tooling.py): Kueue's CRDs (config/components/crd/bases, without
the conversion-webhook patches: v1beta2 is the stored version and the only one used here),
its webhook configurations (config/components/webhook: manifests.yaml with the
kustomization's namespaceSelector patches and the release's `kueue-` name prefix), its
manager configuration (config/components/manager/controller_manager_config.yaml) and the
Deployment's arguments; the PyTorchJob CRD of the training-operator module and the JobSet
CRD of the jobset module, at the versions Kueue's go.mod requires.

What differs from a cluster, and why:
- Leader election off; internal certificate management off (it makes a certificate for the
  Service name kueue-webhook-service.kueue-system.svc, which does not exist here): the
  webhook configurations call https://127.0.0.1:PORT<path> and a certificate for that
  address, made by `openssl` as for Gatekeeper, is in webhook.certDir.
- With internal certificate management off, v0.17.0's main() reads a metrics certificate
  from the fixed path /etc/kueue/metrics/certs (cmd/kueue/main.go, the volume its Helm
  chart mounts) and exits without one, even with metrics off. The process therefore runs
  in a private mount namespace (`unshare`, with a user namespace when not root) where /etc
  is an overlay whose kueue/metrics/certs is the webhook's folder; the host's /etc is not
  touched.
- Metrics off (bindAddress "0"), VisibilityOnDemand off (it serves on :8082); TAS on;
  integrations: kubeflow.org/pytorchjob and jobset.x-k8s.io/jobset only (the others get
  Kueue's no-op webhooks, as in a cluster).
Ready means: /readyz (the webhook server started) and Kueue's PyTorchJob webhook answering
through the API server (a dry-run PyTorchJob with a queue name comes back suspended).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from live_harness import ADMIN_TOKEN, ControlPlane, KubeError, Process, free_port
from webhook_harness import (
    WEBHOOK_CONFIGS,
    Controller,
    by_url,
    install_crds,
    loopback_certificates,
    manifest_docs,
    register_webhooks,
    started,
    wait_admitted,
)

from tooling import module_dir

NAMESPACE = "kueue-system"
TOOL_FOLDER = "kueue"  # tools/kueue: the go.mod whose pins name every module below
KUEUE_MODULE = "sigs.k8s.io/kueue"
TRAINING_OPERATOR_MODULE = "github.com/kubeflow/training-operator"
JOBSET_MODULE = "sigs.k8s.io/jobset"
FRAMEWORKS = ("kubeflow.org/pytorchjob", "jobset.x-k8s.io/jobset")
FEATURE_GATES = "TopologyAwareScheduling=true,VisibilityOnDemand=false"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
NAME_PREFIX = "kueue-"  # config/default/kustomization.yaml's namePrefix
METRICS_CERT_DIR = "/etc/kueue/metrics/certs"  # fixed in cmd/kueue/main.go


def _yaml(path: Path) -> Any:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(path.read_text(encoding="utf-8"), Loader=loader)


@dataclass(frozen=True)
class KueueRelease:
    """The manifests of the pinned modules (their folders in the module cache)."""

    kueue: Path
    training_operator: Path
    jobset: Path

    @classmethod
    def pinned(cls) -> KueueRelease:
        return cls(
            module_dir(TOOL_FOLDER, KUEUE_MODULE),
            module_dir(TOOL_FOLDER, TRAINING_OPERATOR_MODULE),
            module_dir(TOOL_FOLDER, JOBSET_MODULE),
        )

    def crds(self) -> list[dict[str, Any]]:
        bases = sorted((self.kueue / "config/components/crd/bases").glob("*.yaml"))
        return [
            *(_yaml(p) for p in bases),
            _yaml(self.training_operator / "manifests/base/crds/kubeflow.org_pytorchjobs.yaml"),
            _yaml(self.jobset / "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"),
        ]

    def webhook_configurations(self) -> list[dict[str, Any]]:
        """manifests.yaml with the kustomization's namespaceSelector patches, named as
        released."""
        folder = self.kueue / "config/components/webhook"
        docs = manifest_docs(folder / "manifests.yaml", WEBHOOK_CONFIGS)
        selectors: dict[tuple[str, str], Any] = {}
        for patch in _yaml(folder / "kustomization.yaml").get("patches") or []:
            body = yaml.safe_load(patch["patch"])
            for hook in body["webhooks"]:
                selectors[(body["kind"], hook["name"])] = hook["namespaceSelector"]
        for doc in docs:
            doc["metadata"]["name"] = NAME_PREFIX + doc["metadata"]["name"]
            for hook in doc["webhooks"]:
                if (doc["kind"], hook["name"]) in selectors:
                    hook["namespaceSelector"] = selectors[(doc["kind"], hook["name"])]
        return docs

    def manager_configuration(self) -> dict[str, Any]:
        path = self.kueue / "config/components/manager/controller_manager_config.yaml"
        config: dict[str, Any] = _yaml(path)
        return config

    def manager_args(self) -> list[str]:
        """The manager Deployment's container arguments."""
        path = self.kueue / "config/components/manager/manager.yaml"
        (deployment,) = manifest_docs(path, ("Deployment",))
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        return list(container.get("args") or [])


def _in_private_etc(argv: list[str], certs: Path, scratch: Path) -> list[str]:
    """argv run where /etc is an overlay holding kueue/metrics/certs -> `certs` (see the
    module docstring); needs util-linux `unshare` and overlayfs."""
    upper, work = scratch / "etc-upper", scratch / "etc-work"
    upper.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    namespaces = ["--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        namespaces = ["--user", "--map-root-user", *namespaces]
    script = (
        'set -e; mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1,workdir=$2" /etc; '
        'mkdir -p "$(dirname "$3")"; ln -sfn "$4" "$3"; shift 4; exec "$@"'
    )
    args = [str(upper), str(work), METRICS_CERT_DIR, str(certs)]
    return ["unshare", *namespaces, "sh", "-c", script, "kueue-etc", *args, *argv]


@dataclass
class Kueue(Controller):
    cp: ControlPlane
    binary: Path
    work: Path
    release: KueueRelease
    port: int = 0
    health: int = 0
    proc: Process | None = None
    configs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def certs(self) -> Path:
        return self.work / "certs"

    def install(self) -> None:
        kube = self.cp.kube()
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        kube.create("/api/v1/namespaces", namespace, exist_ok=True)
        install_crds(self.cp, self.release.crds())
        self.port = self.port or free_port()
        ca = loopback_certificates(self.certs, "kueue-test-ca")
        self.configs = [by_url(c, self.port, ca) for c in self.release.webhook_configurations()]
        register_webhooks(self.cp, self.configs)

    def configuration(self) -> dict[str, Any]:
        """The release's manager configuration with what out of cluster needs."""
        config = self.release.manager_configuration()
        config.update(
            {
                "namespace": NAMESPACE,
                "health": {"healthProbeBindAddress": f"127.0.0.1:{self.health}"},
                "metrics": {"bindAddress": "0"},
                "webhook": {"host": "127.0.0.1", "port": self.port, "certDir": str(self.certs)},
                "leaderElection": {"leaderElect": False},
                "internalCertManagement": {"enable": False},
                "integrations": {"frameworks": list(FRAMEWORKS)},
            }
        )
        return config

    def argv(self) -> list[str]:
        path = self.work / "kueue-config.yaml"
        path.write_text(yaml.safe_dump(self.configuration(), sort_keys=True))
        kueue = [
            str(self.binary),
            *self.release.manager_args(),
            f"--config={path}",
            f"--feature-gates={FEATURE_GATES}",
        ]
        return _in_private_etc(kueue, self.certs, self.work)

    def start(self) -> None:
        if not self.configs:
            self.install()
        self.health = self.health or free_port()
        env = {"KUBECONFIG": str(self.cp.kubeconfig("kueue", ADMIN_TOKEN))}
        self.proc = Process("kueue", self.argv(), self.work / "kueue.log", env=env)
        self.proc.start()
        self.wait_ready("kueue", f"http://127.0.0.1:{self.health}/readyz")
        wait_admitted("Kueue's PyTorchJob webhook", self._suspends_a_queued_job)

    def _suspends_a_queued_job(self) -> bool:
        """Through the API server: a queued PyTorchJob comes back suspended (dry run)."""
        if not self.alive():
            raise RuntimeError(f"kueue exited:\n{self.proc.tail() if self.proc else ''}")
        probe = {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "kueue-ready-probe", "labels": {QUEUE_LABEL: "probe"}},
            "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 1, "template": _probe_pod()}}},
        }
        try:
            got = self.cp.kube().request(
                "POST",
                "/apis/kubeflow.org/v1/namespaces/default/pytorchjobs",
                probe,
                query={"dryRun": "All"},
            )
        except (KubeError, OSError):  # webhook not yet called, or not yet answering
            return False
        return bool(((got.get("spec") or {}).get("runPolicy") or {}).get("suspend"))


def _probe_pod() -> Mapping[str, Any]:
    return {"spec": {"containers": [{"name": "pytorch", "image": "registry.example/p:1"}]}}


def start_kueue(cp: ControlPlane, binary: Path, work: Path) -> Kueue:
    work.mkdir(parents=True, exist_ok=True)
    return started(Kueue(cp, binary, work, KueueRelease.pinned()))
