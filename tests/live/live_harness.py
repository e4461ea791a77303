"""A real control plane on loopback: etcd, kube-apiserver and kube-scheduler, no kubelets.

Started once per test process (see conftest.py). The API server serves TLS with a
self-signed certificate made by `openssl`, authenticates static tokens (admin,
limited, scheduler) and authorises with RBAC. Nodes are created and marked Ready
with their allocatable through the status subresource; pods are bound by the real
scheduler. A small JSON client (urllib) drives it, independent of the code under test.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ADMIN_TOKEN = "topogen-admin-token"
LIMITED_TOKEN = "topogen-limited-token"
SCHEDULER_TOKEN = "topogen-scheduler-token"
# Bounds on waits for a condition (a component ready, a pod bound), never a wait on time:
# each wait ends as soon as its condition holds. Generous, as a 2-core machine under a load
# of 20 takes minutes (make test-live-load).
STARTUP_TIMEOUT = 300.0  # seconds for each component to become ready
BIND_TIMEOUT = 300.0

CRDS = [
    {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.cilium.io"},
        "spec": {
            "group": "cilium.io",
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": plural[:-1],
                "shortNames": [short],
            },
            "scope": scope,
            "versions": [
                {
                    "name": "v2",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "x-kubernetes-preserve-unknown-fields": True,
                                },
                                "specs": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "x-kubernetes-preserve-unknown-fields": True,
                                    },
                                },
                                "status": {
                                    "type": "object",
                                    "x-kubernetes-preserve-unknown-fields": True,
                                },
                            },
                        }
                    },
                }
            ],
        },
    }
    for kind, plural, short, scope in (
        ("CiliumNetworkPolicy", "ciliumnetworkpolicies", "cnp", "Namespaced"),
        ("CiliumClusterwideNetworkPolicy", "ciliumclusterwidenetworkpolicies", "ccnp", "Cluster"),
    )
]

# kube-apiserver v1.36 admission: keep NamespaceLifecycle and PodTopologyLabels (it
# stamps topology.kubernetes.io/zone on pods at binding, as a real 1.36 cluster does);
# disable the other default plugins: they need controllers we do not run
# (ServiceAccount wants a token controller; TaintNodesByCondition taints new nodes
# not-ready until a node lifecycle controller clears it) or change the pods we compare.
ENABLED_ADMISSION = "NamespaceLifecycle,PodTopologyLabels"
DISABLED_ADMISSION = (
    "LimitRanger,ServiceAccount,TaintNodesByCondition,PodSecurity,Priority,"
    "DefaultTolerationSeconds,DefaultStorageClass,StorageObjectInUseProtection,"
    "PodGroupProtection,PersistentVolumeClaimResize,RuntimeClass,CertificateApproval,"
    "CertificateSigning,ClusterTrustBundleAttest,CertificateSubjectRestriction,"
    "DefaultIngressClass,PodGroupWorkloadExists,NodeDeclaredFeatureValidator,JobValidation,"
    "PodResizeValidator,MutatingAdmissionPolicy,MutatingAdmissionWebhook,"
    "ValidatingAdmissionPolicy,ValidatingAdmissionWebhook,ResourceQuota"
)


class KubeError(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"{status}: {body[:500]}")
        self.status = status


def _die_with_parent() -> None:
    """Linux: the component gets SIGTERM if the test process dies without cleaning up."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Kube:
    """Minimal JSON REST client for the harness (the code under test uses the kubernetes client)."""

    def __init__(self, server: str, token: str, ca: Path) -> None:
        self.server = server
        self.token = token
        self.ctx = ssl.create_default_context(cafile=str(ca))

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        query: Mapping[str, Any] | None = None,
        timeout: float = 30,
    ) -> Any:
        url = self.server + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            url,
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {self.token}",
                "Content-Type": content_type,
                "Accept": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise KubeError(exc.code, exc.read().decode(errors="replace")) from None
        return json.loads(raw) if raw else None

    def text(self, path: str, timeout: float = 30) -> str:
        """GET a plain-text endpoint (/metrics)."""
        req = urllib.request.Request(
            self.server + path, headers={"Authorization": f"Bearer {self.token}"}
        )
        with urllib.request.urlopen(req, context=self.ctx, timeout=timeout) as resp:
            return str(resp.read().decode())

    def ok(self, path: str, timeout: float = 3) -> bool:
        """GET a health endpoint (plain text): True on 200."""
        req = urllib.request.Request(
            self.server + path, headers={"Authorization": f"Bearer {self.token}"}
        )
        with urllib.request.urlopen(req, context=self.ctx, timeout=timeout) as resp:
            return bool(resp.status == 200)

    def get(self, path: str, **query: Any) -> Any:
        return self.request("GET", path, query=query or None)

    def create(self, path: str, body: Any, *, exist_ok: bool = False) -> Any:
        try:
            return self.request("POST", path, body)
        except KubeError as exc:
            if exist_ok and exc.status == 409:
                return None
            raise

    def delete(self, path: str, **query: Any) -> None:
        try:
            self.request("DELETE", path, query=query or None)
        except KubeError as exc:
            if exc.status != 404:
                raise

    def merge_patch(self, path: str, body: Mapping[str, Any]) -> Any:
        return self.request("PATCH", path, body, content_type="application/merge-patch+json")

    def patch_status(self, path: str, status: Mapping[str, Any]) -> Any:
        return self.request(
            "PATCH",
            f"{path}/status",
            {"status": status},
            content_type="application/strategic-merge-patch+json",
        )


