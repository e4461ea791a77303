"""Gatekeeper's controller-manager (the module's root package, upstream's `manager`) out of
cluster, in front of the harness's kube-apiserver, with mutation enabled.

From the pinned module's release manifest (deploy/gatekeeper.yaml): the CRDs, the
gatekeeper-system Namespace, both webhook configurations and the webhook Deployment's
arguments. One change for running outside the cluster: the release's controller-manager
generates its serving certificate for the Service name gatekeeper-webhook-service.
gatekeeper-system.svc and injects its CA into the webhook configurations; here there is
no Service, so the webhook configurations call https://127.0.0.1:PORT (their paths kept)
and the certificate, made by `openssl` for that address, is handed over in --cert-dir
with --disable-cert-rotation (Gatekeeper's option for certificates it does not make).
One process serves the webhook Deployment's operations (webhook, mutation-webhook) and of
the audit Deployment's those the policies need (generate: a ConstraintTemplate's
constraint CRD; status, mutation-status: what tests wait for); not the periodic audit.
Gatekeeper owns its status objects by its own
Pod, so that Pod object is created from the Deployment's template, bound to no real node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from live_harness import (
    ADMIN_TOKEN,
    ControlPlane,
    KubeError,
    Process,
    collection_path,
    free_port,
    wait_until,
)
from webhook_harness import (
    CONTROLLER_TIMEOUT,
    WEBHOOK_CONFIGS,
    Controller,
    by_url,
    install_crds,
    loopback_certificates,
    manifest_docs,
    register_webhooks,
    started,
)

from tooling import module_dir

NAMESPACE = "gatekeeper-system"
WEBHOOK_DEPLOYMENT = "gatekeeper-controller-manager"
POD_NAME = f"{WEBHOOK_DEPLOYMENT}-out-of-cluster"
CONFIGS = WEBHOOK_CONFIGS
OPERATIONS = ("webhook", "mutation-webhook", "status", "mutation-status", "generate")
PLURALS = {
    "ConstraintTemplate": "constrainttemplates",
    "Assign": "assign",
    "AssignMetadata": "assignmetadata",
    "ModifySet": "modifyset",
}
# Gatekeeper's mutator kinds (mutations.gatekeeper.sh); topogen renders the first three
MUTATOR_KINDS = ("Assign", "AssignMetadata", "ModifySet", "AssignImage")


def mutators(objects: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The mutators among Gatekeeper objects (no templates or constraints), in order."""
    return [o for o in objects if o["kind"] in MUTATOR_KINDS]


