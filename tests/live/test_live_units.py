"""Pieces of snapshot and audit without a control plane: audit core, Prometheus, paging, faults."""

from __future__ import annotations

import copy
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from live_kit import EXAMPLE, NS, docs, example_nodes, example_policies, fake_prometheus, pods_of

from topogen.audit import audit_json, audit_table
from topogen.audit.core import audit
from topogen.audit.live import build_inputs, gpu_by_pod, gpu_query
from topogen.audit.prometheus import query_prometheus
from topogen.config import load_config
from topogen.errors import TopogenError
from topogen.sources.live import (
    NODE,
    ClusterObjects,
    LiveError,
    LiveSource,
    minimal,
    pod_record,
    read_cluster,
)

ZONE = {"gpu-a1": "zone-a", "gpu-a2": "zone-a", "cpu-b1": "zone-b", "cpu-b2": "zone-b"}


def _objects() -> ClusterObjects:
    from topogen.sources.live import CNP

    items = [minimal(NODE, n) for n in example_nodes()]
    items += [minimal(CNP, p) for p in example_policies()]
    return ClusterObjects(tuple(items))


def _api_pod(pod: dict[str, Any], node: str, phase: str = "Running") -> dict[str, Any]:
    body = copy.deepcopy(pod)
    body["metadata"].update(uid="u", resourceVersion="1", managedFields=[{}])
    body["spec"]["nodeName"] = node
    body["status"] = {"phase": phase}
    return body


def _inputs(pods: list[dict[str, Any]], gpu: dict[tuple[str, str], float] | None = None) -> Any:
    cfg = load_config(EXAMPLE / "topogen.yaml")
    records = [pod_record(p, NS) for p in pods]
    return build_inputs(
        cfg.clusters[0],
        _objects(),
        records,
        groups=cfg.groups,
        gpu=gpu,
        idle_threshold=cfg.monitoring.idle_gpu_utilisation,
    )


def _before(placement: dict[str, str], phase: str = "Running") -> list[dict[str, Any]]:
    return [
        _api_pod(p, placement.get(p["metadata"]["name"], ""), phase)
        for p in pods_of(docs(EXAMPLE / "workloads" / "before"))
    ]


SPLIT = {
    "trainer-coordinator-0": "cpu-b1",
    "trainer-workers-0": "gpu-a1",
    "trainer-workers-1": "gpu-a1",
    "trainer-workers-2": "gpu-a2",
    "trainer-workers-3": "gpu-a2",
}


def test_split_group_is_broken_with_denied_paths() -> None:
    report = audit(_inputs(_before(SPLIT)))
    (group,) = report.groups
    assert group.broken and {f.kind for f in group.flags} == {"SPLIT_ZONES", "PATH_DENIED"}
    assert group.zones == ("zone-a", "zone-b")
    table = audit_table(report)
    assert (
        "BROKEN  ml-training job ml-demo/ml-training: 5 pods, 5 Running, in zone-a, zone-b" in table
    )
    assert '"status": "broken"' in audit_json(report)