def collection_path(obj: Mapping[str, Any]) -> str:
    """The REST collection an object is created in."""
    api, kind = obj["apiVersion"], obj["kind"]
    ns = obj.get("metadata", {}).get("namespace")
    plural = {
        "NetworkPolicy": "networkpolicies",
        "CiliumNetworkPolicy": "ciliumnetworkpolicies",
        "CiliumClusterwideNetworkPolicy": "ciliumclusterwidenetworkpolicies",
        "ClusterRole": "clusterroles",
        "ClusterRoleBinding": "clusterrolebindings",
        "ServiceAccount": "serviceaccounts",
        "CronJob": "cronjobs",
        "Role": "roles",
        "RoleBinding": "rolebindings",
        "CustomResourceDefinition": "customresourcedefinitions",
        "MutatingPolicy": "mutatingpolicies",
        "ValidatingPolicy": "validatingpolicies",
        "ClusterPolicy": "clusterpolicies",
        "MutatingAdmissionPolicy": "mutatingadmissionpolicies",
        "ValidatingAdmissionPolicy": "validatingadmissionpolicies",
    }.get(kind, kind.lower() + "s")
    base = f"/api/{api}" if "/" not in api else f"/apis/{api}"
    return f"{base}/namespaces/{ns}/{plural}" if ns else f"{base}/{plural}"


