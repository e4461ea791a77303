"""A fake Kubernetes API server on loopback, serving what a test tells it to, for
`topogen snapshot` and `audit` cases that need no real control plane (tests/live has one).

Each path maps to (status, body bytes); an unknown path is a 404, as for a missing CRD.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["CILIUM_CONFIG", "EMPTY", "LISTS", "fake_apiserver", "kubeconfig", "with_items"]

LISTS = {
    "/api/v1/nodes": "NodeList",
    "/api/v1/namespaces": "NamespaceList",
    "/apis/networking.k8s.io/v1/networkpolicies": "NetworkPolicyList",
    "/apis/cilium.io/v2/ciliumnetworkpolicies": "CiliumNetworkPolicyList",
    "/apis/cilium.io/v2/ciliumclusterwidenetworkpolicies": "CiliumClusterwideNetworkPolicyList",
}


def _list(kind: str, items: list[Any]) -> bytes:
    return json.dumps({"kind": kind, "apiVersion": "v1", "metadata": {}, "items": items}).encode()


# the agent's settings, as a cluster with Cilium serves them
CILIUM_CONFIG = "/api/v1/namespaces/kube-system/configmaps/cilium-config"
_CILIUM_CONFIG_BODY = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "cilium-config", "namespace": "kube-system", "uid": "u"},
    "data": {"cluster-name": "default", "enable-policy": "default", "debug": "false"},
}
EMPTY = {path: (200, _list(kind, [])) for path, kind in LISTS.items()}
EMPTY[CILIUM_CONFIG] = (200, json.dumps(_CILIUM_CONFIG_BODY).encode())


@contextmanager
def fake_apiserver(routes: dict[str, tuple[int, bytes]]) -> Iterator[str]:
    """Serve `routes` (path -> status, body); yields the server's URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body = routes.get(self.path.split("?")[0], (404, b'{"kind":"Status"}'))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def kubeconfig(path: Path, url: str) -> Path:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": {"server": url}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}],
                "current-context": "fake",
            }
        )
    )
    return path


def with_items(path: str, items: Any) -> dict[str, tuple[int, bytes]]:
    """EMPTY, with `path` listing `items` (anything: hostile cases send non-lists)."""
    body = json.dumps({"kind": LISTS[path], "apiVersion": "v1", "metadata": {}, "items": items})
    return {**EMPTY, path: (200, body.encode())}
