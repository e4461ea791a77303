"""Kyverno's admission controller (cmd/kyverno) out of cluster, in front of the harness's
kube-apiserver.

What a Kyverno install puts in a cluster comes from the pinned module itself (found in
the Go module cache with `go list -m` in tools/kyverno): the CRDs of config/crds, the
`kyverno` and `kyverno-metrics` ConfigMaps, and the admission controller's arguments and
environment from the Deployment in config/install-latest-testing.yaml. Out of cluster,
`--serverIP 127.0.0.1:PORT` makes Kyverno register its webhooks with URLs instead of its
Service and put that address in the serving certificate it generates (the CA and the TLS
pair are Secrets in its namespace, as in a cluster); `--kubeconfig` names the API server
(admin credentials: the chart's RBAC is not reproduced). The API server runs with the
webhook admission plugins on, and the ValidatingAdmissionPolicy plugin (on by default in a
cluster): a ValidatingPolicy with spec.autogen.validatingAdmissionPolicy.enabled becomes a
ValidatingAdmissionPolicy and binding (`vpol-<name>`, made by Kyverno's
admissionpolicygenerator), and gets no webhook. No garbage collector runs here, so
`delete` removes those with their policy, as a cluster's would by their owner reference.

Kyverno's reports controller (cmd/reports-controller, `start_reports_controller`) runs
next to it the same way, from its own Deployment in that manifest: the background scan of
policies with evaluation.background.enabled, and the aggregation of the admission
controller's and its own EphemeralReports into PolicyReports (wgpolicyk8s.io/v1alpha2,
one per resource). It serves no webhook; it is ready once it holds its leader-election
Lease (only the leader runs the report controllers).
"""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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
from webhook_harness import (
    CONTROLLER_TIMEOUT,
    WEBHOOK_PLUGINS,
    Controller,
    insecure,
    install_crds,
    manifest_docs,
    started,
)

from tooling import module_dir

NAMESPACE = "kyverno"
DEPLOYMENT = "kyverno-admission-controller"
CRD_FOLDERS = ("kyverno", "policies.kyverno.io", "policyreport", "reports")
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
RESOURCE_WEBHOOKS = {
    "mutating": "kyverno-resource-mutating-webhook-cfg",
    "validating": "kyverno-resource-validating-webhook-cfg",
}
# flags of the installed Deployment that name in-cluster endpoints or fixed ports
OUT_OF_CLUSTER = ("serverIP", "webhookServerHost", "webhookServerPort", "servicePort")
OWN_PORTS = ("metricsPort", "controllerRuntimeMetricsAddress", "profilePort")


def crds(module: Path, folders: Sequence[str]) -> list[dict[str, Any]]:
    out = []
    for folder in folders:
        for f in sorted((module / "config" / "crds" / folder).glob("*.yaml")):
            text = f.read_text(encoding="utf-8")
            out.extend(d for d in yaml.load_all(text, Loader=LOADER) if d)
    return out


PLUGINS = (*WEBHOOK_PLUGINS, "ValidatingAdmissionPolicy")
# Kyverno's log line for a lost status write of a ValidatingPolicy (see Kyverno.generated)
LOST_STATUS = "failed to update validating policy status"
LOST_NAME = re.compile(r" name=(\S+)")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
VAP = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
VAP_BINDING = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"


def _at_admission(policy: Mapping[str, Any]) -> bool:
    evaluation = policy["spec"].get("evaluation") or {}
    return (evaluation.get("admission") or {}).get("enabled", True) is not False


def generates_vap(policy: Mapping[str, Any]) -> bool:
    """A ValidatingPolicy Kyverno turns into a ValidatingAdmissionPolicy (no webhook)."""
    autogen = policy["spec"].get("autogen") or {}
    return policy["kind"] == "ValidatingPolicy" and bool(
        (autogen.get("validatingAdmissionPolicy") or {}).get("enabled")
    )


def vap_names(policy: Mapping[str, Any]) -> tuple[str, str]:
    """The ValidatingAdmissionPolicy and binding Kyverno generates for a ValidatingPolicy
    (pkg/controllers/admissionpolicygenerator: vpol-<name>, its binding <that>-binding)."""
    name = f"vpol-{policy['metadata']['name']}"
    return name, f"{name}-binding"