def test_pending_pod_without_eligible_node_is_flagged_by_placement() -> None:
    pods = _before(SPLIT)
    gpu_hungry = pods[1]
    gpu_hungry["spec"]["nodeName"] = ""
    gpu_hungry["status"] = {"phase": "Pending"}  # scheduler has not said anything yet
    gpu_hungry["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "8"
    gpu_hungry["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "8"
    (group,) = audit(_inputs(pods)).groups
    pending = [f for f in group.flags if f.kind == "PENDING_UNSCHEDULABLE"]
    assert len(pending) == 1 and "insufficient nvidia.com/gpu" in pending[0].message


def test_idle_gpus_need_every_pod_running_and_samples_for_each() -> None:
    together = {k: ("gpu-a1" if k.endswith(("0", "1")) else "gpu-a2") for k in SPLIT}
    pods = _before(together)
    for p in pods:
        p["metadata"]["labels"]["zone"] = "zone-a"
    workers = [p["metadata"]["name"] for p in pods if "workers" in p["metadata"]["name"]]
    idle = {(NS, w): 3.0 for w in workers}
    (group,) = audit(_inputs(pods, idle)).groups
    assert [f.kind for f in group.flags] == ["IDLE_GPUS"]
    busy = {**idle, (NS, workers[0]): 55.0}
    assert not audit(_inputs(pods, busy)).groups[0].flags
    partial = {(NS, w): 3.0 for w in workers[1:]}
    report = audit(_inputs(pods, partial))
    assert (
        not report.groups[0].flags and "no GPU utilisation samples for 1 of 4" in report.warnings[0]
    )
    assert not audit(_inputs(pods, None)).groups[0].flags  # no Prometheus: no verdict on GPUs


def test_gpu_samples_prefer_exported_pod_labels() -> None:
    samples = [
        ({"namespace": "gpu-operator", "exported_namespace": NS, "exported_pod": "w"}, 10.0),
        ({"namespace": NS, "pod": "w"}, 30.0),
        ({"pod": "nolabel"}, 1.0),
    ]
    assert gpu_by_pod(samples) == {(NS, "w"): 20.0}
    q = gpu_query("DCGM_FI_DEV_GPU_UTIL", ["b", "a", "a"])
    assert 'namespace=~"a|b"' in q and 'exported_namespace=~"a|b"' in q


def test_prometheus_query_round_trip() -> None:
    with fake_prometheus([({"namespace": NS, "pod": "p"}, 42.0)]) as url:
        assert query_prometheus(url, "up", 5) == [({"namespace": NS, "pod": "p"}, 42.0)]
    with pytest.raises(LiveError, match="must be an http"):
        query_prometheus("ftp://x", "up", 1)


def test_no_kubeconfig_anywhere_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(TopogenError, match="no kubeconfig found"):
        read_cluster(LiveSource(timeout=5))
    bad = tmp_path / "bad"
    bad.write_text("clusters: [1, 2\n")
    with pytest.raises(TopogenError, match="kubeconfig"):
        read_cluster(LiveSource(kubeconfig=str(bad), timeout=5))


def test_expired_continue_token_restarts_the_list() -> None:
    from topogen.sources import live

    calls: list[str | None] = []

    class Session(live._Session):
        def __init__(self) -> None:
            self.host = "https://h"

        def _page(self, kind: Any, namespace: Any, token: str | None) -> dict[str, Any]:
            calls.append(token)
            if token is not None:
                raise live._Expired()
            if len(calls) == 1:
                return {"items": [{"n": 1}], "metadata": {"continue": "t1"}}
            return {"items": [{"n": 1}, {"n": 2}], "metadata": {}}

    assert Session()._list(live.NODE) == [{"n": 1}, {"n": 2}]
    assert calls == [None, "t1", None]


def _trickling_server() -> tuple[socket.socket, threading.Event]:
    """Answers every connection with one byte of an HTTP response every 0.3 s, forever."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            for b in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 10_000:
                if stop.wait(0.3):
                    return
                try:
                    conn.sendall(bytes([b]))
                except OSError:
                    return

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return server, stop


def test_an_answer_trickling_in_is_cut_at_the_budget(tmp_path: Path) -> None:
    server, stop = _trickling_server()
    port = server.getsockname()[1]
    config = tmp_path / "kubeconfig"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "slow",
                "clusters": [{"name": "slow", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "slow", "context": {"cluster": "slow", "user": "u"}}],
            }
        )
    )
    start = time.monotonic()
    try:
        # the deadline between pages, or the read timeout inside one when a byte comes
        # later than what is left of the budget (a loaded machine): either names the budget
        with pytest.raises(
            LiveError, match=r"took longer than 1\.5s|did not answer within the 1\.5s budget"
        ):
            read_cluster(LiveSource(kubeconfig=str(config), timeout=1.5))
    finally:
        stop.set()
        server.close()
    # bounded: the server would trickle for 50 minutes; the grace covers a loaded CI machine
    assert time.monotonic() - start < 1.5 + 10


def test_prometheus_errors_are_one_line() -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)  # accepts (in the kernel) and never answers
    url = f"http://127.0.0.1:{silent.getsockname()[1]}"
    start = time.monotonic()
    try:
        with pytest.raises(LiveError, match="did not answer in time"):
            query_prometheus(url, "up", 1.0)
    finally:
        silent.close()
    assert time.monotonic() - start < 4
    bad = {"status": "error", "errorType": "bad_data", "error": "parse error at char 3"}
    with (
        fake_prometheus([], status=400, body=bad) as url400,
        pytest.raises(LiveError, match="answered 400 Bad Request: parse error at char 3"),
    ):
        query_prometheus(url400, "up{", 5)
    matrix = {"status": "success", "data": {"resultType": "matrix", "result": []}}
    with (
        fake_prometheus([], body=matrix) as url_matrix,
        pytest.raises(LiveError, match="expected a vector, got matrix"),
    ):
        query_prometheus(url_matrix, "up[5m]", 5)