@dataclass
class Process:
    name: str
    argv: list[str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    env: Mapping[str, str] | None = None  # added to this process's environment

    def start(self) -> None:
        out = self.log.open("ab")
        self.proc = subprocess.Popen(
            self.argv,
            env={**os.environ, **self.env} if self.env else None,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,
        )
        out.close()

    def stop(self, timeout: float = 15) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGCONT)  # in case a test paused it
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout)

    def kill(self) -> None:
        """Stop at once (SIGKILL): a crashed server, and no wait for watches to drain."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(15)

    def pause(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, lines: int = 25) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def wait_until(
    what: str,
    check: Callable[[], bool],
    timeout: float,
    proc: Process | None = None,
    interval: float = 0.1,
) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc is not None and not proc.alive():
            raise RuntimeError(f"{proc.name} exited while waiting for {what}:\n{proc.tail()}")
        try:
            if check():
                return
        except Exception:
            pass
        time.sleep(interval)
    tail = f"\n{proc.name} log:\n{proc.tail()}" if proc is not None else ""
    raise TimeoutError(f"{what}: not within {timeout:g}s{tail}")


@dataclass
class ControlPlane:
    bin_dir: Path
    work: Path
    etcd: Process | None = None
    apiserver: Process | None = None
    scheduler: Process | None = None
    server: str = ""
    ca: Path = field(default_factory=Path)
    admin: Kube | None = None
    dirty_namespaces: set[str] = field(default_factory=set)
    # the admission-policy plugins (MutatingAdmissionPolicy, ValidatingAdmissionPolicy) on
    admission_policies: bool = False
    # KubeSchedulerConfiguration fields merged over the defaults (e.g. clientConnection
    # qps): the scheduler then runs from a config file and serves /metrics to anyone
    scheduler_config: Mapping[str, Any] | None = None
    scheduler_port: int = 0
    # default-off admission plugins to turn on (e.g. the webhook plugins for Kyverno)
    admission: tuple[str, ...] = ()
    with_scheduler: bool = True

    # -- lifecycle --

    def start(self) -> None:
        self.work.mkdir(parents=True, exist_ok=True)
        self._credentials()
        self._start_etcd()
        self._start_apiserver()
        self._install_crds()
        if self.with_scheduler:
            self._start_scheduler()

    def stop(self) -> None:
        for p in (self.scheduler, self.apiserver, self.etcd):
            if p is not None:
                p.stop()

    def _credentials(self) -> None:
        w = self.work
        self.ca = w / "serving.crt"
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-keyout",
                str(w / "serving.key"),
                "-out",
                str(self.ca),
                "-subj",
                "/CN=kube-apiserver",
                "-addext",
                "subjectAltName=IP:127.0.0.1,DNS:localhost",
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign",
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        subprocess.run(
            ["openssl", "genrsa", "-out", str(w / "sa.key"), "2048"],
            check=True,
            capture_output=True,
            timeout=60,
        )
        subprocess.run(
            ["openssl", "rsa", "-in", str(w / "sa.key"), "-pubout", "-out", str(w / "sa.pub")],
            check=True,
            capture_output=True,
            timeout=60,
        )
        (w / "tokens.csv").write_text(
            f'{ADMIN_TOKEN},admin,uid-admin,"system:masters"\n'
            f"{LIMITED_TOKEN},limited,uid-limited\n"
            f"{SCHEDULER_TOKEN},system:kube-scheduler,uid-scheduler\n"
        )

    def _start_etcd(self) -> None:
        client, peer = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{client}"
        self.etcd = Process(
            "etcd",
            [
                str(self.bin_dir / "etcd"),
                "--name",
                "test",
                "--data-dir",
                str(self.work / "etcd"),
                "--listen-client-urls",
                self.etcd_url,
                "--advertise-client-urls",
                self.etcd_url,
                "--listen-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-cluster",
                f"test=http://127.0.0.1:{peer}",
                "--unsafe-no-fsync",
                "--log-level",
                "warn",
                "--quota-backend-bytes",
                str(2 << 30),
            ],
            self.work / "etcd.log",
        )
        self.etcd.start()
        wait_until(
            "etcd /health",
            lambda: (
                b'"health":"true"'
                in urllib.request.urlopen(f"{self.etcd_url}/health", timeout=2).read()
            ),
            STARTUP_TIMEOUT,
            self.etcd,
        )

    def _start_apiserver(self) -> None:
        if not self.server:
            self.port = free_port()
            self.server = f"https://127.0.0.1:{self.port}"
        w = self.work
        self.apiserver = Process(
            "kube-apiserver",
            [
                str(self.bin_dir / "kube-apiserver"),
                f"--etcd-servers={self.etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.port}",
                f"--cert-dir={w / 'certs'}",
                f"--tls-cert-file={w / 'serving.crt'}",
                f"--tls-private-key-file={w / 'serving.key'}",
                f"--token-auth-file={w / 'tokens.csv'}",
                "--authorization-mode=RBAC",
                f"--service-account-key-file={w / 'sa.pub'}",
                f"--service-account-signing-key-file={w / 'sa.key'}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--endpoint-reconciler-type=none",
                f"--enable-admission-plugins={','.join([ENABLED_ADMISSION, *self.admission])}",
                f"--disable-admission-plugins={self._disabled_admission()}",
                "--profiling=false",
                "--v=1",
            ],
            w / "kube-apiserver.log",
        )
        self.apiserver.start()
        self.admin = Kube(self.server, ADMIN_TOKEN, self.ca)
        admin = self.admin
        wait_until(
            "kube-apiserver /readyz",
            lambda: admin.ok("/readyz"),
            STARTUP_TIMEOUT,
            self.apiserver,
            interval=0.25,
        )
        # RBAC bootstrap roles (system:kube-scheduler) are created by a post-start hook
        wait_until(
            "RBAC bootstrap roles",
            lambda: bool(
                admin.get("/apis/rbac.authorization.k8s.io/v1/clusterroles/system:kube-scheduler")
            ),
            STARTUP_TIMEOUT,
            self.apiserver,
            interval=0.25,
        )

    def _disabled_admission(self) -> str:
        policies = ("MutatingAdmissionPolicy", "ValidatingAdmissionPolicy")
        on = {*self.admission, *(policies if self.admission_policies else ())}
        return ",".join(p for p in DISABLED_ADMISSION.split(",") if p not in on)

    def restart_apiserver(self) -> None:
        assert self.apiserver is not None
        self.apiserver.kill()
        self._start_apiserver()

    def _install_crds(self) -> None:
        kube = self.kube()
        for crd in CRDS:
            kube.create(collection_path(crd), crd, exist_ok=True)

        def established() -> bool:
            for crd in CRDS:
                got = kube.get(
                    f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                    f"{crd['metadata']['name']}"
                )
                conds = {
                    c["type"]: c["status"] for c in got.get("status", {}).get("conditions", [])
                }
                if conds.get("Established") != "True":
                    return False
                kube.get(f"/apis/cilium.io/v2/{crd['spec']['names']['plural']}")
            return True

        wait_until("Cilium CRDs established", established, STARTUP_TIMEOUT, self.apiserver)

    def uninstall_crds(self) -> None:
        kube = self.kube()
        for crd in CRDS:
            kube.delete(
                f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}"
            )

        def gone() -> bool:
            try:
                kube.get("/apis/cilium.io/v2/ciliumnetworkpolicies")
            except KubeError as exc:
                return exc.status == 404
            return False

        wait_until("Cilium CRDs removed", gone, STARTUP_TIMEOUT, self.apiserver)
        wait_until(
            "Cilium CRD objects removed",
            lambda: (
                not any(
                    _exists(
                        kube,
                        f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                        f"{c['metadata']['name']}",
                    )
                    for c in CRDS
                )
            ),
            STARTUP_TIMEOUT,
        )

    def reinstall_crds(self) -> None:
        self._install_crds()

    def _start_scheduler(self) -> None:
        kubeconfig = self.kubeconfig("scheduler", SCHEDULER_TOKEN)
        port = self.scheduler_port = free_port()
        if self.scheduler_config is None:
            config = [f"--kubeconfig={kubeconfig}", "--leader-elect=false"]
        else:
            config = [
                f"--config={self._scheduler_config_file(kubeconfig)}",
                "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            ]
        self.scheduler = Process(
            "kube-scheduler",
            [
                str(self.bin_dir / "kube-scheduler"),
                *config,
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={self.work / 'scheduler-certs'}",
                "--profiling=false",
                "--v=1",
            ],
            self.work / "kube-scheduler.log",
        )
        self.scheduler.start()
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE
        wait_until(
            "kube-scheduler /readyz",
            lambda: (
                urllib.request.urlopen(
                    f"https://127.0.0.1:{port}/readyz", context=insecure, timeout=2
                ).status
                == 200
            ),
            STARTUP_TIMEOUT,
            self.scheduler,
            interval=0.25,
        )

    def _scheduler_config_file(self, kubeconfig: Path) -> Path:
        body: dict[str, Any] = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False},
            **dict(self.scheduler_config or {}),
        }
        body["clientConnection"] = {
            **dict(body.get("clientConnection") or {}),
            "kubeconfig": str(kubeconfig),
        }
        path = self.work / "kube-scheduler.yaml"
        path.write_text(yaml.safe_dump(body, sort_keys=True))
        return path

    def scheduler_metrics(self) -> str:
        """The scheduler's /metrics text (only with scheduler_config, which opens it)."""
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE
        url = f"https://127.0.0.1:{self.scheduler_port}/metrics"
        with urllib.request.urlopen(url, context=insecure, timeout=10) as resp:
            return str(resp.read().decode())

    # -- access --

    def kube(self, token: str = ADMIN_TOKEN) -> Kube:
        return Kube(self.server, token, self.ca)

    def kubeconfig(self, name: str, token: str, server: str | None = None) -> Path:
        path = self.work / f"kubeconfig-{name}"
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": name,
                    "clusters": [
                        {
                            "name": "test",
                            "cluster": {
                                "server": server or self.server,
                                "certificate-authority": str(self.ca),
                            },
                        }
                    ],
                    "users": [{"name": name, "user": {"token": token}}],
                    "contexts": [{"name": name, "context": {"cluster": "test", "user": name}}],
                }
            )
        )
        return path

    # -- objects --

    def ensure_namespace(self, name: str, labels: Mapping[str, str] | None = None) -> None:
        """Create the namespace, or give the existing one these labels (they persist)."""
        body = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": dict(labels or {})},
        }
        kube = self.kube()
        if kube.create("/api/v1/namespaces", body, exist_ok=True) is None and labels:
            kube.merge_patch(f"/api/v1/namespaces/{name}", {"metadata": {"labels": labels}})
        self.dirty_namespaces.add(name)

    def create_nodes(self, nodes: Iterable[Mapping[str, Any]]) -> list[str]:
        """Create Nodes and mark them Ready with their allocatable (the status subresource)."""
        kube = self.kube()
        names = []
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        for node in nodes:
            body = {k: v for k, v in node.items() if k != "status"}
            kube.create("/api/v1/nodes", body)
            alloc = dict((node.get("status") or {}).get("allocatable") or {})
            kube.patch_status(
                f"/api/v1/nodes/{node['metadata']['name']}",
                {
                    "allocatable": alloc,
                    "capacity": alloc,
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "reason": "KubeletReady",
                            "message": "marked Ready by the test harness",
                            "lastHeartbeatTime": now,
                            "lastTransitionTime": now,
                        }
                    ],
                },
            )
            names.append(node["metadata"]["name"])
        if names and self.scheduler is not None:
            self.sync_scheduler(names[-1])
        return names

    def sync_scheduler(self, last_node: str, namespace: str = "default") -> None:
        """Bind a probe pod that fits only the newest node as patched Ready: the scheduler
        has then seen every node event before it (informer events arrive in order), so no
        later pod is judged on a partial or stale node list."""
        probe = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "topogen-sync-probe", "namespace": namespace},
            "spec": {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchFields": [
                                        {
                                            "key": "metadata.name",
                                            "operator": "In",
                                            "values": [last_node],
                                        }
                                    ]
                                }
                            ]
                        }
                    }
                },
                "tolerations": [{"operator": "Exists"}],
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.example/probe:1",
                        "resources": {"requests": {"cpu": "1m"}},
                    }
                ],
            },
        }
        self.create_pod(probe)
        path = f"/api/v1/namespaces/{namespace}/pods/topogen-sync-probe"
        # Tried before the node (or its allocatable) arrived, the probe is Unschedulable
        # until the node's events requeue it: wait for the binding itself.
        wait_until(
            f"the scheduler's sync probe bound to {last_node}",
            lambda: self.pod(namespace, "topogen-sync-probe")["spec"].get("nodeName") == last_node,
            BIND_TIMEOUT,
            self.scheduler,
            interval=0.02,
        )
        self.kube().delete(path, gracePeriodSeconds=0)
        wait_until(
            "the sync probe deleted",
            lambda: not _exists(self.kube(), path),
            BIND_TIMEOUT,
            self.scheduler,
            interval=0.02,
        )

    def apply(self, objects: Iterable[Mapping[str, Any]]) -> None:
        kube = self.kube()
        for obj in objects:
            ns = obj.get("metadata", {}).get("namespace")
            if ns:
                self.ensure_namespace(ns)
            kube.create(collection_path(obj), obj)

    def create_pod(self, pod: Mapping[str, Any]) -> None:
        ns = pod["metadata"]["namespace"]
        self.ensure_namespace(ns)
        self.kube().create(f"/api/v1/namespaces/{ns}/pods", pod)

    def pod(self, namespace: str, name: str) -> dict[str, Any]:
        got: dict[str, Any] = self.kube().get(f"/api/v1/namespaces/{namespace}/pods/{name}")
        return got

    def wait_scheduled(
        self, namespace: str, names: Sequence[str], timeout: float = BIND_TIMEOUT
    ) -> dict[str, str]:
        """Wait until the scheduler bound each pod or marked it Unschedulable.

        Returns pod -> node name ("" for Pending/Unschedulable).
        """
        out: dict[str, str] = {}

        def settled() -> bool:
            for n in names:
                if n in out:
                    continue
                pod = self.pod(namespace, n)
                if pod["spec"].get("nodeName"):
                    out[n] = pod["spec"]["nodeName"]
                elif any(
                    c.get("type") == "PodScheduled"
                    and c.get("status") == "False"
                    and c.get("reason") == "Unschedulable"
                    for c in pod.get("status", {}).get("conditions", [])
                ):
                    out[n] = ""
            return len(out) == len(names)

        wait_until(
            f"pods {', '.join(names)} scheduled or unschedulable",
            settled,
            timeout,
            self.scheduler,
            interval=0.02,
        )
        return out

    def set_running(self, namespace: str, names: Iterable[str]) -> None:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        for n in names:
            self.kube().patch_status(
                f"/api/v1/namespaces/{namespace}/pods/{n}",
                {
                    "phase": "Running",
                    "startTime": now,
                    "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
                },
            )

    def delete_pods(self, namespace: str) -> None:
        self.kube().delete(f"/api/v1/namespaces/{namespace}/pods", gracePeriodSeconds=0)

    def reset(self) -> None:
        """Remove every Node, Pod and policy the tests created (namespaces stay)."""
        kube = self.kube()
        for ns in sorted(self.dirty_namespaces):
            kube.delete(f"/api/v1/namespaces/{ns}/pods", gracePeriodSeconds=0)
            kube.delete(f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies")
            kube.delete(f"/apis/cilium.io/v2/namespaces/{ns}/ciliumnetworkpolicies")
        kube.delete("/apis/cilium.io/v2/ciliumclusterwidenetworkpolicies")
        kube.delete("/api/v1/nodes")
        self.dirty_namespaces.clear()


def _exists(kube: Kube, path: str) -> bool:
    try:
        kube.get(path)
    except KubeError as exc:
        if exc.status == 404:
            return False
        raise
    return True


def start_control_plane(
    bin_dir: Path,
    work: Path,
    admission: Sequence[str] = (),
    *,
    admission_policies: bool = False,
    scheduler_config: Mapping[str, Any] | None = None,
    scheduler: bool = True,
) -> ControlPlane:
    for tool in ("etcd", "kube-apiserver", "kube-scheduler", "openssl"):
        if tool == "openssl":
            if shutil.which("openssl") is None:
                raise RuntimeError("openssl is not on PATH")
        elif not os.access(bin_dir / tool, os.X_OK):
            raise RuntimeError(f"{bin_dir / tool} is not executable")
    cp = ControlPlane(
        bin_dir,
        work,
        admission_policies=admission_policies,
        scheduler_config=scheduler_config,
        admission=tuple(admission),
        with_scheduler=scheduler,
    )
    try:
        cp.start()
    except BaseException:
        cp.stop()
        raise
    return cp
