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

from topogen.errors import TopogenError
from topogen.sources.pools import CAPI_GROUP, CAPI_KINDS, reduced_pool_object
from topogen.textui import step
from topogen.yamlfast import YAML_UNSAFE_IN_JSON

__all__ = [
    "DEFAULT_TIMEOUT",
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


@dataclass(frozen=True)
class _Kind:
    kind: str
    api_version: str
    plural: str
    namespaced: bool

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]


NAMESPACE = _Kind("Namespace", "v1", "namespaces", False)
NODE = _Kind("Node", "v1", "nodes", False)
CCNP = _Kind(
    "CiliumClusterwideNetworkPolicy", "cilium.io/v2", "ciliumclusterwidenetworkpolicies", False
)
CNP = _Kind("CiliumNetworkPolicy", "cilium.io/v2", "ciliumnetworkpolicies", True)
NETPOL = _Kind("NetworkPolicy", "networking.k8s.io/v1", "networkpolicies", True)
POD = _Kind("Pod", "v1", "pods", True)
# what autoscalers can add (sources/pools.py); a cluster without their CRDs has none
AUTOSCALING = (
    _Kind("NodePool", "karpenter.sh/v1", "nodepools", False),
    *(_Kind(k, f"{CAPI_GROUP}/v1beta1", f"{k.lower()}s", True) for k in CAPI_KINDS),
)
# also the order of a snapshot's items
SNAPSHOT_KINDS = (NAMESPACE, NODE, *AUTOSCALING, CCNP, CNP, NETPOL)


@dataclass(frozen=True)
class ClusterObjects:
    """Nodes, Namespaces and policies as minimal Kubernetes objects, sorted."""

    items: tuple[Mapping[str, Any], ...]
    warnings: tuple[str, ...] = ()

    def count(self, kind: str) -> int:
        return sum(1 for i in self.items if i["kind"] == kind)


@dataclass(frozen=True)
class PodRecord:
    """A live Pod: its object (metadata and spec, as a workload reader takes it) and status."""

    body: Mapping[str, Any]
    node: str  # spec.nodeName, "" while not bound
    phase: str
    unschedulable: str  # the scheduler's message when PodScheduled=False/Unschedulable
    terminating: bool = False

    @property
    def namespace(self) -> str:
        return str(self.body["metadata"].get("namespace", ""))

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])


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
    "# topogen snapshot: the cluster's Nodes, Namespaces, NodePools and node groups, and network\n"
    "# policies (and, with -c, where the groups' jobs run), reduced to what topogen reads.\n"
    "# Written by `topogen snapshot`; do not edit.\n"
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
        read_nodes(objs, "topology.kubernetes.io/zone")
        read_pools(objs, [], [], "topology.kubernetes.io/zone", "the snapshot")
        read_policies(objs)
        read_namespaces(objs)
    except TopogenError as exc:
        raise LiveError(
            f"the cluster sent what topogen cannot read, so nothing was written: {exc}"
        ) from None


def json_yaml(doc: Any) -> str:
    """`doc` as indented JSON that PyYAML reads as the same data: characters YAML does
    not print or reads as line breaks are escaped (json.dumps leaves them raw)."""
    text = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False)
    return YAML_UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


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
        items.sort(key=_item_order)
        return ClusterObjects(tuple(items), tuple(warnings))

    def pods(self, namespace: str) -> list[PodRecord]:
        try:
            return [pod_record(o, namespace) for o in self._list(POD, namespace)]
        except _NotFound:
            return []

    # -- paging and errors --

    def _list(self, kind: _Kind, namespace: str | None = None) -> list[Mapping[str, Any]]:
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

    def _page(self, kind: _Kind, namespace: str | None, token: str | None) -> dict[str, Any]:
        from kubernetes.client.exceptions import ApiException
        from kubernetes.config.config_exception import ConfigException

        left = self.deadline - time.monotonic()
        if left <= 0:
            raise LiveError(
                f"reading the cluster took longer than {self.source.timeout:g}s ({self.host} "
                "answers too slowly)",
                hint="raise --timeout or check the API server",
            )
        opts: dict[str, Any] = {
            "limit": self.source.page_size,
            "_preload_content": False,
            "_request_timeout": (min(_CONNECT_TIMEOUT, left), left),
        }
        if token:
            opts["_continue"] = token
        try:
            resp = self._call(kind, namespace, opts)
            data = resp.data
        except ApiException as exc:
            status = int(exc.status or 0)
            if status == 404:
                raise _NotFound() from None
            if status == 410 and token:
                raise _Expired() from None
            raise LiveError(_api_error(self.host, kind, namespace, status, exc)) from None
        except ConfigException as exc:  # e.g. an exec credential plugin failing mid-read
            raise LiveError(f"kubeconfig credentials: {exc}") from None
        except Exception as exc:
            raise LiveError(_transport_error(self.host, exc, self.source.timeout)) from None
        try:
            doc = json.loads(data)
        except ValueError:
            raise LiveError(f"{self.host}: listing {kind.plural} returned no JSON") from None
        if not isinstance(doc, dict):
            raise LiveError(f"{self.host}: listing {kind.plural} returned no list")
        return doc

    def _call(self, kind: _Kind, namespace: str | None, opts: dict[str, Any]) -> Any:
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


