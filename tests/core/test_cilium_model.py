"""Cilium's agent options, identities, warnings and notes as topogen reads and reports them.

The verdicts themselves are held to Cilium's engine by tests/cilium; these are the
interfaces around them: topogen.yaml's clusters[].cilium, the label filter's reading of
the agent's `labels`, the warnings about inert selectors, the notes on what topogen does
not decide, topogen init's identityLabel.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from helpers import config_doc, deployment, index, node_doc, pod, write_tree
from topogen.cilium.labelfilter import LabelFilter
from topogen.cli import main
from topogen.config import load_config
from topogen.errors import InputError
from topogen.model import CiliumSettings
from topogen.pipeline.analyze import analyze

ZONE_CCNP = """
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: zones}
spec:
  endpointSelector: {matchLabels: {topology.kubernetes.io/zone: zone-a}}
  ingress: [{fromEndpoints: [{matchLabels: {topology.kubernetes.io/zone: zone-a}}]}]
"""


@pytest.mark.parametrize(
    ("labels", "key", "kept"),
    [
        ((), "app", True),
        ((), "topology.kubernetes.io/zone", False),
        ((), "kubernetes.io/hostname", False),
        ((), "app.kubernetes.io/name", True),
        ((), "pod-template-hash", False),
        ((), "io.cilium.k8s.namespace.labels.beta.kubernetes.io/os", False),  # .*beta...
        ((), "jobset.sigs.k8s.io/jobset-name", True),  # !k8s\.io is anchored at the start
        (("k8s:topology.kubernetes.io/zone",), "topology.kubernetes.io/zone", True),
        (("k8s:topology.kubernetes.io/zone",), "app", False),  # an allow-list now
        (("k8s:topology.kubernetes.io/zone",), "io.kubernetes.pod.namespace", True),
        (("k8s:!app",), "app", False),
        (("k8s:!app",), "tier", True),  # exclusions only: still not an allow-list
        # the `!` goes after the source: "!k8s:app" is an inclusion from source "!k8s",
        # which no label has, and it still makes the filter an allow-list
        (("!k8s:app",), "tier", False),
        (("container:app",), "app", False),  # another source: k8s labels not included
    ],
)
def test_label_filter(labels: tuple[str, ...], key: str, kept: bool) -> None:
    assert LabelFilter(labels).keeps(key) is kept


def test_config_cilium_section(tmp_path: Path) -> None:
    cilium = {"identityLabels": ["k8s:zone"], "hostFirewall": True, "policyEnforcement": "always"}
    write_tree(tmp_path, {"topogen.yaml": config_doc(cluster={"cilium": cilium})})
    settings = load_config(tmp_path / "topogen.yaml").clusters[0].cilium.settings()
    assert settings == CiliumSettings(("k8s:zone",), True, "always", "default", False)
    assert CiliumSettings() == load_config_default(tmp_path)


def load_config_default(tmp_path: Path) -> CiliumSettings:
    write_tree(tmp_path, {"topogen.yaml": config_doc()})
    return load_config(tmp_path / "topogen.yaml").clusters[0].cilium.settings()


@pytest.mark.parametrize(
    ("cilium", "message"),
    [
        ({"identityLabels": ["k8s:("]}, "clusters.0.cilium.identityLabels: 'k8s:(' is not a"),
        ({"hostFirewal": True}, "unknown key clusters.0.cilium.hostFirewal"),
        ({"policyEnforcement": "sometimes"}, "clusters.0.cilium.policyEnforcement"),
    ],
)
def test_config_cilium_errors(tmp_path: Path, cilium: dict[str, object], message: str) -> None:
    write_tree(tmp_path, {"topogen.yaml": config_doc(cluster={"cilium": cilium})})
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        load_config(tmp_path / "topogen.yaml")


def test_identity_holds_service_account_and_cluster() -> None:
    idx = index(
        """
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: by-sa, namespace: ml}
    spec:
      endpointSelector: {}
      ingress:
        - fromEndpoints: [{matchLabels: {io.cilium.k8s.policy.serviceaccount: trainer}}]
    """,
        cilium=CiliumSettings(cluster_name="east"),
    )
    labels = idx.identity(pod(role="w")).labels
    assert labels["io.cilium.k8s.policy.serviceaccount"] == "default"
    assert labels["io.cilium.k8s.policy.cluster"] == "east"
    assert "role" in labels and "io.kubernetes.pod.namespace" in labels


def _repo(tmp_path: Path, policies: str, cluster: dict[str, object] | None = None) -> Path:
    worker = {"app": "job1", "role": "worker"}
    write_tree(
        tmp_path,
        {
            "topogen.yaml": config_doc({"ports": [29500]}, cluster=cluster),
            "nodes.yaml": [node_doc("a1"), node_doc("b1", "zone-b")],
            "policies/p.yaml": policies,
            "workloads/w.yaml": [
                deployment("coord", {"app": "job1", "role": "coordinator"}),
                deployment("workers", worker, replicas=2),
            ],
        },
    )
    return tmp_path / "topogen.yaml"


def test_analyze_warns_of_a_policy_the_label_filter_makes_inert(tmp_path: Path) -> None:
    report = analyze(load_config(_repo(tmp_path, ZONE_CCNP)))
    assert any(
        "ccnp zones selects on topology.kubernetes.io/zone, which the Cilium agent's label "
        "filter drops" in w
        for w in report.warnings
    ), report.warnings
    kept = {"cilium": {"identityLabels": ["k8s:topology.kubernetes.io/zone", "k8s:app"]}}
    report = analyze(load_config(_repo(tmp_path, ZONE_CCNP, kept)))
    assert any(
        "node topology label topology.kubernetes.io/zone and no group sets identityLabel" in w
        for w in report.warnings
    ), report.warnings


def test_analyze_warns_of_a_label_no_pod_carries(tmp_path: Path) -> None:
    policy = """
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: by-zone, namespace: ml}
    spec:
      endpointSelector: {matchLabels: {zone: a}}
      ingress: [{fromEndpoints: [{matchLabels: {zone: a}}]}]
    """
    report = analyze(load_config(_repo(tmp_path, policy)))
    assert any(
        "cnp ml/by-zone selects on zone, which no analysed pod carries and no group names "
        "as identityLabel" in w
        for w in report.warnings
    ), report.warnings


L7 = """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: http-only, namespace: ml}
spec:
  endpointSelector: {matchLabels: {role: worker}}
  ingress:
    - fromEndpoints: [{matchLabels: {role: coordinator}}]
      toPorts:
        - ports: [{port: "29500", protocol: TCP}]
          rules: {http: [{method: GET}]}
