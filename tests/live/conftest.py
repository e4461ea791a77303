"""The live-cluster harness: one real control plane per test process.

etcd, kube-apiserver and kube-scheduler come from `make tools` (.tools/bin). Without
them the live tests skip locally and fail under CI (tests/tooling.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from karpenter_harness import KarpenterPlane, start_karpenter
from karpenter_kit import INSTANCE_TYPES
from kueue_harness import Kueue, start_kueue
from kueue_kit import clear as clear_kueue
from kyverno_harness import PLUGINS, Kyverno, start_kyverno
from kyverno_kit import NAME
from live_harness import ControlPlane, start_control_plane
from webhook_harness import plane_with

from tooling import TOOLS_BIN, require_plane_tool, require_tool


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


@pytest.fixture(scope="session")
def kyverno_session(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ControlPlane, Kyverno]]:
    """A control plane with Kyverno's admission controller in front of it, for every
    test_live_kyverno*.py file this test process runs."""
    binary = require_plane_tool("kyverno-admission-controller")
    work = tmp_path_factory.mktemp("kyverno-plane")
    yield from plane_with(work, PLUGINS, lambda cp: start_kyverno(cp, binary, work / "kyverno"))


@pytest.fixture
def kyverno_plane(
    kyverno_session: tuple[ControlPlane, Kyverno],
) -> Iterator[tuple[ControlPlane, Kyverno]]:
    """The Kyverno plane, emptied of nodes, pods, policies; Kyverno running."""
    cp, k = kyverno_session
    if not k.alive():
        k.start()
    cp.reset()
    yield cp, k
    for kind in ("mutatingpolicies", "validatingpolicies"):
        cp.kube().delete(f"/apis/policies.kyverno.io/v1/{kind}")
    k.delete_generated()
    k.wait_unregistered([NAME + s for s in ("-mutate", "-validate")])


@pytest.fixture(scope="session")
def kueue_session(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ControlPlane, Kueue]]:
    """A control plane with Kueue's controller manager (TAS on) in front of it, for every
    test_live_kueue*.py file this test process runs."""
    binary = require_plane_tool("kueue")
    work = tmp_path_factory.mktemp("kueue-plane")
    yield from plane_with(work, PLUGINS, lambda cp: start_kueue(cp, binary, work / "kueue"))


@pytest.fixture
def kueue_plane(
    kueue_session: tuple[ControlPlane, Kueue],
) -> Iterator[tuple[ControlPlane, Kueue]]:
    """The Kueue plane, emptied of nodes, pods, jobs, Workloads and Kueue's objects."""
    cp, k = kueue_session
    if not k.alive():
        k.start()
    cp.reset()
    yield cp, k
    clear_kueue(cp, k)
    cp.reset()


@pytest.fixture(scope="session")
def kueue_kyverno_session(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ControlPlane, Kueue, Kyverno]]:
    """One control plane with Kueue's controller manager and Kyverno's admission controller
    (topogen's job policies through Kyverno, the jobs through Kueue): for every
    test_live_kueue*.py file that needs both."""
    kueue_binary = require_plane_tool("kueue")
    kyverno_binary = require_plane_tool("kyverno-admission-controller")
    work = tmp_path_factory.mktemp("kueue-kyverno-plane")
    kueue: Kueue | None = None

    def start(cp: ControlPlane) -> Kyverno:
        nonlocal kueue
        kueue = start_kueue(cp, kueue_binary, work / "kueue")  # its CRDs first
        return start_kyverno(cp, kyverno_binary, work / "kyverno")

    try:
        # the native engine's MutatingAdmissionPolicy beside Kyverno's webhooks
        for cp, k in plane_with(work, (*PLUGINS, "MutatingAdmissionPolicy"), start):
            assert kueue is not None
            yield cp, kueue, k
    finally:
        if kueue is not None:
            kueue.stop()


@pytest.fixture
def kueue_kyverno_plane(
    kueue_kyverno_session: tuple[ControlPlane, Kueue, Kyverno],
) -> Iterator[tuple[ControlPlane, Kueue, Kyverno]]:
    """The plane emptied of nodes, pods, jobs, Workloads, Kueue's objects and policies."""
    cp, q, k = kueue_kyverno_session
    for c in (q, k):
        if not c.alive():
            c.start()
    cp.reset()
    yield cp, q, k
    clear_kueue(cp, q)
    cp.reset()
    kube = cp.kube()
    kinds = ("mutatingpolicies", "validatingpolicies")
    names = [
        p["metadata"]["name"]
        for kind in kinds
        for p in kube.get(f"/apis/policies.kyverno.io/v1/{kind}")["items"]
    ]
    for kind in kinds:
        kube.delete(f"/apis/policies.kyverno.io/v1/{kind}")
    k.delete_generated()
    k.wait_unregistered(names)  # the next test's jobs meet none of them


@pytest.fixture(scope="session")
def karpenter_session(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[KarpenterPlane, Kyverno]]:
    """A control plane with Karpenter (its KWOK provider), the KWOK controller and
    Kyverno's admission controller in front of the API server (for topogen's policies),
    for test_live_karpenter*.py."""
    for tool in ("etcd", "kube-apiserver", "kube-scheduler"):
        require_tool(tool)
    karpenter, kwok = require_tool("karpenter-kwok"), require_tool("kwok")
    kyverno = require_tool("kyverno-admission-controller")
    work = tmp_path_factory.mktemp("karpenter-plane")
    cp = start_control_plane(TOOLS_BIN, work, admission=PLUGINS)
    try:
        k = start_kyverno(cp, kyverno, work / "kyverno")
    except BaseException:
        cp.stop()
        raise
    try:
        plane = start_karpenter(cp, karpenter, kwok, work / "karpenter", INSTANCE_TYPES)
    except BaseException:
        k.stop()
        cp.stop()
        raise
    try:
        yield plane, k
    finally:
        plane.stop()
        k.stop()
        cp.stop()


@pytest.fixture
def karpenter_plane(
    karpenter_session: tuple[KarpenterPlane, Kyverno],
) -> Iterator[KarpenterPlane]:
    """The Karpenter plane without pods, NodePools, NodeClaims, nodes or topogen's
    policies; KWOK, Karpenter and Kyverno running."""
    plane, k = karpenter_session
    for controller in (plane.kwok, plane.karpenter, k):
        if not controller.alive():
            controller.start()
    kube = plane.cp.kube()
    names = [
        p["metadata"]["name"]
        for kind in ("mutatingpolicies", "validatingpolicies")
        for p in kube.get(f"/apis/policies.kyverno.io/v1/{kind}")["items"]
    ]
    for kind in ("mutatingpolicies", "validatingpolicies"):
        kube.delete(f"/apis/policies.kyverno.io/v1/{kind}")
    k.delete_generated()
    k.wait_unregistered(names)
    for ns in sorted(plane.cp.dirty_namespaces):
        plane.cp.delete_pods(ns)
    plane.karpenter.clear()
    plane.cp.reset()
    yield plane


@pytest.fixture
def karpenter_kyverno(karpenter_session: tuple[KarpenterPlane, Kyverno]) -> Kyverno:
    """Kyverno of the Karpenter plane (take karpenter_plane too: it empties the plane)."""
    return karpenter_session[1]
