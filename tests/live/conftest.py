"""The live-cluster harness: one real control plane per test process.

etcd, kube-apiserver and kube-scheduler come from `make tools` (.tools/bin). Without
them the live tests skip locally and fail under CI (tests/tooling.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from live_harness import ControlPlane, start_control_plane

from tooling import TOOLS_BIN, require_tool


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    for tool in ("etcd", "kube-apiserver", "kube-scheduler"):
        require_tool(tool)
    work = tmp_path_factory.mktemp("control-plane")
    cp = start_control_plane(TOOLS_BIN, work)
    try:
        yield cp
    finally:
        cp.stop()
        if os.environ.get("TOPOGEN_KEEP_CLUSTER_LOGS"):
            print(f"control-plane logs kept in {work}")


@pytest.fixture
def cluster(control_plane: ControlPlane) -> Iterator[ControlPlane]:
    """The control plane, emptied of the Nodes, Pods and policies earlier tests made."""
    if not control_plane.apiserver or not control_plane.apiserver.alive():
        control_plane.restart_apiserver()
    control_plane.reset()
    yield control_plane


@pytest.fixture
def admin_kubeconfig(control_plane: ControlPlane) -> Path:
    from live_harness import ADMIN_TOKEN

    return control_plane.kubeconfig("admin", ADMIN_TOKEN)
