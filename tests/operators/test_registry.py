"""Every registered operator goes through the same cases (adding one is adding its module
and a registry row: these tests then ask for a sample of each kind it reads)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from helpers import dedent_docs, objects
from topogen.analysis.groups import find_groups
from topogen.config import GroupConfig
from topogen.errors import InputError
from topogen.manifest import KubeObject
from topogen.operators.base import ObjectIndex, Operator
from topogen.operators.registry import (
    OPERATORS,
    PROFILES,
    detected_kinds,
    operator,
    operator_for,
    operator_for_kind,
    profile_for,
)
from topogen.sources.objects import flatten
from topogen.sources.workloads import read_workloads
from topogen.sources.yamlio import Document

from .samples import CUSTOM, JOBS, SAMPLES, VERSIONED

KINDS = [(op, kind) for op in OPERATORS for kind in op.kinds]


def test_the_registry_tables_are_the_operators_own() -> None:
    """The registry imports an operator's module only when asked for it: its tables of
    names and kinds say what each operator's class says."""
    from topogen.operators import registry

    assert tuple(op.name for op in OPERATORS) == PROFILES
    kinds: dict[tuple[str, str], tuple[str, ...]] = {}
    for op in OPERATORS:
        for kind in op.kinds:
            kinds[kind] = (*kinds.get(kind, ()), op.name)
    assert kinds == registry._BY_KIND
    assert all(operator(op.name) is op for op in OPERATORS)  # one of each


def _ids(value: Any) -> str:
    if isinstance(value, Operator):
        return value.name
    return "/".join(p for p in value if p) if isinstance(value, tuple) else str(value)


def _group(profile: str) -> GroupConfig:
    data: dict[str, Any] = {"name": "g", "profile": profile, "namespaces": ["ml"]}
    if operator(profile).required:
        data.update(CUSTOM)
    return GroupConfig.model_validate(data)


def _text(op: Operator, kind: tuple[str, str]) -> str:
    return VERSIONED.get((op.name, kind)) or SAMPLES[kind]


def _sample(op: Operator, kind: tuple[str, str]) -> KubeObject:
    (obj,) = objects(_text(op, kind))
    return obj


def _at(body: Any, parts: tuple[str | int, ...]) -> Any:
    for p in parts:
        body = body[p]
    return body


def test_names_and_kinds_are_registered_once() -> None:
    """A kind two operators read (kubeflow.org MPIJob) goes to each by its API versions."""
    assert len(set(PROFILES)) == len(PROFILES)
    for op, kind in KINDS:
        obj = _sample(op, kind)
        assert operator_for(obj.api_version, obj.kind) is op
        others = [o for o, k in KINDS if k == kind and o is not op]
        assert not any(o.serves(obj.api_version, obj.kind) for o in others)
    assert operator_for_kind("example.com", "Job") is None
    assert operator_for("kubeflow.org/v1", "MPIJob") is operator("kubeflow-training-operator")
    assert operator_for("kubeflow.org/v2beta1", "MPIJob") is operator("mpi-operator")


def test_the_config_accepts_every_registered_profile_and_no_other() -> None:
    for name in PROFILES:
        assert _group(name).profile == name
    with pytest.raises(ValueError, match="'ray' must be 'kubeflow-training-operator'"):
        GroupConfig.model_validate({"name": "g", "profile": "ray", "namespaces": ["ml"]})


def test_init_detects_every_operator_but_the_builtin_kinds() -> None:
    found = detected_kinds()
    assert set(found.values()) == {op.name for op in OPERATORS if op.detected}
    assert ("apps", "", "Deployment") not in found
    assert found[("kubeflow.org", "v2beta1", "MPIJob")] == "mpi-operator"


