"""Faults against the real API server: one clear line, exit 2, within a bounded time."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from live_harness import LIMITED_TOKEN, ControlPlane, free_port
from live_kit import NS, example_nodes, run_topogen, write_config

BOUND = 20.0  # seconds, the whole CLI run included (interpreter start, imports)


def _one_error_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("topogen: error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


def _run(*args: object) -> tuple[int, str, float]:
    start = time.monotonic()
    result = run_topogen(*args, timeout=120)
    return result.returncode, result.stderr, time.monotonic() - start


@pytest.fixture
def config(tmp_path: Path) -> Path:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text("apiVersion: v1\nkind: List\nitems: []\n")
    return write_config(tmp_path, nodes=[nodes])


def test_stopped_api_server(
    cluster: ControlPlane, admin_kubeconfig: Path, config: Path, tmp_path: Path
) -> None:
    assert cluster.apiserver is not None
    cluster.apiserver.kill()
    try:
        for args in (("snapshot", "-o", tmp_path / "s.yaml"), ("audit", "-c", config)):
            code, err, took = _run(*args, "--kubeconfig", admin_kubeconfig)
            line = _one_error_line(err)
            assert code == 2 and took < BOUND, (code, took, err)
            assert f"cannot reach the API server at {cluster.server}: connection refused" in line
        assert not (tmp_path / "s.yaml").exists()
    finally:
        cluster.restart_apiserver()


def test_unreachable_address(cluster: ControlPlane, tmp_path: Path) -> None:
    from live_harness import ADMIN_TOKEN

    nobody = cluster.kubeconfig("nobody", ADMIN_TOKEN, server=f"https://127.0.0.1:{free_port()}")
    code, err, took = _run("snapshot", "--kubeconfig", nobody, "-o", tmp_path / "s.yaml")
    assert code == 2 and took < BOUND
    assert "connection refused" in _one_error_line(err)


def test_wrong_token_is_401(cluster: ControlPlane, config: Path, tmp_path: Path) -> None:
    wrong = cluster.kubeconfig("wrong", "not-a-valid-token")
    for args in (("snapshot", "-o", tmp_path / "s.yaml"), ("audit", "-c", config)):
        code, err, took = _run(*args, "--kubeconfig", wrong)
        line = _one_error_line(err)
        assert code == 2 and took < BOUND
        assert "rejected the credentials (401 Unauthorized)" in line


def test_rbac_denial_is_403(cluster: ControlPlane, config: Path, tmp_path: Path) -> None:
    limited = cluster.kubeconfig("limited", LIMITED_TOKEN)
    code, err, took = _run("snapshot", "--kubeconfig", limited, "-o", tmp_path / "s.yaml")
    line = _one_error_line(err)
    assert code == 2 and took < BOUND
    assert "forbids list namespaces (403 Forbidden)" in line
    assert 'User "limited" cannot list resource "namespaces"' in line
    assert "argocd/snapshot-rbac.yaml" in line


def test_slow_api_server_times_out(
    cluster: ControlPlane, admin_kubeconfig: Path, config: Path, tmp_path: Path
) -> None:
    """A server that accepts connections and never answers (SIGSTOP): bounded by --timeout."""
    cluster.ensure_namespace(NS)
    cluster.create_nodes(example_nodes())
    assert cluster.apiserver is not None
    cluster.apiserver.pause()
    try:
        for args in (("snapshot", "-o", tmp_path / "s.yaml"), ("audit", "-c", config)):
            code, err, took = _run(*args, "--kubeconfig", admin_kubeconfig, "--timeout", "2")
            line = _one_error_line(err)
            assert code == 2, err
            assert took < 2 + 1 + 8, took  # budget, grace, interpreter start
            assert "did not answer within the 2s budget" in line or "took longer than 2s" in line
    finally:
        cluster.apiserver.resume()


def test_unreachable_prometheus(
    cluster: ControlPlane, admin_kubeconfig: Path, tmp_path: Path
) -> None:
    from live_kit import cli, example_policies

    cluster.ensure_namespace(NS)
    cluster.create_nodes(example_nodes())
    cluster.apply(example_policies())
    config = write_config(tmp_path, nodes=[tmp_path / "unused.yaml"])
    url = f"http://127.0.0.1:{free_port()}"
    result = cli("audit", "--kubeconfig", admin_kubeconfig, "-c", config, "--prometheus", url)
    assert result.exit_code == 2
    assert f"Prometheus at {url} cannot be reached" in _one_error_line(result.stderr)


def test_missing_kubeconfig(tmp_path: Path) -> None:
    code, err, _ = _run("snapshot", "--kubeconfig", tmp_path / "nope", "-o", tmp_path / "s")
    assert code == 2
    assert "does not exist" in _one_error_line(err)
