"""The live cluster: the only module that talks to the API server.

Reads Nodes, Namespaces, Cilium and Kubernetes network policies (for `topogen
snapshot` and `topogen audit`) and the Pods of training groups, page by page
(limit/continue), through the kubernetes client with a kubeconfig or the
in-cluster service account. Every read is bounded in time: each request gets
the time left of one budget (`timeout`), urllib3 retries are off, and a read
that still overruns is abandoned. Failures become one-line LiveError messages
(exit 2). A missing Cilium CRD (404 on cilium.io) means "no Cilium policies",
reported once as a warning.

Objects come back reduced to what topogen reads: no managedFields,
resourceVersion, uid, timestamps, annotations or status beyond allocatable.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import yaml

from topogen.errors import InputError, TopogenError
from topogen.sources.live_objects import (
    AUTOSCALING,
    CCNP,
    CILIUM_CONFIG,
    CILIUM_NAMESPACE,
    CNP,
    CONFIG_MAP,
    NAMESPACE,
    NETPOL,
    NODE,
    POD,
    SNAPSHOT_KINDS,
    ClusterObjects,
    Kind,
    PodRecord,
    item_order,
    kind_plural,
    minimal,
    pod_record,
)
from topogen.textui import step
from topogen.yamlfast import yaml_unsafe_in_json

__all__ = [
    "AUTOSCALING",
    "CCNP",
    "CNP",
    "DEFAULT_TIMEOUT",
    "NODE",
    "SNAPSHOT_API_VERSION",
    "ClusterObjects",
    "LiveError",
    "LiveSource",
    "PodRecord",
    "check_snapshot",
    "is_timeout",
    "minimal",
    "pod_record",
    "read_cluster",
    "read_cluster_and_pods",
    "snapshot_document",
    "snapshot_yaml",
]

DEFAULT_TIMEOUT = 30.0
PAGE_SIZE = 500
SNAPSHOT_API_VERSION = "topogen.io/v1alpha1"
SNAPSHOT_KIND = "TopogenSnapshot"
_CONNECT_TIMEOUT = 5.0
_GRACE = 1.0  # a read still running this long after its budget is abandoned

T = TypeVar("T")


class LiveError(TopogenError):
    """The live cluster (or Prometheus) could not be read. Exit code 2."""


@dataclass(frozen=True)
class LiveSource:
    """Where and how to reach the cluster: a kubeconfig context, or in-cluster."""

    context: str | None = None
    kubeconfig: str | None = None  # default: $KUBECONFIG, ~/.kube/config, then in-cluster
    timeout: float = DEFAULT_TIMEOUT  # seconds for the whole read, every request included
    page_size: int = PAGE_SIZE


# --- public entry points --------------------------------------------------------------


def read_cluster(source: LiveSource) -> ClusterObjects:
    """Nodes, Namespaces and network policies of the live cluster (what a snapshot holds)."""
    return _bounded(source, lambda session: session.cluster_objects())


def read_cluster_and_pods(
    source: LiveSource, namespaces: Sequence[str]
) -> tuple[ClusterObjects, tuple[PodRecord, ...]]:
    """What `topogen audit` needs: the cluster objects and the Pods of these namespaces."""

    def read(session: _Session) -> tuple[ClusterObjects, tuple[PodRecord, ...]]:
        objects = session.cluster_objects()
        pods = [p for ns in sorted(set(namespaces)) for p in session.pods(ns)]
        return objects, tuple(pods)

    return _bounded(source, read)


def snapshot_document(
    objects: ClusterObjects, pods: Sequence[Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """`pods`: where the groups' jobs run (sources/running.py), None: not read."""
    doc: dict[str, Any] = {
        "apiVersion": SNAPSHOT_API_VERSION,
        "kind": SNAPSHOT_KIND,
        "items": [dict(i) for i in objects.items],
    }
    if pods is not None:
        doc["pods"] = [dict(p) for p in pods]
    return doc


SNAPSHOT_HEADER = (
    "# topogen snapshot: the cluster's Nodes, Namespaces, NodePools and node groups, network\n"
    "# policies and the Cilium agent's settings (its cilium-config ConfigMap), and with -c where\n"
    "# the groups' jobs run, reduced to what topogen reads. Written by `topogen snapshot`; do not\n"
    "# edit.\n"
    "# Name this file under clusters[].nodes in topogen.yaml (it provides the rest too).\n"
)