def installed_container(
    docs: Sequence[dict[str, Any]], deployment: str
) -> tuple[list[str], dict[str, str]]:
    """The args and literal env (not the downward API's) of the one container of one
    Deployment of the release manifest."""
    (d,) = [x for x in docs if x["kind"] == "Deployment" and x["metadata"]["name"] == deployment]
    (c,) = d["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value", "") for e in c.get("env", []) if "valueFrom" not in e}
    return list(c["args"]), env


def out_of_cluster_env(installed: Mapping[str, str], work: Path, pod: str) -> dict[str, str]:
    """The environment of a Kyverno process here: what the downward API gives it in a
    cluster (its namespace and pod name), sigstore's cache and HOME under `work`."""
    sigstore = work / "sigstore"
    sigstore.mkdir(parents=True, exist_ok=True)
    return {
        **installed,
        "KYVERNO_NAMESPACE": NAMESPACE,
        "KYVERNO_POD_NAME": pod,
        "TUF_ROOT": str(sigstore),
        "HOME": str(work),
    }


def _flag(arg: str) -> str:
    return arg.lstrip("-").split("=", 1)[0]


@dataclass
class Kyverno(Controller):
    """One admission controller process; `start()` installs what it needs first."""

    cp: ControlPlane
    binary: Path
    work: Path
    module: Path
    port: int = 0
    proc: Process | None = None
    installed_args: list[str] = field(default_factory=list)
    installed_env: dict[str, str] = field(default_factory=dict)
    # status writes of each ValidatingPolicy that Kyverno's log says it lost, the count at
    # the policy's creation or last nudge, the bytes of the log read, and how many
    # bindings were deleted for Kyverno to reconcile again (see `generated`)
    lost: dict[str, int] = field(default_factory=dict)
    nudged_at: dict[str, int] = field(default_factory=dict)
    log_read: int = 0
    nudged: int = 0

    def install(self) -> None:
        """Namespace, CRDs and ConfigMaps as the release manifest has them."""
        self.cp.ensure_namespace(NAMESPACE)
        install_crds(self.cp, crds(self.module, CRD_FOLDERS))
        manifest = self.module / "config" / "install-latest-testing.yaml"
        docs = manifest_docs(manifest, ("ConfigMap", "Deployment"))
        kube = self.cp.kube()
        for doc in docs:
            if doc["kind"] == "ConfigMap" and doc["metadata"]["namespace"] == NAMESPACE:
                kube.create(collection_path(doc), doc, exist_ok=True)
        self.installed_args, self.installed_env = installed_container(docs, DEPLOYMENT)

    def argv(self) -> list[str]:
        drop = set(OUT_OF_CLUSTER + OWN_PORTS)
        args = [a for a in self.installed_args if _flag(a) not in drop]
        kubeconfig = self.cp.kubeconfig("kyverno", ADMIN_TOKEN)
        return [
            str(self.binary),
            *args,
            f"--kubeconfig={kubeconfig}",
            f"--serverIP=127.0.0.1:{self.port}",
            "--webhookServerHost=127.0.0.1",
            f"--webhookServerPort={self.port}",
            f"--servicePort={self.port}",
            "--metricsHost=127.0.0.1",
            f"--metricsPort={free_port()}",
            "--controllerRuntimeMetricsAddress=0",
        ]

    def env(self) -> dict[str, str]:
        return out_of_cluster_env(self.installed_env, self.work, f"{DEPLOYMENT}-out-of-cluster")

    def before_restart(self) -> None:
        self.port = 0  # a new one: Kyverno registers its webhooks at it

    def start(self) -> None:
        if not self.installed_args:
            self.install()
        if not self.port:
            self.port = free_port()
        self.proc = Process("kyverno", self.argv(), self.work / "kyverno.log", env=self.env())
        self.proc.start()
        ctx = insecure()
        wait_until(
            "kyverno /health/readiness",
            lambda: (
                urllib.request.urlopen(
                    f"https://127.0.0.1:{self.port}/health/readiness", context=ctx, timeout=2
                ).status
                == 200
            ),
            CONTROLLER_TIMEOUT,
            self.proc,
            interval=0.25,
        )
        wait_until(
            "kyverno's webhook configurations",
            lambda: all(self.webhook_configuration(k) is not None for k in RESOURCE_WEBHOOKS),
            CONTROLLER_TIMEOUT,
            self.proc,
            interval=0.25,
        )

    # -- what it registered --

    def webhook_configuration(self, kind: str) -> dict[str, Any] | None:
        plural = f"{kind}webhookconfigurations"
        try:
            got: dict[str, Any] = self.cp.kube().get(
                f"/apis/admissionregistration.k8s.io/v1/{plural}/{RESOURCE_WEBHOOKS[kind]}"
            )
        except KubeError as exc:
            if exc.status == 404:
                return None
            raise
        return got

    def webhooks_for(self, kind: str, policy: str) -> list[dict[str, Any]]:
        """The webhooks of Kyverno's resource configuration that call `policy`."""
        cfg = self.webhook_configuration(kind) or {}
        return [
            w
            for w in cfg.get("webhooks") or []
            if policy in w.get("clientConfig", {}).get("url", "").split("/")
        ]

    # -- policies --

    def apply(self, objs: Sequence[Mapping[str, Any]]) -> None:
        kube = self.cp.kube()
        self.read_lost_writes()
        for obj in objs:
            if generates_vap(obj):
                name = obj["metadata"]["name"]
                self.nudged_at[name] = self.lost.get(name, 0)
            kube.create(collection_path(obj), obj)

    def delete(self, objs: Sequence[Mapping[str, Any]]) -> None:
        kube = self.cp.kube()
        for obj in objs:
            kube.delete(f"{collection_path(obj)}/{obj['metadata']['name']}")
        for obj in objs:
            if obj["kind"] == "ValidatingPolicy":
                self.delete_generated(obj["metadata"]["name"])

    def delete_generated(self, policy: str | None = None) -> None:
        """The ValidatingAdmissionPolicies Kyverno generated (for `policy`, or all), as the
        garbage collector removes them with their owner."""
        kube = self.cp.kube()
        for path in (VAP, VAP_BINDING):
            for item in kube.get(path, labelSelector="app.kubernetes.io/managed-by=kyverno")[
                "items"
            ]:
                owners = {o["name"] for o in item["metadata"].get("ownerReferences") or []}
                if policy is None or policy in owners:
                    kube.delete(f"{path}/{item['metadata']['name']}")

    def generated(self, policy: Mapping[str, Any]) -> dict[str, Any] | None:
        """The ValidatingAdmissionPolicy Kyverno generated from `policy`, once it and its
        binding exist and the policy's status says so (then Kyverno's webhook controller
        leaves the policy out); None before.

        Kyverno v1.19.1's admissionpolicygenerator writes that status once per reconcile
        without retrying on a conflict (controller.go updatePolicyStatus), and the status
        controller writes the same status when the policy is created: the write is lost
        often, the VAP enforces and the policy keeps its webhook too, until the next
        reconcile (the policy's spec, its VAP or binding changed, or Kyverno restarted).
        The loss is Kyverno's own log line ("failed to update validating policy status",
        name=<policy>): for each one, the binding is deleted, for Kyverno to make it again
        (what `kubectl delete validatingadmissionpolicybinding` does in a cluster)."""
        vap, binding = vap_names(policy)
        name = policy["metadata"]["name"]
        kube = self.cp.kube()
        try:
            status = kube.get(f"{collection_path(policy)}/{name}")
            got: dict[str, Any] = kube.get(f"{VAP}/{vap}")
            kube.get(f"{VAP_BINDING}/{binding}")
        except KubeError as exc:
            if exc.status == 404:
                return None
            raise
        if (status.get("status") or {}).get("generated"):
            return got
        self.read_lost_writes()
        if self.lost.get(name, 0) > self.nudged_at.get(name, 0):
            self.nudged_at[name] = self.lost[name]
            self.nudged += 1
            kube.delete(f"{VAP_BINDING}/{binding}")
        return None

    def read_lost_writes(self) -> None:
        """Count the status writes Kyverno's log says it lost since the last read."""
        path = self.work / "kyverno.log"
        if not path.exists():
            return
        with path.open("rb") as f:
            f.seek(self.log_read)
            data = f.read()
        data = data[: data.rfind(b"\n") + 1]  # whole lines only
        self.log_read += len(data)
        for line in data.decode(errors="replace").splitlines():
            if LOST_STATUS in line:
                found = LOST_NAME.search(ANSI.sub("", line))
                if found:
                    self.lost[found[1]] = self.lost.get(found[1], 0) + 1

    def wait_registered(
        self, objs: Sequence[Mapping[str, Any]], timeout: float = CONTROLLER_TIMEOUT
    ) -> None:
        """Until each policy has its webhook in Kyverno's resource configurations (a
        policy with evaluation.admission.enabled false gets none; one that generates a
        ValidatingAdmissionPolicy: until that and its binding exist and no webhook).

        Every policy is looked at on every poll: `generated` is what nudges Kyverno past
        a lost status write, and a lost write is exactly what leaves the policy with its
        webhook, so it is asked whether or not the webhook is still there."""

        def registered() -> bool:
            done = True
            for obj in objs:
                if not _at_admission(obj):
                    continue
                kind = "mutating" if obj["kind"] == "MutatingPolicy" else "validating"
                hooks = self.webhooks_for(kind, obj["metadata"]["name"])
                if generates_vap(obj):
                    made = self.generated(obj)
                    done = done and made is not None and not hooks
                elif not hooks:
                    done = False
            return done

        wait_until("the policies' webhooks", registered, timeout, self.proc, interval=0.2)

    def wait_unregistered(self, names: Sequence[str], timeout: float = CONTROLLER_TIMEOUT) -> None:
        wait_until(
            "the policies' webhooks removed",
            lambda: not any(self.webhooks_for(k, n) for k in RESOURCE_WEBHOOKS for n in names),
            timeout,
            self.proc,
            interval=0.2,
        )