@dataclass
class Gatekeeper(Controller):
    cp: ControlPlane
    binary: Path
    work: Path
    module: Path
    port: int = 0
    health: int = 0
    prometheus: int = 0
    proc: Process | None = None
    installed_args: list[str] = field(default_factory=list)
    configs: list[dict[str, Any]] = field(default_factory=list)
    released: list[dict[str, Any]] = field(default_factory=list)  # configs as released
    ca: bytes = b""

    def install(self) -> None:
        manifest = self.module / "deploy" / "gatekeeper.yaml"
        docs = manifest_docs(
            manifest, ("Namespace", "CustomResourceDefinition", "Deployment", *CONFIGS)
        )
        kube = self.cp.kube()
        for d in docs:
            if d["kind"] == "Namespace":
                kube.create(collection_path(d), d, exist_ok=True)
        install_crds(self.cp, [d for d in docs if d["kind"] == "CustomResourceDefinition"])
        (deployment,) = [
            d
            for d in docs
            if d["kind"] == "Deployment" and d["metadata"]["name"] == WEBHOOK_DEPLOYMENT
        ]
        template = deployment["spec"]["template"]
        (container,) = template["spec"]["containers"]
        self.installed_args = list(container["args"])
        # Gatekeeper owns its status objects by its own Pod: the Deployment's pod, as if
        # scheduled (nodeName set: the scheduler leaves it alone)
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": POD_NAME, "namespace": NAMESPACE, **template["metadata"]},
            "spec": {**template["spec"], "nodeName": "out-of-cluster"},
        }
        kube.create(f"/api/v1/namespaces/{NAMESPACE}/pods", pod, exist_ok=True)
        self.port = self.port or free_port()
        self.ca = loopback_certificates(self.work / "certs", "gatekeeper-test-ca")
        self.released = [d for d in docs if d["kind"] in CONFIGS]
        self._register_at_port()

    def before_restart(self) -> None:
        self.port, self.health, self.prometheus = free_port(), free_port(), free_port()
        self._register_at_port()

    def _register_at_port(self) -> None:
        """The released webhook configurations, calling this process's port."""
        self.configs = [by_url(d, self.port, self.ca) for d in self.released]
        self.register(self.configs)

    def register(self, configs: Sequence[Mapping[str, Any]]) -> None:
        """Create or replace Gatekeeper's webhook configurations."""
        register_webhooks(self.cp, configs)

    def argv(self) -> list[str]:
        ours = ("--port=", "--operation=", "--prometheus-port=")
        args = [a for a in self.installed_args if not a.startswith(ours)]
        return [
            str(self.binary),
            *args,
            f"--port={self.port}",
            "--host=127.0.0.1",
            *(f"--operation={op}" for op in OPERATIONS),
            f"--cert-dir={self.work / 'certs'}",
            "--disable-cert-rotation",
            f"--health-addr=127.0.0.1:{self.health}",
            "--metrics-addr=0",
            # its Prometheus exporter's port (8888 by default): two runs at once would clash
            f"--prometheus-port={self.prometheus}",
        ]

    def start(self) -> None:
        if not self.installed_args:
            self.install()
        self.health = self.health or free_port()
        self.prometheus = self.prometheus or free_port()
        kubeconfig = self.cp.kubeconfig("gatekeeper", ADMIN_TOKEN)
        env = {
            "KUBECONFIG": str(kubeconfig),
            "POD_NAMESPACE": NAMESPACE,
            "NAMESPACE": NAMESPACE,
            "POD_NAME": POD_NAME,
            "CONTAINER_NAME": "manager",
        }
        self.proc = Process("gatekeeper", self.argv(), self.work / "gatekeeper.log", env=env)
        self.proc.start()
        self.wait_ready("gatekeeper", f"http://127.0.0.1:{self.health}/readyz")

    # -- policies --

    def path(self, obj: Mapping[str, Any]) -> str:
        api, kind = obj["apiVersion"], obj["kind"]
        plural = PLURALS.get(kind, kind.lower())  # a constraint's kind, lowercased
        return f"/apis/{api}/{plural}"

    def apply(self, objs: Sequence[Mapping[str, Any]]) -> None:
        kube = self.cp.kube()
        for obj in objs:
            if obj["kind"] != "ConstraintTemplate":
                self._wait_kind(obj)
            kube.create(self.path(obj), obj)

    def _wait_kind(self, obj: Mapping[str, Any]) -> None:
        """A Constraint's kind exists once Gatekeeper made its template's CRD."""
        wait_until(
            f"the {obj['kind']} API",
            lambda: self.cp.kube().get(self.path(obj)) is not None,
            CONTROLLER_TIMEOUT,
            self.proc,
            interval=0.25,
        )

    def delete(self, objs: Sequence[Mapping[str, Any]]) -> None:
        kube = self.cp.kube()
        for obj in reversed(objs):
            try:
                kube.delete(f"{self.path(obj)}/{obj['metadata']['name']}")
            except KubeError as exc:
                if exc.status != 404:  # a constraint's API gone with its template
                    raise

    def clear(self) -> None:
        """Remove every ConstraintTemplate and mutator, and the templates' constraint CRDs
        (owned by their templates: in a cluster the garbage collector of
        kube-controller-manager removes them, which the harness does not run); wait."""
        kube = self.cp.kube()
        collections = [
            f"/apis/templates.gatekeeper.sh/v1/{PLURALS['ConstraintTemplate']}",
            *(
                f"/apis/mutations.gatekeeper.sh/v1/{PLURALS[k]}"
                for k in ("Assign", "AssignMetadata", "ModifySet")
            ),
        ]
        for c in collections:
            kube.delete(c)
        for crd in kube.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]:
            if crd["spec"]["group"] == "constraints.gatekeeper.sh":
                kube.delete(
                    f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}"
                )

        def gone() -> bool:
            if any(kube.get(c)["items"] for c in collections):
                return False
            crds = kube.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]
            return not any(c["spec"]["group"] == "constraints.gatekeeper.sh" for c in crds)

        wait_until(
            "Gatekeeper's policies removed", gone, CONTROLLER_TIMEOUT, self.proc, interval=0.2
        )

    def wait_enforced(self, objs: Sequence[Mapping[str, Any]]) -> None:
        """Until every constraint and mutator reports itself enforced by this process."""

        def enforced() -> bool:
            for obj in objs:
                if obj["kind"] == "ConstraintTemplate":
                    got = self.cp.kube().get(f"{self.path(obj)}/{obj['metadata']['name']}")
                    if not got.get("status", {}).get("created"):
                        return False
                    continue
                got = self.cp.kube().get(f"{self.path(obj)}/{obj['metadata']['name']}")
                pods = got.get("status", {}).get("byPod") or []
                if not pods or not all(p.get("enforced") for p in pods):
                    return False
            return True

        wait_until("constraints and mutators enforced", enforced, CONTROLLER_TIMEOUT, self.proc)


def start_gatekeeper(cp: ControlPlane, binary: Path, work: Path) -> Gatekeeper:
    module = module_dir("gatekeeper", "github.com/open-policy-agent/gatekeeper/v3")
    work.mkdir(parents=True, exist_ok=True)
    return started(Gatekeeper(cp, binary, work, module))
