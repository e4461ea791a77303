"""PolicyReports: Kyverno's reports controller (cmd/reports-controller, out of cluster)
next to the admission controller, writing the generated ValidatingPolicy's results from
its background scans (as rendered) and from admission reports (kyverno.auditAtAdmission).
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from kyverno_harness import (
    Kyverno,
    ReportsController,
    start_reports_controller,
)
from kyverno_kit import (
    GENERATED,
    expectations,
    generated_resources,
    install_audit,
    pod_key,
    policy_docs,
    validate_only,
)
from live_harness import ControlPlane, collection_path
from live_kit import create_pod_raw
from webhook_harness import wait_admitted

from tooling import require_tool

pytestmark = [pytest.mark.slow, pytest.mark.tools]


# --- PolicyReports: Kyverno's reports controller ------------------------------------------

REPORT_TIMEOUT = 240.0  # s: a background scan starts 30s after the pod's event
PR = "/apis/wgpolicyk8s.io/v1alpha2/namespaces/{}/policyreports"
EPHR = "/apis/reports.kyverno.io/v1/namespaces/{}/ephemeralreports"
SEEN: dict[str, dict[str, list[tuple[str, str, str]]]] = {}  # path -> the reports it saw


@pytest.fixture
def reports(
    kyverno_plane: tuple[ControlPlane, Kyverno], tmp_path: Path
) -> Iterator[ReportsController]:
    """Kyverno's reports controller next to the admission controller, for one test (it
    aggregates and deletes the EphemeralReports other tests read); the reports of earlier
    tests' pods removed first, its PolicyReports after."""
    cp, _ = kyverno_plane
    binary = require_tool("kyverno-reports-controller")
    namespaces = ("ml-demo", "other-namespace")

    def clean() -> None:
        for ns in namespaces:
            cp.ensure_namespace(ns)
            cp.kube().delete(EPHR.format(ns))
            cp.kube().delete(PR.format(ns))

    clean()
    r = start_reports_controller(cp, binary, tmp_path / "reports-controller")
    try:
        yield r
    finally:
        r.stop()
        clean()


def _webhook_calls(cp: ControlPlane) -> float:
    """Calls the API server made to Kyverno's validating webhooks (its /metrics)."""
    kube = cp.kube()
    req = urllib.request.Request(
        kube.server + "/metrics", headers={"Authorization": f"Bearer {kube.token}"}
    )
    with urllib.request.urlopen(req, context=kube.ctx, timeout=10) as resp:
        text = resp.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith("apiserver_admission_webhook_admission_duration_seconds_count{"):
            labels, value = line.rsplit(" ", 1)
            if 'type="validating"' in labels and "kyverno" in labels:
                total += float(value)
    return total