@pytest.mark.parametrize(("op", "kind"), KINDS, ids=_ids)
def test_every_kind_has_a_sample_whose_pods_say_where_their_template_is(
    op: Operator, kind: tuple[str, str]
) -> None:
    assert kind in SAMPLES, f"add a sample manifest of {kind} to tests/operators/samples.py"
    obj = _sample(op, kind)
    pod_sets = list(op.pods(obj, ObjectIndex([obj])))
    assert pod_sets
    for ps in pod_sets:
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in ps.labels.items())
        if ps.at is not None:  # the template's site (it may carry what the controller adds)
            assert isinstance(_at(obj.body, ps.at), dict)
        else:  # made up: a TrainJob's (from its runtime), KubeRay's default submitter
            assert (obj.kind, ps.replica) in {("RayJob", "submitter")} or obj.kind == "TrainJob"
    workloads = read_workloads([obj], [])
    assert [w.template_at for w in workloads] == [ps.at for ps in pod_sets]
    for w, ps in zip(workloads, pod_sets, strict=True):
        assert all(w.template.labels.get(k) == v for k, v in ps.labels.items())


@pytest.mark.parametrize(("op", "kind"), KINDS, ids=_ids)
def test_every_kind_reads_alike_from_its_typed_list(op: Operator, kind: tuple[str, str]) -> None:
    """`kubectl get <kind> -o yaml` prints a `<Kind>List` whose items name no kind or
    apiVersion: each item takes the list's, and reads as the manifest itself does."""
    (doc,) = yaml.safe_load_all(dedent_docs(_text(op, kind)))
    item = {k: v for k, v in doc.items() if k not in ("kind", "apiVersion")}
    listed = {"apiVersion": doc["apiVersion"], "kind": f"{doc['kind']}List", "items": [item]}
    (obj,) = flatten([Document(listed, "list.yaml", 0)])
    assert (obj.api_version, obj.kind) == (doc["apiVersion"], doc["kind"])
    assert operator_for(obj.api_version, obj.kind) is op
    want = read_workloads([_sample(op, kind)], [])
    got = read_workloads([obj], [])
    assert got
    assert [(w.name, w.replica_name, w.template) for w in got] == [
        (w.name, w.replica_name, w.template) for w in want
    ]


@pytest.mark.parametrize(("op", "kind"), KINDS, ids=_ids)
def test_a_malformed_manifest_is_an_input_error_naming_it(
    op: Operator, kind: tuple[str, str]
) -> None:
    (doc,) = yaml.safe_load_all(dedent_docs(_text(op, kind)))
    bad = copy.deepcopy(doc)
    bad["spec"] = ["not", "a", "mapping"]
    (obj,) = flatten([Document(bad, "bad.yaml", 0)])
    with pytest.raises(InputError) as err:
        read_workloads([obj], [])
    assert str(err.value).startswith(f"bad.yaml: {obj.where()}: ")


@pytest.mark.parametrize("op", OPERATORS, ids=_ids)
def test_a_job_has_one_coordinator_and_three_workers(op: Operator) -> None:
    assert op.name in JOBS, f"add a job of profile {op.name} to tests/operators/samples.py"
    (job,) = find_groups(_group(op.name), read_workloads(objects(JOBS[op.name]), []))
    assert {r.name: r.replicas for r in job.roles} == {"coordinator": 1, "worker": 3}


@pytest.mark.parametrize("op", OPERATORS, ids=_ids)
def test_each_workers_term_names_a_pod_of_its_job(op: Operator) -> None:
    """A worker's pod affinity (the generated policies) must find a pod of its own job: the
    coordinator where the profile's anchor is the coordinator, else another member."""
    profile = profile_for(_group(op.name))
    (job,) = find_groups(_group(op.name), read_workloads(objects(JOBS[op.name]), []))
    members = [w for role in job.roles for w in role.workloads]
    for role in job.roles:
        for w in role.workloads:
            assert profile.role_of(w.template.labels) == role.name
            if role.name != "worker":
                continue
            term = profile.anchor_selector(w.template.labels)
            found = [m for m in members if term.matches(m.template.labels)]
            assert found, f"{w.ref}: {term}"
            if profile.anchor_of(w.template.labels) == profile.coordinator[-1]:
                assert all(profile.role_of(m.template.labels) == "coordinator" for m in found)