def _api_error(host: str, kind: _Kind, namespace: str | None, status: int, exc: Any) -> str:
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


def kind_plural(kind: str) -> str:
    return {
        "CiliumNetworkPolicy": "namespaced policies",
        "CiliumClusterwideNetworkPolicy": "clusterwide policies",
    }.get(kind, kind)


# --- reducing objects ---------------------------------------------------------------------


def minimal(kind: _Kind, body: Mapping[str, Any]) -> dict[str, Any]:
    """The object reduced to what topogen reads (and nothing that changes by itself)."""
    meta = body.get("metadata") or {}
    out_meta: dict[str, Any] = {"name": meta.get("name", "")}
    if kind.namespaced:
        out_meta["namespace"] = meta.get("namespace", "")
    if kind in (NODE, NAMESPACE) and meta.get("labels"):
        out_meta["labels"] = dict(meta["labels"])
    out: dict[str, Any] = {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": out_meta}
    if kind is NODE:
        spec = body.get("spec") or {}
        node_spec: dict[str, Any] = {}
        taints = [
            {k: t[k] for k in ("key", "value", "effect") if t.get(k)}
            for t in spec.get("taints") or ()
        ]
        if taints:
            node_spec["taints"] = taints
        if spec.get("unschedulable"):
            node_spec["unschedulable"] = True
        cidrs = spec.get("podCIDRs") or ([spec["podCIDR"]] if spec.get("podCIDR") else [])
        if cidrs:
            node_spec["podCIDRs"] = list(cidrs)
        if node_spec:
            out["spec"] = node_spec
        allocatable = (body.get("status") or {}).get("allocatable") or {}
        if allocatable:
            out["status"] = {"allocatable": {str(k): str(v) for k, v in allocatable.items()}}
    elif kind in AUTOSCALING:
        return reduced_pool_object(out, body)
    elif kind is not NAMESPACE:
        for key in ("spec", "specs"):  # policies: the rules as written (Cilium: one or a list)
            if body.get(key) is not None:
                out[key] = body[key]
    return out


def pod_record(body: Mapping[str, Any], namespace: str) -> PodRecord:
    """A live Pod as the workload readers take it, plus where the scheduler put it."""
    meta = body.get("metadata") or {}
    spec = body.get("spec") or {}
    status = body.get("status") or {}
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace") or namespace,
            "labels": dict(meta.get("labels") or {}),
            "annotations": {
                k: v
                for k, v in (meta.get("annotations") or {}).items()
                if k.startswith("kueue.x-k8s.io/")  # the only annotations topogen reads
            },
        },
        "spec": dict(spec),
    }
    unschedulable = ""
    for cond in status.get("conditions") or ():
        if (
            cond.get("type") == "PodScheduled"
            and cond.get("status") == "False"
            and cond.get("reason") == "Unschedulable"
        ):
            unschedulable = _one_line(str(cond.get("message") or "unschedulable"))
    return PodRecord(
        body=obj,
        node=str(spec.get("nodeName") or ""),
        phase=str(status.get("phase") or "Pending"),
        unschedulable=unschedulable,
        terminating=bool(meta.get("deletionTimestamp")),
    )


def _item_order(item: Mapping[str, Any]) -> tuple[int, str, str]:
    order = [k.kind for k in SNAPSHOT_KINDS]
    meta = item["metadata"]
    return order.index(item["kind"]), meta.get("namespace", ""), meta["name"]
