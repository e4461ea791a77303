"""What the admission-controller harnesses share: the webhook admission plugins, objects
from an upstream release manifest, CRDs established, probes."""

from __future__ import annotations

import base64
import copy
import re
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from live_harness import (
    ControlPlane,
    KubeError,
    Process,
    collection_path,
    start_control_plane,
    wait_until,
)
from live_kit import create_pod_raw, project

from tooling import TOOLS_BIN

WEBHOOK_PLUGINS = ("MutatingAdmissionWebhook", "ValidatingAdmissionWebhook")
WEBHOOK_CONFIGS = {
    "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
    "ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
}
# Waits on an admission controller's conditions (ready, policies registered or enforced,
# seen at admission): generous, since a loaded 2-core machine can take minutes; a wait
# ends as soon as its condition holds.
CONTROLLER_TIMEOUT = 300.0


class Controller:
    """A controller process of the harness's (`proc`, once started): start, stop, kill,
    alive."""

    proc: Process | None

    def start(self) -> None:
        raise NotImplementedError

    def before_restart(self) -> None:
        """Before a start after an exit (webhook_harness.started): new ports, since another
        process may have taken a port this one chose (a port is free only when chosen)."""

    def wait_ready(self, name: str, url: str) -> None:
        """Until the controller's plain-HTTP readiness endpoint answers 200."""
        wait_until(
            f"{name} {url.rsplit('/', 1)[-1]}",
            lambda: urllib.request.urlopen(url, timeout=2).status == 200,
            CONTROLLER_TIMEOUT,
            self.proc,
            interval=0.25,
        )

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.alive()


C = TypeVar("C", bound=Controller)


# A controller that exits before it is ready is started again, as the kubelet restarts a
# pod's container (restartPolicy Always): a loaded machine can run out a controller's own
# start-up deadline (controller-runtime's cache sync, say), and in a cluster that is a
# restart, not a failure. A controller that exits every time still fails the test.
START_ATTEMPTS = 3


def started(controller: C) -> C:
    """The controller, started (again after an exit before it was ready, at most
    START_ATTEMPTS times in all); stopped again if it did not come up."""
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            controller.start()
            return controller
        except RuntimeError as exc:
            exited = controller.proc is not None and not controller.proc.alive()
            controller.stop()
            if not exited or attempt == START_ATTEMPTS:
                raise
            print(f"harness: {exc}\nharness: started again ({attempt + 1} of {START_ATTEMPTS})")
            controller.before_restart()
        except BaseException:
            controller.stop()
            raise
    raise AssertionError("unreachable")


def plane_with(
    work: Path, admission: Sequence[str], start: Callable[[ControlPlane], C]
) -> Iterator[tuple[ControlPlane, C]]:
    """A control plane (these admission plugins on) with a controller in front of it, for a
    fixture to yield from; both stopped at the end."""
    cp = start_control_plane(TOOLS_BIN, work, admission=admission)
    try:
        controller = start(cp)
    except BaseException:
        cp.stop()
        raise
    try:
        yield cp, controller
    finally:
        controller.stop()
        cp.stop()


def manifest_docs(path: Path, kinds: Iterable[str]) -> list[dict[str, Any]]:
    """The documents of these kinds in a (large) multi-document manifest, others unparsed."""
    alternatives = "|".join(map(re.escape, kinds))
    wanted = re.compile(rf"^kind: ({alternatives})$", re.MULTILINE)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out = []
    for chunk in re.split(r"^---$", path.read_text(encoding="utf-8"), flags=re.MULTILINE):
        if wanted.search(chunk):
            doc = yaml.load(chunk, Loader=loader)
            if doc:
                out.append(doc)
    return out


def install_crds(cp: ControlPlane, objs: Sequence[dict[str, Any]]) -> None:
    kube = cp.kube()
    for crd in objs:
        kube.create(collection_path(crd), crd, exist_ok=True)

    def established() -> bool:
        for crd in objs:
            got = kube.get(
                f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}"
            )
            conds = {c["type"]: c["status"] for c in got.get("status", {}).get("conditions", [])}
            if conds.get("Established") != "True":
                return False
        return True

    wait_until("CRDs established", established, CONTROLLER_TIMEOUT, cp.apiserver)


