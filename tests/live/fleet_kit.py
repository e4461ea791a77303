"""Fast pod traffic for the fleet measure: kept-alive connections, a pod watch, settling.

`Client` keeps one HTTPS connection per thread (creating hundreds of pods one TLS
handshake each is most of the time otherwise). `PodWatch` follows every pod through the
API server's watch (no polling). `settle` returns once the scheduler has nothing left to
try: every pod known to the watch is bound or marked Unschedulable, the scheduler's
active and backoff queues are empty, and a sentinel pod created after that was tried
with no other attempt meanwhile (no quiet period: the barrier is the scheduler's own).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

from live_harness import ControlPlane, KubeError

__all__ = ["Client", "PodState", "PodWatch", "settle"]


class Client:
    """JSON requests over one kept-alive connection per thread."""

    def __init__(self, cp: ControlPlane) -> None:
        kube = cp.kube()
        url = urlsplit(kube.server)
        self.host, self.port = url.hostname or "127.0.0.1", url.port or 443
        self.ctx, self.token = kube.ctx, kube.token
        self.local = threading.local()

    def _conn(self, fresh: bool = False) -> http.client.HTTPSConnection:
        conn: http.client.HTTPSConnection | None = getattr(self.local, "conn", None)
        if conn is None or fresh:
            if conn is not None:
                conn.close()
            conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=60)
            self.local.conn = conn
        return conn

    def request(self, method: str, path: str, body: Any = None, **query: Any) -> Any:
        if query:
            path += "?" + urlencode(query)
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        for attempt in range(2):
            conn = self._conn(fresh=attempt > 0)
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
            except (http.client.HTTPException, OSError):
                if attempt:
                    raise
                continue
            if resp.status >= 400:
                raise KubeError(resp.status, raw.decode(errors="replace"))
            return json.loads(raw) if raw else None
        raise AssertionError("unreachable")

    def create_pods(self, batches: Sequence[Sequence[Mapping[str, Any]]], threads: int = 6) -> None:
        """Create each batch's pods in order (one job, as its controller would), batches in
        parallel."""

        def one(batch: Sequence[Mapping[str, Any]]) -> None:
            for pod in batch:
                ns = pod["metadata"]["namespace"]
                self.request("POST", f"/api/v1/namespaces/{ns}/pods", pod)

        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, batches))

    def delete_pods(self, keys: Iterable[tuple[str, str]], threads: int = 6) -> None:
        def one(key: tuple[str, str]) -> None:
            try:
                self.request(
                    "DELETE", f"/api/v1/namespaces/{key[0]}/pods/{key[1]}", gracePeriodSeconds=0
                )
            except KubeError as exc:
                if exc.status != 404:
                    raise

        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, list(keys)))


@dataclass
class PodState:
    node: str
    unschedulable: bool
    labels: dict[str, str]
    message: str = ""


def _state(pod: Mapping[str, Any]) -> PodState:
    cond = next(
        (
            c
            for c in (pod.get("status") or {}).get("conditions") or []
            if c.get("type") == "PodScheduled"
        ),
        {},
    )
    node = (pod.get("spec") or {}).get("nodeName") or ""
    return PodState(
        node,
        not node and cond.get("status") == "False" and cond.get("reason") == "Unschedulable",
        dict((pod.get("metadata") or {}).get("labels") or {}),
        str(cond.get("message") or ""),
    )


@dataclass
class PodWatch:
    """Every pod of the cluster as the API server's watch reports it."""

    cp: ControlPlane
    pods: dict[tuple[str, str], PodState] = field(default_factory=dict)
    _cond: threading.Condition = field(default_factory=threading.Condition)
    _stop: bool = False
    _error: BaseException | None = None

    def __enter__(self) -> PodWatch:
        listing = Client(self.cp).request("GET", "/api/v1/pods")
        with self._cond:
            for p in listing.get("items") or []:
                key = (p["metadata"]["namespace"], p["metadata"]["name"])
                if key != SENTINEL:
                    self.pods[key] = _state(p)
        self._rv = listing["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop = True
        conn = getattr(self, "_conn", None)
        if conn is not None and conn.sock is not None:
            with contextlib.suppress(OSError):
                conn.sock.shutdown(2)

    def _run(self) -> None:
        client = Client(self.cp)
        while not self._stop:
            query = urlencode(
                {"watch": "true", "resourceVersion": self._rv, "allowWatchBookmarks": "true",
                 "timeoutSeconds": "3600"}
            )  # fmt: skip
            conn = self._conn = http.client.HTTPSConnection(
                client.host, client.port, context=client.ctx, timeout=None
            )
            try:
                conn.request(
                    "GET",
                    f"/api/v1/pods?{query}",
                    headers={"Authorization": f"Bearer {client.token}"},
                )
                resp = conn.getresponse()
                if resp.status != 200:
                    raise KubeError(resp.status, resp.read().decode(errors="replace"))
                while not self._stop:
                    line = resp.readline()
                    if not line:
                        break
                    self._event(json.loads(line))
            except BaseException as exc:  # handed to the waiting thread
                if not self._stop:
                    with self._cond:
                        self._error = exc
                        self._cond.notify_all()
                return
            finally:
                conn.close()

    def _event(self, ev: Mapping[str, Any]) -> None:
        obj = ev.get("object") or {}
        meta = obj.get("metadata") or {}
        if ev.get("type") == "ERROR":
            raise KubeError(int(obj.get("code") or 500), str(obj.get("message")))
        self._rv = meta.get("resourceVersion", self._rv)
        if ev.get("type") == "BOOKMARK":
            return
        key = (meta.get("namespace", ""), meta.get("name", ""))
        if key == SENTINEL:  # settle's own probe, no pod of the fleet
            return
        with self._cond:
            if ev.get("type") == "DELETED":
                self.pods.pop(key, None)
            else:
                self.pods[key] = _state(obj)
            self._cond.notify_all()

    def wait(self, what: str, ready: Callable[[dict[tuple[str, str], PodState]], bool],
             timeout: float) -> None:  # fmt: skip
        end = time.monotonic() + timeout
        with self._cond:
            while not ready(self.pods):
                if self._error is not None:
                    raise RuntimeError(f"pod watch failed: {self._error}")
                left = end - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{what}: not within {timeout:g}s")
                self._cond.wait(min(left, 0.5))

    def snapshot(self) -> dict[tuple[str, str], PodState]:
        with self._cond:
            return dict(self.pods)


_METRIC = re.compile(r"^(scheduler_[a-z_]+)(\{[^}]*\})? ([0-9.eE+-]+)$", re.MULTILINE)


def _queue(cp: ControlPlane) -> tuple[float, float, tuple[float, ...]]:
    """(active + backoff pods, unschedulable pods, counters that move while it works)."""
    busy = stuck = 0.0
    counters: dict[str, float] = {}
    for name, labels, value in _METRIC.findall(cp.scheduler_metrics()):
        v = float(value)
        if name == "scheduler_pending_pods":
            if 'queue="active"' in labels or 'queue="backoff"' in labels:
                busy += v
            elif 'queue="unschedulable"' in labels:
                stuck += v
        elif name in _COUNTERS:
            counters[name] = counters.get(name, 0.0) + v
    return busy, stuck, tuple(counters.get(n, 0.0) for n in _COUNTERS)


def settle(cp: ControlPlane, watch: PodWatch, timeout: float = 300) -> None:
    """Until the scheduler has nothing left to try (see the module docstring): every pod
    known to the watch bound or Unschedulable and the active and backoff queues empty, then
    a barrier: a sentinel pod no node can take, created after that, tried by the scheduler
    (it handles the pods of its one watch in order, so it has handled every event before
    the sentinel) with no other attempt meanwhile. Otherwise, again."""
    end = time.monotonic() + timeout
    watch.wait(
        "every pod bound or unschedulable",
        lambda pods: all(p.node or p.unschedulable for p in pods.values()),
        timeout,
    )
    while time.monotonic() < end:
        busy, _, counters = _queue(cp)
        if not busy and _barrier(cp, counters, end):
            pods = watch.snapshot()
            if all(p.node or p.unschedulable for p in pods.values()):
                return
        time.sleep(0.05)
    raise TimeoutError(f"the scheduler did not settle within {timeout:g}s")


SENTINEL = ("default", "topogen-settle-sentinel")
_COUNTERS = ("scheduler_queue_incoming_pods_total", "scheduler_schedule_attempts_total")


def _attempts(counters: tuple[float, ...]) -> float:
    return counters[_COUNTERS.index("scheduler_schedule_attempts_total")]


def _barrier(cp: ControlPlane, counters: tuple[float, ...], end: float) -> bool:
    """Whether the scheduler tried the sentinel and nothing else since `counters` (its
    incoming-pod and attempt counters), its queues empty again."""
    ns, name = SENTINEL
    path = f"/api/v1/namespaces/{ns}/pods/{name}"
    client = Client(cp)
    client.request("POST", f"/api/v1/namespaces/{ns}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
        "spec": {"nodeSelector": {"topogen.io/settle-sentinel": "no-such-node"},
                 "containers": [{"name": "c", "image": "registry.example/none:1"}]},
    })  # fmt: skip
    try:
        while time.monotonic() < end:
            conditions = (client.request("GET", path).get("status") or {}).get("conditions") or []
            if any(c.get("reason") == "Unschedulable" for c in conditions):
                break
            time.sleep(0.05)
        busy, _, after = _queue(cp)
        # the sentinel's one attempt and no other (its add and its failure also count as
        # incoming pods, so attempts are what is compared)
        return not busy and _attempts(after) == _attempts(counters) + 1
    finally:
        client.request("DELETE", path, gracePeriodSeconds=0)
        while time.monotonic() < end:
            try:
                client.request("GET", path)
            except KubeError as exc:
                if exc.status == 404:
                    break
                raise
            time.sleep(0.05)
