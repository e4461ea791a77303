"""What the admission-controller harnesses share: the webhook admission plugins, objects
from an upstream release manifest, CRDs established, probes."""

from __future__ import annotations

import re
import ssl
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml
from live_harness import STARTUP_TIMEOUT, ControlPlane, collection_path, wait_until

WEBHOOK_PLUGINS = ("MutatingAdmissionWebhook", "ValidatingAdmissionWebhook")


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

    wait_until("CRDs established", established, STARTUP_TIMEOUT, cp.apiserver)


def insecure() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def wait_admitted(what: str, probe: Callable[[], bool], timeout: float = 60) -> None:
    """The API server picks up a new webhook configuration asynchronously: probe it."""
    end = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > end:
            raise TimeoutError(f"{what}: not within {timeout:g}s")
        time.sleep(0.2)