REPORTS_DEPLOYMENT = "kyverno-reports-controller"
LEASE = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{REPORTS_DEPLOYMENT}"
# The Deployment's flags are kept as they are, the background-scan interval too (1h): a new
# or changed pod is scanned 30s after its event (enqueueDelay, a constant of
# pkg/controllers/report/background), not at the interval, which only re-scans unchanged
# resources.


@dataclass
class ReportsController(Controller):
    """One reports controller process (the Kyverno CRDs and ConfigMaps are the admission
    controller's `install`: start that first)."""

    cp: ControlPlane
    binary: Path
    work: Path
    module: Path
    proc: Process | None = None
    installed_args: list[str] = field(default_factory=list)
    installed_env: dict[str, str] = field(default_factory=dict)

    @property
    def pod_name(self) -> str:
        return f"{REPORTS_DEPLOYMENT}-out-of-cluster"

    def load(self) -> None:
        manifest = self.module / "config" / "install-latest-testing.yaml"
        docs = manifest_docs(manifest, ("Deployment",))
        self.installed_args, self.installed_env = installed_container(docs, REPORTS_DEPLOYMENT)

    def argv(self) -> list[str]:
        drop = {*OWN_PORTS, "metricsHost"}
        args = [a for a in self.installed_args if _flag(a) not in drop]
        kubeconfig = self.cp.kubeconfig("kyverno-reports", ADMIN_TOKEN)
        return [
            str(self.binary),
            *args,
            f"--kubeconfig={kubeconfig}",
            "--metricsHost=127.0.0.1",
            f"--metricsPort={free_port()}",
        ]

    def env(self) -> dict[str, str]:
        return out_of_cluster_env(self.installed_env, self.work, self.pod_name)

    def leader(self) -> bool:
        try:
            lease = self.cp.kube().get(LEASE)
        except KubeError as exc:
            if exc.status == 404:
                return False
            raise
        return bool((lease.get("spec") or {}).get("holderIdentity") == self.pod_name)

    def start(self) -> None:
        if not self.installed_args:
            self.load()
        self.proc = Process(
            "kyverno-reports-controller",
            self.argv(),
            self.work / "reports-controller.log",
            env=self.env(),
        )
        self.proc.start()
        wait_until(
            "kyverno-reports-controller's leader-election Lease",
            self.leader,
            CONTROLLER_TIMEOUT,
            self.proc,
            interval=0.25,
        )


def start_reports_controller(cp: ControlPlane, binary: Path, work: Path) -> ReportsController:
    """Kyverno's reports controller against `cp`, once the admission controller's
    `install` has put the CRDs and ConfigMaps in (start_kyverno does)."""
    module = module_dir("kyverno", "github.com/kyverno/kyverno")
    work.mkdir(parents=True, exist_ok=True)
    return started(ReportsController(cp, binary, work, module))


def start_kyverno(cp: ControlPlane, binary: Path, work: Path) -> Kyverno:
    module = module_dir("kyverno", "github.com/kyverno/kyverno")
    work.mkdir(parents=True, exist_ok=True)
    return started(Kyverno(cp, binary, work, module))
