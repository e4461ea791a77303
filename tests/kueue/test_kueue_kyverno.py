"""The Kyverno and native job policies for Kueue's TAS, run by the real Kyverno CLI
(v1.19.1) over job shapes, held to the reference (render/kueue_reference.py): the mutated jobs, and the
checks each job fails before and after the mutation."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from engines.engines import _dump, _failures, _kyverno_report, _run, _split, _values, _write
from kueue.jobs import ZONE, Job, intent, jobsets, pytorch_jobs
from tooling import REPO, require_tool
from topogen.render.kueue_intent import KueueIntent
from topogen.render.kueue_reference import mutate_job, violations
from topogen.render.kyverno_kueue import mutating_policy, validating_policy
from topogen.render.native_kueue import native_kueue_policies

pytestmark = [pytest.mark.tools]

KINDS = [
    ("pytorchjob", intent("PyTorchJob", "kubeflow.org/v1"), pytorch_jobs()),
    ("jobset", intent("JobSet", "jobset.x-k8s.io/v1alpha2"), jobsets()),
]
# the Kyverno CEL policies and the native admission policies (the same CEL)
CASES = [(f"{e}-{k}", e, ki, jobs) for e in ("kyverno", "native") for k, ki, jobs in KINDS]
NATIVE_API = {
    "admissionregistration.k8s.io/v1beta1": "admissionregistration.k8s.io/v1alpha1",
    "admissionregistration.k8s.io/v1": "admissionregistration.k8s.io/v1alpha1",
}


def _policy(tmp: Path, ki: KueueIntent, validate: bool, engine: str = "kyverno") -> Path:
    if engine == "native":  # the MAP as the CLI knows it (tests/engines/engines.py)
        f = native_kueue_policies(ki)[1 if validate else 0]
        (path,) = _write(tmp, [f], NATIVE_API)
        return path
    f = validating_policy(ki) if validate else mutating_policy(ki)
    path = tmp / f.path
    path.write_text(f.text, encoding="utf-8")
    return path


# The CLI has no CRD schemas: the MutatingPolicy compiler logs that it cannot type the job
# (pkg/cel/policies/mpol/compiler/type_converter.go; a cluster's Kyverno reads the CRD),
# and the JSONPatch mutation runs all the same. Only that line is let through.
NO_SCHEMA = re.compile(r"\"no schema for [a-z0-9.-]+/v[0-9a-z]+, Kind=[A-Za-z]+\"")


def _crds(tmp: Path) -> Path:
    """The job kinds as CustomResourceDefinitions without a schema (every field kept): the
    CLI maps a MutatingAdmissionPolicy's resource rules to kinds through them."""
    crds = []
    for _, ki, _ in KINDS:
        k = ki.kind
        crds.append(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": f"{k.resource}.{k.group}"},
                "spec": {
                    "group": k.group,
                    "scope": "Namespaced",
                    "names": {"kind": k.kind, "plural": k.resource, "singular": k.kind.lower()},
                    "versions": [
                        {
                            "name": v,
                            "served": True,
                            "storage": n == 0,
                            "schema": {
                                "openAPIV3Schema": {
                                    "type": "object",
                                    "x-kubernetes-preserve-unknown-fields": True,
                                }
                            },
                        }
                        for n, v in enumerate(k.versions)
                    ],
                },
            }
        )
    folder = tmp / "crds"
    folder.mkdir(exist_ok=True)
    return _dump(folder / "jobs.yaml", crds)


def _mutate(kyverno: Path, policy: Path, jobs: Path, out: Path, values: Path) -> dict[str, Job]:
    out.mkdir(parents=True)
    args = [str(kyverno), "apply", str(policy), "-r", str(jobs), "-o", f"{out}/"]
    args += ["--crd-paths", str(_crds(out.parent))]
    proc = _run([*args, "--remove-color", "--values-file", str(values)])
    logged = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    errors = [ln for ln in logged.splitlines() if re.search(r"\sERR\s|^E\d{4}", ln)]
    assert "error: 0" in proc.stdout, proc.stdout[-3000:]
    assert all(NO_SCHEMA.search(ln) for ln in errors), errors
    mutated = {}
    for file in sorted(out.glob("*-mutated.yaml")):
        docs = [d for d in yaml.safe_load_all(file.read_text(encoding="utf-8")) if d]
        mutated[docs[-1]["metadata"]["name"]] = docs[-1]
    return mutated


