"""What the admission-controller harnesses share: the webhook admission plugins, objects
from an upstream release manifest, CRDs established, probes."""

from __future__ import annotations

import re
import ssl
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from live_harness import ControlPlane, Process, collection_path, wait_until
from live_kit import create_pod_raw, project

WEBHOOK_PLUGINS = ("MutatingAdmissionWebhook", "ValidatingAdmissionWebhook")
# Waits on an admission controller's conditions (ready, policies registered or enforced,
# seen at admission): generous, since a loaded 2-core machine can take minutes; a wait
# ends as soon as its condition holds.
CONTROLLER_TIMEOUT = 300.0


class Controller:
    """A controller process of the harness's (`proc`, once started): stop, kill, alive."""

    proc: Process | None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.alive()


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
