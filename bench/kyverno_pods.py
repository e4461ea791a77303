"""Pods of a group as its operators create them, and the reference MutatingPolicy: what
the Kyverno benchmarks (the CLI in run.py, the admission controller in admission.py)
evaluate."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

REFERENCE_PATCH = (
    "has(object.spec.tolerations) ? [JSONPatch{op: 'add', path: '/spec/tolerations/-', "
    "value: {'key': 'example.com/reference', 'operator': 'Exists', 'effect': 'NoSchedule'}}] "
    ": [JSONPatch{op: 'add', path: '/spec/tolerations', value: [{'key': "
    "'example.com/reference', 'operator': 'Exists', 'effect': 'NoSchedule'}]}]"
)


def pod_creations() -> dict[str, Any]:
    """matchConstraints of the bench's reference policies: every Pod created."""
    rule = {
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "operations": ["CREATE"],
        "resources": ["pods"],
    }
    return {"resourceRules": [rule]}


def reference_policy(name: str, patch: str = REFERENCE_PATCH) -> dict[str, Any]:
    """The minimal MutatingPolicy: every Pod gets one toleration (or `patch`, a JSONPatch
    expression), no matchConditions or variables."""
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "MutatingPolicy",
        "metadata": {"name": name},
        "spec": {
            "autogen": {"podControllers": {"controllers": []}},
            "matchConstraints": pod_creations(),
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": patch}}],
        },
    }


def _selector(sel: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if sel.match_labels:
        out["matchLabels"] = dict(sel.match_labels)
    if sel.match_expressions:
        out["matchExpressions"] = [
            {
                "key": r.key,
                "operator": r.operator,
                **({"values": list(r.values)} if r.values else {}),
            }
            for r in sel.match_expressions
        ]
    return out


def pod_spec(t: Any) -> dict[str, Any]:
    """A pod's spec as the operators create it from the template (model.PodTemplate)."""
    container: dict[str, Any] = {
        "name": "trainer",
        "image": "registry.example/trainer:2.5.1",
        "resources": {"requests": {k: str(v) for k, v in sorted(t.requests.items())}},
    }
    # extended resources (GPUs) cannot be overcommitted: the API server wants limits too
    extended = {k: str(v) for k, v in sorted(t.requests.items()) if "/" in k}
    if extended:
        container["resources"]["limits"] = extended
    if t.ports:
        container["ports"] = [
            {"name": n, "containerPort": port, "protocol": proto} for n, port, proto in t.ports
        ]
    spec: dict[str, Any] = {"containers": [container]}
    if t.host_network:
        spec["hostNetwork"] = True
    if t.tolerations:
        spec["tolerations"] = [
            {k: v for k, v in (("key", x.key), ("operator", x.operator), ("value", x.value),
                               ("effect", x.effect)) if v}
            for x in t.tolerations
        ]  # fmt: skip
    if t.node_selector:
        spec["nodeSelector"] = dict(t.node_selector)
    affinity: dict[str, Any] = {}
    if t.node_affinity is not None:
        terms: list[dict[str, Any]] = [
            {
                "matchExpressions": [
                    {
                        "key": r.key,
                        "operator": r.operator,
                        **({"values": list(r.values)} if r.values else {}),
                    }
                    for r in term.match_expressions
                ]
            }
            for term in t.node_affinity
        ]
        affinity["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
        }
    for anti, key in ((False, "podAffinity"), (True, "podAntiAffinity")):
        pod_terms = [
            {
                "labelSelector": _selector(a.selector),
                "topologyKey": a.topology_key,
                **({"namespaces": list(a.namespaces)} if a.namespaces else {}),
            }
            for a in t.pod_affinity
            if a.anti == anti
        ]
        if pod_terms:
            affinity[key] = {"requiredDuringSchedulingIgnoredDuringExecution": pod_terms}
    if affinity:
        spec["affinity"] = affinity
    return spec


def group_pods(config: Path, group: str, count: int) -> list[dict[str, Any]]:
    """`count` pods of the group's jobs as their operators create them (labels, annotations,
    requests, ports, host network, tolerations, nodeSelector and affinity of each pod
    template), cycling over its jobs and replicas."""
    if str(ROOT / "generator") not in sys.path:
        sys.path.insert(0, str(ROOT / "generator"))
    from topogen.analysis.groups import find_groups
    from topogen.config import load_config
    from topogen.sources.loader import load_workload_inputs

    cfg = load_config(config)
    gcfg = next(g for g in cfg.groups if g.name == group)
    jobs = find_groups(gcfg, load_workload_inputs(cfg).workloads)
    templates = [
        w
        for job in jobs
        for role in job.roles
        for w in role.workloads
        for _ in range(min(w.replicas, 16))
    ]
    pods = []
    for n in range(count):
        w = templates[n % len(templates)]
        meta: dict[str, Any] = {
            "name": f"{w.name.lower()}-{n:05d}",
            "namespace": w.namespace,
            "labels": dict(w.template.labels),
        }
        if w.template.annotations:
            meta["annotations"] = dict(w.template.annotations)
        pods.append(
            {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec(w.template)}
        )
    return pods