def _with_namespaces(jobs: list[Job], tmp: Path) -> Path:
    pods_like = [{"metadata": {"namespace": j["metadata"]["namespace"]}} for j in jobs]
    return _values(pods_like, tmp)


@pytest.mark.parametrize(("key", "engine", "ki", "jobs"), CASES, ids=[c[0] for c in CASES])
def test_the_mutation_is_the_references(
    tmp_path: Path, key: str, engine: str, ki: KueueIntent, jobs: list[Job]
) -> None:
    kyverno = require_tool("kyverno")
    resources = _dump(tmp_path / "jobs.yaml", jobs)
    values = _with_namespaces(jobs, tmp_path)
    policy = _policy(tmp_path, ki, validate=False, engine=engine)
    got = _mutate(kyverno, policy, resources, tmp_path / "out", values)
    for job in jobs:
        name = job["metadata"]["name"]
        assert got[name] == mutate_job(job, ki), name
    # what the cases are for: each way the reference treats a job, seen at least once
    changed = {j["metadata"]["name"] for j in jobs if mutate_job(j, ki) != j}
    assert changed and changed != {j["metadata"]["name"] for j in jobs}


@pytest.mark.parametrize(("key", "engine", "ki", "jobs"), CASES, ids=[c[0] for c in CASES])
def test_the_checks_are_the_references_before_and_after(
    tmp_path: Path, key: str, engine: str, ki: KueueIntent, jobs: list[Job]
) -> None:
    kyverno = require_tool("kyverno")
    values = _with_namespaces(jobs, tmp_path)
    path = _policy(tmp_path, ki, validate=True, engine=engine)
    policy, *binding = [d for d in yaml.safe_load_all(path.read_text()) if d]
    ids = ["pinned", "topology", "group"]
    checks, check_of = _split(policy, binding[0] if binding else None, ids, tmp_path / "split")
    mutated = [mutate_job(j, ki) for j in jobs]
    for stage, these in (("before", jobs), ("after", mutated)):
        resources = _dump(tmp_path / f"{stage}.yaml", these)
        results = _kyverno_report(
            kyverno, checks, resources, values, ["--crd-paths", str(_crds(tmp_path))]
        )
        failed = _failures(results, check_of)
        for job in these:
            name = job["metadata"]["name"]
            want = [["pinned", "topology", "group"][i] for i in violations(job, ki)]
            assert sorted(c for c, _ in failed.get(name, ())) == sorted(want), (stage, name)
    assert all(not violations(j, ki) for j in mutated)  # the mutation satisfies the checks
    assert any(violations(j, ki) for j in jobs)


def test_the_rendered_policies_constrain_the_example_job(tmp_path: Path) -> None:
    """`topogen render` of examples/kueue-tas, then `kyverno apply` of its job policy to the
    example's PyTorchJob: every role template requires zone-a or zone-b and both carry one
    podset group; the validation passes on the result and fails on the job as written."""
    kyverno = require_tool("kyverno")
    example = REPO / "examples" / "kueue-tas"
    out = tmp_path / "out"
    render = subprocess.run(
        [sys.executable, "-m", "topogen", "render", "-c", str(example / "topogen.yaml"),
         "--out", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert render.returncode == 0, render.stderr
    policies = out / "policies" / "gpu-east" / "kyverno"
    job = example / "workloads" / "resnet.yaml"
    values = _values([{"metadata": {"namespace": "research"}}], tmp_path)
    mutate = policies / "topogen-pytorch-kueue-pytorchjob-mutate.yaml"
    (mutated,) = _mutate(kyverno, mutate, job, tmp_path / "mutated", values).values()
    groups = set()
    for spec in mutated["spec"]["pytorchReplicaSpecs"].values():
        t = spec["template"]
        terms = t["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]["nodeSelectorTerms"]
        assert terms == [
            {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone-a", "zone-b"]}]}
        ]
        groups.add(t["metadata"]["annotations"]["kueue.x-k8s.io/podset-group-name"])
    assert groups == {"topogen-pytorch"}
    validate = policies / "topogen-pytorch-kueue-pytorchjob-validate.yaml"
    result = _kyverno_report(kyverno, [validate], _dump(tmp_path / "m.yaml", [mutated]), values)
    assert {r["result"] for r in result} == {"pass"}
    result = _kyverno_report(kyverno, [validate], job, values)
    assert {r["result"] for r in result} == {"warn"}  # Audit, as rendered (--audit-warn)