"""
NOTE = "allowed at L3/L4; L7 rules (http) of cnp ml/http-only apply"


def test_l7_rules_get_a_note_in_analyze_connectivity_and_explain(tmp_path: Path) -> None:
    config = _repo(tmp_path, L7)
    report = analyze(load_config(config))
    assert f"cluster lab: ml/workers: {NOTE}" in report.notes
    runner = CliRunner()
    out = runner.invoke(main, ["analyze", "-c", str(config), "-o", "json"]).stdout
    assert f"cluster lab: ml/workers: {NOTE}" in json.loads(out)["notes"]
    table = runner.invoke(main, ["connectivity", "-c", str(config)]).stdout
    assert f"note: ml/coord -> ml/workers: {NOTE}" in table
    pairs = json.loads(
        runner.invoke(main, ["connectivity", "-c", str(config), "-o", "json"]).stdout
    )
    noted = [p for p in pairs["pairs"] if p.get("notes")]
    assert [(p["from"], p["to"], p["notes"]) for p in noted] == [("ml/coord", "ml/workers", [NOTE])]
    explained = runner.invoke(
        main, ["explain", "-c", str(config), "--from", "ml/coord", "--to", "ml/workers"]
    ).stdout
    assert f"note: {NOTE}" in explained


def test_to_services_resolve_a_service_beside_the_workloads(tmp_path: Path) -> None:
    policy = """
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: to-svc, namespace: ml}
    spec:
      endpointSelector: {matchLabels: {role: coordinator}}
      egress: [{toServices: [{k8sService: {serviceName: workers}}]}]
    """
    config = _repo(tmp_path, policy)
    service = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "workers", "namespace": "ml"},
               "spec": {"selector": {"role": "worker"}, "ports": [{"port": 29500}]}}  # fmt: skip
    (tmp_path / "workloads" / "svc.yaml").write_text(yaml.safe_dump(service))
    out = CliRunner().invoke(main, ["connectivity", "-c", str(config), "-o", "json"])
    pairs = {(p["from"], p["to"]): p["connected"] for p in json.loads(out.stdout)["pairs"]}
    assert pairs[("ml/coord", "ml/workers")] is True
    (tmp_path / "workloads" / "svc.yaml").write_text(
        yaml.safe_dump({**service, "spec": {"ports": [{"port": 29500}]}})
    )
    out = CliRunner().invoke(main, ["connectivity", "-c", str(config), "-o", "json"])
    data = json.loads(out.stdout)
    assert {(p["from"], p["to"]): p["connected"] for p in data["pairs"]}[
        ("ml/coord", "ml/workers")
    ] is False
    explained = (
        CliRunner()
        .invoke(main, ["explain", "-c", str(config), "--from", "ml/coord", "--to", "ml/workers"])
        .stdout
    )
    assert "Service ml/workers, which has no selector" in explained


def test_init_sets_identity_label_from_the_policies(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "cilium/p.yaml": ZONE_CCNP,
            "jobs/j.yaml": """
            apiVersion: kubeflow.org/v1
            kind: PyTorchJob
            metadata: {name: bert, namespace: ml}
            spec: {pytorchReplicaSpecs: {}}
            """,
        },
    )
    result = CliRunner().invoke(main, ["init", str(tmp_path)])
    assert result.exit_code == 0, result.output
    cfg = yaml.safe_load((tmp_path / "topogen.yaml").read_text())
    assert cfg["groups"][0]["identityLabel"] == "topology.kubernetes.io/zone"
