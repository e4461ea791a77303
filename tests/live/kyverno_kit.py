"""What the Kyverno admission-controller tests share (tests/live/test_live_kyverno*.py):
the bundled example's files, rendering, installing policies until the API server calls
Kyverno for them, creating pods as their controllers would and reading where they landed,
and Kyverno's admission reports. The plane itself (one control plane and one Kyverno per
test process) is conftest.py's `kyverno_plane`."""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from kyverno_harness import Kyverno
from live_harness import ControlPlane
from live_kit import (
    EXAMPLE,
    cli,
    create_pod_raw,
    docs,
    kyverno_apply,
    project,
)
from webhook_harness import Answer, wait_admitted, wait_answered, wait_bound

from tooling import REPO, require_tool

BEFORE = EXAMPLE / "workloads" / "before"
PYTORCH = REPO / "examples" / "pytorch-three-zone"
GENERATED = REPO / "policies" / "lab" / "kyverno"
NAME = "topogen-ml-training"


def policy_docs(folder: Path) -> list[dict[str, Any]]:
    return [
        d
        for f in sorted(folder.glob("topogen-*.yaml"))
        for d in yaml.safe_load_all(f.read_text(encoding="utf-8"))
        if d
    ]


def render_group(
    config: Path, out: Path, action: str | None = None, audit_at_admission: bool = False
) -> list[dict[str, Any]]:
    if action is not None or audit_at_admission:  # a config the test wrote, never an example's
        raw = yaml.safe_load(config.read_text())
        raw["validationAction"] = action or raw.get("validationAction", "Audit")
        if audit_at_admission:
            raw["kyverno"] = {"auditAtAdmission": True}
        config.write_text(yaml.safe_dump(raw, sort_keys=False))
    rendered = cli("render", "-c", config, "--out", out)
    assert rendered.exit_code == 0, rendered.output
    (folder,) = (out / "policies").glob("*/kyverno")
    return policy_docs(folder)


def install(
    k: Kyverno,
    policies: Sequence[dict[str, Any]],
    probe: Mapping[str, Any],
    answered: Callable[[Answer], bool] | None = None,
) -> None:
    """Create the policies; wait until Kyverno registered them and the API server's answer
    for `probe` (a dry run) is these policies' own: `answered`, by default the probe as
    the Kyverno CLI mutates it under their MutatingPolicies (`cli_mutation`).

    A registered webhook is not yet a served policy: Kyverno v1.19.1 registers webhooks
    from its own policy informer (pkg/controllers/webhook), while the engine that answers
    them compiles each policy in a controller-runtime reconciler of its own
    (pkg/cel/policies/mpol/engine NewKubeProvider) and answers "allowed, unchanged" for a
    policy it has not compiled yet (pkg/webhooks/resource/mpol); the API server loads
    the webhook configuration asynchronously too. Under load either lags by seconds, and a
    policy of the same name removed by an earlier test can still answer. Only the probe
    answered as this version answers it shows the policies at admission."""
    k.cp.ensure_namespace(probe["metadata"]["namespace"])
    if answered is None:
        answered = cli_mutation(policies, probe)
    k.apply(policies)
    k.wait_registered(policies)
    wait_answered(k.cp, probe, answered, "the policies at admission")


def cli_mutation(
    policies: Sequence[Mapping[str, Any]], probe: Mapping[str, Any]
) -> Callable[[Answer], bool]:
    """The answer of these policies' MutatingPolicies for `probe`: admitted and mutated as
    the Kyverno CLI (the same engine, v1.19.1) mutates it. The probe must be a pod they
    change, or its answer shows nothing."""
    mutating = [p for p in policies if p["kind"] == "MutatingPolicy"]
    assert mutating, "no MutatingPolicy to probe: pass `answered`"
    with tempfile.TemporaryDirectory(prefix="topogen-probe-") as tmp:
        files = []
        for i, p in enumerate(mutating):
            files.append(Path(tmp) / f"policy-{i}.yaml")
            files[-1].write_text(yaml.safe_dump(dict(p)), encoding="utf-8")
        (want,) = kyverno_apply(require_tool("kyverno"), files, [probe], Path(tmp))
    expected = project(want)
    assert expected != project(probe), "the probe is a pod the MutatingPolicies leave as is"
    return lambda a: a[0] == 201 and project(a[1]) == expected


def denied_by(policy: str, status: int = 400) -> Callable[[Answer], bool]:
    """The answer of a Deny ValidatingPolicy named `policy` the probe fails: its webhook's
    400 naming it, or (status 403) the ValidatingAdmissionPolicy Kyverno generated from it."""
    named = (
        f"Policy {policy} failed" if status == 400 else f"ValidatingAdmissionPolicy 'vpol-{policy}'"
    )
    return lambda a: a[0] == status and named in str(a[1].get("message", ""))