def snapshot_yaml(objects: ClusterObjects, pods: Sequence[Mapping[str, Any]] | None = None) -> str:
    """The snapshot as deterministic YAML: sorted items, sorted keys, no timestamps.

    The body is JSON, which is YAML (every YAML tool reads it, diffs stay a line per
    field) and which topogen reads with the json module, ~9x faster than block YAML on
    a 5,000-node snapshot (yamlfast.py)."""
    return SNAPSHOT_HEADER + json_yaml(snapshot_document(objects, pods))


def check_snapshot(text: str) -> None:
    """A snapshot is written only when topogen reads it back: an object the API server
    sent that topogen would refuse (a bad name, label or quantity) fails here, before
    anything is written, naming the object."""
    from topogen.sources.cilium_config import read_cilium_config
    from topogen.sources.nodes import read_nodes
    from topogen.sources.objects import flatten
    from topogen.sources.policies import read_policies
    from topogen.sources.pools import read_pools
    from topogen.sources.running import running_pods
    from topogen.sources.workloads import read_namespaces
    from topogen.sources.yamlio import Document
    from topogen.yamltext import load_yaml_text

    try:
        docs = load_yaml_text(text, "the snapshot")
        parsed = [Document(d, "the snapshot", i) for i, d in enumerate(docs) if d]
        objs = list(flatten(parsed))
        running_pods(parsed)
        # what the cluster stored, its API server accepted: CIDRs as any version takes them
        read_nodes(objs, "topology.kubernetes.io/zone", strict_cidrs=False)
        read_pools(objs, [], [], "topology.kubernetes.io/zone", "the snapshot")
        read_policies(objs, strict_cidrs=False)
        read_namespaces(objs)
        read_cilium_config(objs)
    except InputError as exc:
        raise LiveError(
            f"the cluster sent what topogen cannot read, so nothing was written: {exc}"
        ) from None


def json_yaml(doc: Any) -> str:
    """`doc` as indented JSON that PyYAML reads as the same data: characters YAML does
    not print or reads as line breaks are escaped (json.dumps leaves them raw)."""
    text = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False)
    return yaml_unsafe_in_json().sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


# --- one bounded read ------------------------------------------------------------------


def _bounded(source: LiveSource, read: Callable[[_Session], T]) -> T:
    """Run `read` against a new session; give up once `source.timeout` (plus grace) is spent.

    Each request already gets the time left as its urllib3 timeout; the thread is the
    backstop for answers that trickle in slowly enough to reset every socket timeout.
    """
    import kubernetes.client  # noqa: F401  (loaded before the clock starts: it takes a while)

    deadline = time.monotonic() + source.timeout
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            session = _Session(source, deadline)
            box["host"] = session.host
            box["value"] = read(session)
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=run, name="topogen-live-read", daemon=True)
    worker.start()
    worker.join(source.timeout + _GRACE)
    if worker.is_alive():
        where = box.get("host") or "the API server"
        raise LiveError(
            f"reading the cluster took longer than {source.timeout:g}s ({where} answers too "
            "slowly)",
            hint="raise --timeout or check the API server",
        )
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