def loopback_certificates(work: Path, ca_name: str) -> bytes:
    """A CA and a serving pair for 127.0.0.1 in `work` (tls.crt/tls.key); the CA PEM. For a
    controller whose release makes its certificate for a Service name, which out of
    cluster does not exist: its webhooks are called at https://127.0.0.1:PORT instead."""
    work.mkdir(parents=True, exist_ok=True)

    def ssl_(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)

    ca_key, ca = work / "ca.key", work / "ca.crt"
    ssl_("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-keyout", str(ca_key),
         "-out", str(ca), "-subj", f"/CN={ca_name}",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    csr = work / "tls.csr"
    ssl_("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(work / "tls.key"),
         "-out", str(csr), "-subj", "/CN=127.0.0.1")  # fmt: skip
    ext = work / "ext.cnf"
    ext.write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    ssl_("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key),
         "-CAcreateserial", "-days", "2", "-extfile", str(ext), "-out", str(work / "tls.crt"))  # fmt: skip
    return ca.read_bytes()


def by_url(cfg: Mapping[str, Any], port: int, ca: bytes) -> dict[str, Any]:
    """A released webhook configuration calling https://127.0.0.1:PORT<its service path>."""
    out = copy.deepcopy(dict(cfg))
    for hook in out["webhooks"]:
        path = hook["clientConfig"]["service"].get("path", "/")
        hook["clientConfig"] = {
            "url": f"https://127.0.0.1:{port}{path}",
            "caBundle": base64.b64encode(ca).decode(),
        }
    return out


def register_webhooks(cp: ControlPlane, configs: Sequence[Mapping[str, Any]]) -> None:
    """Create or replace these webhook configurations."""
    kube = cp.kube()
    for cfg in configs:
        base = f"/apis/admissionregistration.k8s.io/v1/{WEBHOOK_CONFIGS[cfg['kind']]}"
        name = cfg["metadata"]["name"]
        try:
            current = kube.get(f"{base}/{name}")
        except KubeError as exc:
            if exc.status != 404:
                raise
            kube.create(base, cfg)
            continue
        body = dict(copy.deepcopy(cfg))
        body["metadata"] = {
            **body["metadata"],
            "resourceVersion": current["metadata"]["resourceVersion"],
        }
        kube.request("PUT", f"{base}/{name}", body)


def insecure() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def wait_bound(
    cp: ControlPlane, namespace: str, names: Sequence[str], timeout: float = CONTROLLER_TIMEOUT
) -> dict[str, str]:
    """Until the scheduler bound each pod: pod -> node. Under load it may first mark a pod
    Unschedulable (before its informers saw a node or a coordinator) and requeue it on
    their arrival, so the binding itself is waited for."""
    nodes: dict[str, str] = {}

    def bound() -> bool:
        for name in names:
            if name not in nodes:
                node = cp.pod(namespace, name)["spec"].get("nodeName")
                if not node:
                    return False
                nodes[name] = node
        return True

    wait_until(f"pods bound in {namespace}", bound, timeout, cp.scheduler, interval=0.2)
    return nodes


# the API server's answer to a dry-run create: (HTTP status, body, warnings)
Answer = tuple[int, dict[str, Any], list[str]]


def wait_answered(
    cp: ControlPlane, probe: Mapping[str, Any], answered: Callable[[Answer], bool], what: str
) -> None:
    """Until the API server's answer for `probe` (a dry run) is the one `answered` expects
    of the policies just installed (their own answer, not an earlier version's nor none);
    a timeout names the last answer."""
    last: list[Answer] = []

    def probed() -> bool:
        last[:] = [create_pod_raw(cp, probe)]
        return answered(last[0])

    try:
        wait_admitted(what, probed)
    except TimeoutError as exc:
        status, body, warnings = last[0] if last else (0, {}, [])
        shown = project(body) if status == 201 else body.get("message")
        raise TimeoutError(f"{exc}; last answer {status}: {shown}; warnings {warnings}") from exc


def wait_admitted(
    what: str, probe: Callable[[], bool], timeout: float = CONTROLLER_TIMEOUT
) -> None:
    """The API server picks up a new webhook configuration asynchronously: probe it."""
    end = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > end:
            raise TimeoutError(f"{what}: not within {timeout:g}s")
        time.sleep(0.2)