def install_audit(k: Kyverno, policies: Sequence[dict[str, Any]], probe: Mapping[str, Any]) -> None:
    """Audit changes nothing a dry run shows: probe with stored pods until Kyverno
    reports on one (its validating handler writes the report before it answers)."""
    ns = probe["metadata"]["namespace"]
    names = {p["metadata"]["name"] for p in policies}
    k.cp.ensure_namespace(ns)
    k.apply(policies)
    k.wait_registered(policies)
    n = 0

    def reported() -> bool:
        """A stored probe reported failing by each policy: this version audits it."""
        nonlocal n
        n += 1
        pod = copy.deepcopy(dict(probe))
        pod["metadata"]["name"] = f"audit-probe-{n}"
        assert create_pod_raw(k.cp, pod, dry_run=False)[0] == 201
        results = admission_reports(k.cp, ns).get(pod["metadata"]["name"], [])
        return names <= {r["policy"] for r in results if r["result"] == "fail"}

    wait_admitted("the policies at admission", reported)


def schedule(
    cp: ControlPlane, pods: Sequence[dict[str, Any]], admitted: dict[str, Any] | None = None
) -> dict[str, dict[str, Any]]:
    """Create the coordinators first (workers may need them placed), then the rest; the
    stored pods once the scheduler bound them. `admitted`
    gets each pod as admission returned it (before binding stamps the zone label)."""
    first = [p for p in pods if is_coordinator(p)]
    stored: dict[str, dict[str, Any]] = {}
    for batch in (first, [p for p in pods if p not in first]):
        for p in batch:
            cp.ensure_namespace(p["metadata"]["namespace"])
            status, body, _ = create_pod_raw(cp, p, dry_run=False)
            assert status == 201, body
            if admitted is not None:
                admitted[p["metadata"]["name"]] = body
        for p in batch:
            ns, name = p["metadata"]["namespace"], p["metadata"]["name"]
            wait_bound(cp, ns, [name])
            stored[name] = cp.pod(ns, name)
    return stored


def is_coordinator(pod: Mapping[str, Any]) -> bool:
    labels = pod["metadata"].get("labels", {})
    return bool(labels.get("role") == "coordinator" or labels.get("training.kubeflow.org/job-role"))


def bound_zones(cp: ControlPlane, stored: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    zones = {}
    for name, pod in stored.items():
        node = pod["spec"].get("nodeName")
        assert node, f"{name} is not bound: {pod.get('status')}"
        labels = cp.kube().get(f"/api/v1/nodes/{node}")["metadata"]["labels"]
        zones[name] = labels["topology.kubernetes.io/zone"]
    return zones


def pytorchjob_pods(manifest: Path) -> list[dict[str, Any]]:
    """The pods the Kubeflow Training Operator (v1.8.1, pkg/controller.v1/common/pod.go
    createNewPod) creates for a PyTorchJob: `<job>-<replica type>-<index>`, its template
    with the operator's labels (job-role=master on the master)."""
    out = []
    for job in (d for d in docs(manifest) if d["kind"] == "PyTorchJob"):
        name, ns = job["metadata"]["name"], job["metadata"]["namespace"]
        for rtype, spec in job["spec"]["pytorchReplicaSpecs"].items():
            rt = rtype.lower()
            for i in range(spec.get("replicas", 1)):
                tmpl = copy.deepcopy(spec["template"])
                labels = {
                    **tmpl.get("metadata", {}).get("labels", {}),
                    "training.kubeflow.org/operator-name": "pytorchjob-controller",
                    "training.kubeflow.org/job-name": name,
                    "training.kubeflow.org/replica-type": rt,
                    "training.kubeflow.org/replica-index": str(i),
                    **({"training.kubeflow.org/job-role": "master"} if rt == "master" else {}),
                }
                pod_spec = tmpl["spec"]
                pod_spec["restartPolicy"] = spec.get("restartPolicy", "OnFailure")
                meta = {"name": f"{name}-{rt}-{i}", "namespace": ns, "labels": labels}
                out.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec})
    return out


def admission_reports(cp: ControlPlane, namespace: str) -> dict[str, list[dict[str, Any]]]:
    """Kyverno's admission reports (EphemeralReports) in a namespace: pod -> results."""
    got = cp.kube().get(f"/apis/reports.kyverno.io/v1/namespaces/{namespace}/ephemeralreports")
    out: dict[str, list[dict[str, Any]]] = {}
    for report in got["items"]:
        meta = report["metadata"].get("annotations", {})
        pod = meta.get("audit.kyverno.io/resource.name")
        if pod:
            out.setdefault(pod, []).extend(report["spec"].get("results") or [])
    return out


def expectations(test: Path) -> dict[str, str]:
    """namespace/pod -> pass | fail | skip, from a generated kyverno-test.yaml."""
    spec = yaml.safe_load(test.read_text(encoding="utf-8"))
    return {r: res["result"] for res in spec["results"] for r in res["resources"]}


def validate_only(
    action: str, api_server: bool = False, admission: bool = True
) -> list[dict[str, Any]]:
    """The rendered ValidatingPolicy with `action`; on the admission path as the enforce
    Component (and, for Audit, kyverno.auditAtAdmission) puts it, unless not `admission`."""
    (policy,) = [p for p in policy_docs(GENERATED) if p["kind"] == "ValidatingPolicy"]
    policy["spec"]["validationActions"] = [action]
    policy["spec"]["autogen"]["validatingAdmissionPolicy"] = {"enabled": api_server}
    policy["spec"]["evaluation"]["admission"]["enabled"] = admission
    return [policy]


def generated_resources(test: str) -> list[dict[str, Any]]:
    return docs(GENERATED / "tests" / test / "resources.yaml")


def pod_key(pod: Mapping[str, Any]) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