def _policy_reports(
    cp: ControlPlane, namespaces: Sequence[str], uids: Mapping[str, str]
) -> dict[str, list[dict[str, Any]]]:
    """namespace/pod -> the results of the PolicyReport whose scope is that pod (by uid)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for ns in namespaces:
        for report in cp.kube().get(PR.format(ns))["items"]:
            scope = report.get("scope") or {}
            key = f"{ns}/{scope.get('name')}"
            if scope.get("kind") == "Pod" and uids.get(key) == scope.get("uid"):
                out[key] = report.get("results") or []
    return out


@pytest.mark.parametrize("path", ["background", "admission"])
def test_kyverno_reports_controller_policy_reports(
    kyverno_plane: tuple[ControlPlane, Kyverno], reports: ReportsController, path: str
) -> None:
    """The generated validate test's pods, created through the API server with the rendered
    ValidatingPolicy (Audit) and Kyverno's reports controller running as its Deployment
    configures it. `background`: as rendered (kyverno.auditAtAdmission false: the
    policy's spec.evaluation.admission.enabled false): Kyverno registers no webhook for the policy and the API server calls
    none of Kyverno's validating webhooks for the pods; every pod is admitted, and the
    background scan's results reach a PolicyReport per pod (scope: the pod): fail for the
    test's failing pods, pass for its passing ones, none for its skipped ones.
    `admission`: as kyverno.auditAtAdmission renders it (admission on too): its webhook is
    called and the admission reports are aggregated into the same PolicyReports."""
    cp, k = kyverno_plane
    test = "topogen-ml-training-validate"
    want = expectations(GENERATED / "tests" / test / "kyverno-test.yaml")
    pods = generated_resources(test)
    (rendered,) = [p for p in policy_docs(GENERATED) if p["kind"] == "ValidatingPolicy"]
    assert rendered["spec"]["validationActions"] == ["Audit"]
    assert rendered["spec"]["evaluation"] == {"admission": {"enabled": False},
                                              "background": {"enabled": True}}  # fmt: skip
    (policy,) = validate_only("Audit", admission=path == "admission")
    name = policy["metadata"]["name"]
    namespaces = sorted({p["metadata"]["namespace"] for p in pods})
    bad = next(p for p in pods if want[pod_key(p)] == "fail")
    if path == "background":
        k.apply([policy])
        # the admission controller has seen it: its status controller wrote conditions
        wait_admitted(
            "the policy's status",
            lambda: bool(
                ((cp.kube().get(f"{collection_path(policy)}/{name}").get("status") or {})
                 .get("conditionStatus") or {}).get("conditions")
            ),
        )  # fmt: skip
        assert not k.webhooks_for("validating", name)
    else:
        install_audit(k, [policy], bad)
        assert k.webhooks_for("validating", name)
    calls = _webhook_calls(cp)
    created: dict[str, float] = {}
    uids: dict[str, str] = {}
    for pod in pods:
        status, body, _ = create_pod_raw(cp, pod, dry_run=False)
        assert status == 201, body  # Audit admits every pod
        created[pod_key(pod)] = time.monotonic()
        uids[pod_key(pod)] = body["metadata"]["uid"]
    calls = _webhook_calls(cp) - calls
    if path == "background":
        assert calls == 0, f"the API server called Kyverno's validating webhooks {calls} times"
        assert not k.webhooks_for("validating", name)
    else:
        assert calls > 0

    reported = {key for key, r in want.items() if r != "skip"}
    appeared: dict[str, float] = {}

    def results() -> dict[str, list[dict[str, Any]]]:
        got = _policy_reports(cp, namespaces, uids)
        for key, rs in got.items():
            if rs and key not in appeared:
                appeared[key] = time.monotonic() - created[key]
        return got

    try:
        wait_admitted(
            "the PolicyReports", lambda: reported <= {k for k, v in results().items() if v},
            REPORT_TIMEOUT,
        )  # fmt: skip
    except TimeoutError as exc:
        tail = reports.proc.tail() if reports.proc else ""
        raise AssertionError(f"{exc}; seen: {results()}\n{tail}") from exc
    got = results()
    timing = ", ".join(f"{key} {s:.1f}s" for key, s in sorted(appeared.items()))
    print(f"\n{path}: PolicyReports appeared after {timing}")
    seen: dict[str, list[tuple[str, str, str]]] = {}
    for key in reported:
        pod = key.split("/")[1]
        rows = [(r["policy"], r["result"], r.get("message", "")) for r in got[key]]
        assert [(p, res) for p, res, _ in rows] == [(name, want[key])], (key, got[key], timing)
        (result,) = got[key]
        assert result["source"] == "KyvernoValidatingPolicy", result
        if want[key] == "fail":
            assert rows[0][2].startswith(f"pod {pod}: "), rows
        seen[key] = rows
    skipped = {key for key, r in want.items() if r == "skip"}
    assert not skipped & {k for k, v in got.items() if v}, got
    SEEN[path] = seen
    other = SEEN.get("background" if path == "admission" else "admission")
    if other is not None:  # both ran: the users' PolicyReports are the same either way
        assert seen == other
    conditions = cp.kube().get(f"{collection_path(policy)}/{name}")["status"]["conditionStatus"]
    print(f"{path}: {len(seen)} PolicyReports, slowest {max(appeared.values()):.1f}s;")
    print(f"{path}: the policy's conditions {conditions.get('conditions')}")