class _Session:
    """One kubernetes ApiClient with every request bounded by the shared deadline."""

    def __init__(self, source: LiveSource, deadline: float) -> None:
        from kubernetes import client  # imported here: `topogen analyze` never pays for it

        self.source = source
        self.deadline = deadline
        self.api = _api_client(source)
        self.host = str(self.api.configuration.host)
        self.core = client.CoreV1Api(self.api)
        self.net = client.NetworkingV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)

    # -- reads --

    def cluster_objects(self) -> ClusterObjects:
        items: list[dict[str, Any]] = []
        missing: list[str] = []
        for kind in SNAPSHOT_KINDS:
            try:
                items.extend(minimal(kind, o) for o in self._list(kind))
            except _NotFound:
                if kind in AUTOSCALING:
                    continue
                if kind.group != "cilium.io":
                    raise LiveError(
                        f"{self.host} does not serve {kind.api_version} {kind.plural}"
                    ) from None
                missing.append(kind.kind)
        warnings = []
        if missing:
            warnings.append(
                f"{self.host} has no {' or '.join(missing)} CRD (cilium.io/v2): reading no "
                f"Cilium {'policies' if len(missing) == 2 else kind_plural(missing[0])}"
            )
        config, why = self.cilium_config()
        items.extend(config)
        warnings.extend(why)
        items.sort(key=item_order)
        return ClusterObjects(tuple(items), tuple(warnings))

    def cilium_config(self) -> tuple[list[dict[str, Any]], list[str]]:
        """The agent's cilium-config ConfigMap (get, in Cilium's namespace), reduced; or
        none and why (missing, or not granted: the verdicts then use Cilium's defaults)."""
        where = f"{CILIUM_NAMESPACE}/{CILIUM_CONFIG}"

        def call(opts: dict[str, Any]) -> Any:
            return self.core.read_namespaced_config_map(CILIUM_CONFIG, CILIUM_NAMESPACE, **opts)

        try:
            doc = self._send(call, CONFIG_MAP, CILIUM_NAMESPACE, self._options(None), "get")
        except _NotFound as exc:
            why = (
                "forbidden (403): grant get as in argocd/snapshot-rbac.yaml"
                if exc.args
                else "missing"
            )
            return [], [
                f"{self.host}: ConfigMap {where} {why}: the Cilium settings are Cilium's "
                "defaults, unless topogen.yaml's clusters[].cilium says otherwise"
            ]
        return [minimal(CONFIG_MAP, doc)], []

    def pods(self, namespace: str) -> list[PodRecord]:
        try:
            return [pod_record(o, namespace) for o in self._list(POD, namespace)]
        except _NotFound:
            return []

    # -- paging and errors --

    def _list(self, kind: Kind, namespace: str | None = None) -> list[Mapping[str, Any]]:
        """Every object, page by page (limit/continue): one consistent list."""
        items: list[Mapping[str, Any]] = []
        token: str | None = None
        restarted = False
        while True:
            try:
                page = self._page(kind, namespace, token)
            except _Expired:
                if restarted:
                    raise LiveError(f"{self.host}: listing {kind.plural} kept expiring") from None
                restarted, token = True, None  # the continue token expired: start again
                items.clear()
                continue
            got = page.get("items") or []
            if not isinstance(got, list) or not all(isinstance(i, dict) for i in got):
                raise LiveError(f"{self.host}: listing {kind.plural} returned no list of objects")
            items.extend(got)
            meta = page.get("metadata")
            token = (meta.get("continue") if isinstance(meta, dict) else None) or None
            step(f"{self.host}: {len(items)} {kind.plural} read" + ("..." if token else ""))
            if not token:
                return items

    def _page(self, kind: Kind, namespace: str | None, token: str | None) -> dict[str, Any]:
        opts = self._options(token)
        opts["limit"] = self.source.page_size
        return self._send(lambda o: self._call(kind, namespace, o), kind, namespace, opts)

    def _options(self, token: str | None) -> dict[str, Any]:
        """A request's options: the time left of the budget, the raw answer."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise LiveError(
                f"reading the cluster took longer than {self.source.timeout:g}s ({self.host} "
                "answers too slowly)",
                hint="raise --timeout or check the API server",
            )
        opts: dict[str, Any] = {
            "_preload_content": False,
            "_request_timeout": (min(_CONNECT_TIMEOUT, left), left),
        }
        if token:
            opts["_continue"] = token
        return opts

    def _send(
        self,
        call: Callable[[dict[str, Any]], Any],
        kind: Kind,
        namespace: str | None,
        opts: dict[str, Any],
        verb: str = "list",
    ) -> dict[str, Any]:
        """One request; its answer as a JSON object. 404 (and for a get, 403): _NotFound."""
        from kubernetes.client.exceptions import ApiException
        from kubernetes.config.config_exception import ConfigException

        try:
            data = call(opts).data
        except ApiException as exc:
            status = int(exc.status or 0)
            if status == 404:
                raise _NotFound() from None
            if status == 403 and verb == "get":
                raise _NotFound(status) from None
            if status == 410 and "_continue" in opts:
                raise _Expired() from None
            raise LiveError(_api_error(self.host, kind, namespace, status, exc)) from None
        except ConfigException as exc:  # e.g. an exec credential plugin failing mid-read
            raise LiveError(f"kubeconfig credentials: {exc}") from None
        except Exception as exc:
            raise LiveError(_transport_error(self.host, exc, self.source.timeout)) from None
        try:
            doc = json.loads(data)
        except ValueError:
            raise LiveError(f"{self.host}: {verb} {kind.plural} returned no JSON") from None
        if not isinstance(doc, dict):
            raise LiveError(f"{self.host}: {verb} {kind.plural} returned no object")
        return doc

    def _call(self, kind: Kind, namespace: str | None, opts: dict[str, Any]) -> Any:
        if kind is NODE:
            return self.core.list_node(**opts)
        if kind is NAMESPACE:
            return self.core.list_namespace(**opts)
        if kind is POD:
            return self.core.list_namespaced_pod(namespace or "default", **opts)
        if kind is NETPOL:
            return self.net.list_network_policy_for_all_namespaces(**opts)
        return self.custom.list_cluster_custom_object(kind.group, kind.version, kind.plural, **opts)


class _NotFound(Exception):
    pass


class _Expired(Exception):
    pass


def _api_client(source: LiveSource) -> Any:
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    cfg = client.Configuration()
    path = source.kubeconfig or os.environ.get("KUBECONFIG") or ""
    default = os.path.expanduser("~/.kube/config")
    try:
        if path or os.path.exists(default) or source.context:
            named = [os.path.expanduser(p) for p in (path or default).split(os.pathsep) if p]
            files = [p for p in named if os.path.exists(p)]
            if not files:  # like kubectl, a KUBECONFIG list may name files that do not exist
                raise LiveError(
                    f"kubeconfig {os.pathsep.join(named)} does not exist",
                    hint="pass --kubeconfig or set KUBECONFIG",
                )
            config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=os.pathsep.join(files),
                context=source.context,
                client_configuration=cfg,
                persist_config=False,
            )
        elif os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        else:
            raise LiveError(
                "no kubeconfig found and not running inside a cluster",
                hint="pass --kubeconfig or set KUBECONFIG",
            )
    except ConfigException as exc:
        raise LiveError(f"kubeconfig: {_one_line(str(exc))}") from None
    except (OSError, yaml.YAMLError, ValueError, TypeError) as exc:
        raise LiveError(
            f"kubeconfig {path or default} cannot be read: {_one_line(str(exc))}"
        ) from None
    cfg.retries = False  # fail fast: one attempt per request, no hidden back-off
    if hasattr(cfg, "client_go_retries"):
        cfg.client_go_retries = False
    return client.ApiClient(cfg)


def _api_error(host: str, kind: Kind, namespace: str | None, status: int, exc: Any) -> str:
    where = f" in namespace {namespace}" if namespace else ""
    what = f"list {kind.plural}{where}"
    message = _status_message(getattr(exc, "body", None))
    if status == 401:
        return (
            f"{host} rejected the credentials (401 Unauthorized): check the kubeconfig "
            "user (token or certificate expired or wrong?)"
        )
    if status == 403:
        detail = f": {message}" if message else ""
        return (
            f"{host} forbids {what} (403 Forbidden){detail}; grant list as in "
            "argocd/snapshot-rbac.yaml"
        )
    reason = getattr(exc, "reason", "") or ""
    detail = f": {message}" if message else ""
    return f"{host}: {what} failed ({status} {reason}){detail}"


def _status_message(body: Any) -> str:
    if not body:
        return ""
    try:
        doc = json.loads(body)
    except (TypeError, ValueError):
        return _one_line(str(body))[:200]
    return _one_line(str(doc.get("message", ""))) if isinstance(doc, dict) else ""


def _transport_error(host: str, exc: BaseException, timeout: float) -> str:
    reason = exc
    while True:  # urllib3 wraps the cause (MaxRetryError.reason, ProtocolError.args)
        inner = getattr(reason, "reason", None)
        if isinstance(inner, BaseException) and inner is not reason:
            reason = inner
            continue
        break
    text = str(reason)
    if "refused" in text.lower():  # before the timeout test: urllib3's NewConnectionError
        return f"cannot reach the API server at {host}: connection refused"  # is a timeout type
    if is_timeout(reason):
        return f"{host} did not answer within the {timeout:g}s budget (timeout)"
    if "ssl" in type(reason).__name__.lower() or "certificate" in text.lower():
        return f"TLS error talking to {host}: {_one_line(text)}"
    return f"cannot reach the API server at {host}: {_one_line(text) or type(reason).__name__}"


def is_timeout(exc: Any) -> bool:
    """Whether a transport error (urllib3, socket, urllib) is a timeout."""
    if "timed out" in str(exc).lower():
        return True
    if not isinstance(exc, BaseException):
        return False
    names = {c.__name__ for c in type(exc).__mro__}
    if "NewConnectionError" in names:  # urllib3 derives it from ConnectTimeoutError
        return False
    timeouts = {"TimeoutError", "ReadTimeoutError", "ConnectTimeoutError", "timeout"}
    return bool(names & timeouts)


def _one_line(text: str) -> str:
    return " ".join(text.split())
