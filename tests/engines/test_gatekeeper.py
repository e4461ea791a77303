"""The Gatekeeper backend: rendering, and its generated tests with the real gator and opa."""

from __future__ import annotations

import copy
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from engines.cases import suites, synthetic_intent
from engines.engines import gator_expand
from tooling import REPO, require_tool
from topogen.errors import TopogenError
from topogen.render.base import TEMPLATES_DIR, RenderedFile
from topogen.render.gatekeeper import (
    DIFFERENCES,
    cel_source,
    constraint_kind,
    gatekeeper_policies,
    location_key,
)
from topogen.render.gatekeeper_tests import gatekeeper_test_files
from topogen.render.intent import AdmissionIntent, named_jobs

SUITES = suites()


def _write(root: Path, files: list[RenderedFile]) -> Path:
    for f in files:
        path = root / f.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f.text, encoding="utf-8")
    return root


def _objects(intent: Any) -> list[dict[str, Any]]:
    return [o for f in gatekeeper_policies(intent) for o in f.objects]


# --- rendering ---------------------------------------------------------------------------


def test_objects_and_names() -> None:
    for suite in SUITES:
        objs = _objects(suite.intent)
        kinds = [o["kind"] for o in objs]
        assert kinds[:2] == ["ConstraintTemplate", constraint_kind(suite.intent)]
        assert set(kinds[2:]) <= {"Assign", "AssignMetadata", "ModifySet"}
        assert all(len(o["metadata"]["name"]) <= 63 for o in objs)
        names = [o["metadata"]["name"] for o in objs[2:]]
        assert len(names) == len(set(names))
        template, constraint = objs[:2]
        assert template["metadata"]["name"] == constraint["kind"].lower()
        assert template["spec"]["crd"]["spec"]["names"]["kind"] == constraint["kind"]


def test_constraint_kinds_stay_apart_where_camel_case_would_not() -> None:
    a, b = (synthetic_intent(), synthetic_intent())
    from dataclasses import replace

    a, b = replace(a, group="ml-training"), replace(b, group="mltraining")
    assert constraint_kind(a).lower() != constraint_kind(b).lower()
    assert constraint_kind(a).startswith("TopogenMlTraining")


def test_the_template_carries_the_cel_checks_and_the_rego_source_verbatim() -> None:
    rego = (TEMPLATES_DIR / "gatekeeper" / "colocation.rego").read_text(encoding="utf-8")
    template = _objects(SUITES[0].intent)[0]
    native, code = template["spec"]["targets"][0]["code"]
    assert native == {"engine": "K8sNativeValidation", "source": cel_source(SUITES[0].intent)}
    assert native["source"]["generateVAP"] is False  # judged by Gatekeeper's webhook alone
    assert code == {"engine": "Rego", "source": {"version": "v1", "rego": rego}}
    copied = next(
        f for f in gatekeeper_test_files(SUITES[0].intent) if f.path.endswith("/colocation.rego")
    )
    assert copied.text == rego


def test_mutators_are_narrow_and_run_on_create() -> None:
    for suite in SUITES:
        intent = suite.intent
        for m in _objects(intent)[2:]:
            match = m["spec"]["match"]
            per_bucket = m["kind"] in ("Assign", "AssignMetadata") or m["spec"]["location"] == ANTI
            if intent.per_job and per_bucket:
                # zones and exclusions per job: each bucket's in its namespace
                assert set(match["namespaces"]) <= set(intent.namespaces)
            else:
                assert match["namespaces"] == list(intent.namespaces)
            assert match["kinds"] == [{"apiGroups": [""], "kinds": ["Pod"]}]
            exprs = match["labelSelector"]["matchExpressions"]
            # a detached pod's mutators (KubeRay's submitter) match it without the job label
            job = "DoesNotExist" if "-detached-" in m["metadata"]["name"] else "Exists"
            if job == "Exists" and _job_in(intent, exprs):  # `In` on the job label implies it
                assert {"key": intent.job_label, "operator": job} not in exprs
            else:
                assert exprs[0] == {"key": intent.job_label, "operator": job}
            assert {"key": "kueue.x-k8s.io/tas", "operator": "DoesNotExist"} in exprs
            if m["kind"] != "AssignMetadata":  # AssignMetadata has no applyTo
                assert m["spec"]["applyTo"] == [
                    {"groups": [""], "kinds": ["Pod"], "versions": ["v1"], "operations": ["CREATE"]}
                ]


ANTI = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"


def _job_in(intent: AdmissionIntent, exprs: list[dict[str, Any]]) -> bool:
    return any(e["key"] == intent.job_label and e["operator"] == "In" for e in exprs)


def test_a_mutator_without_the_job_labels_exists_matches_the_same_pods() -> None:
    """Where a mutator's selector leaves out the job label's `Exists` (an `In` on it), it
    matches exactly the pods it would match with it: every case's pod, with and without
    the job label, and with each of the `In`'s values and another."""
    dropped = 0
    for suite in SUITES:
        intent = suite.intent
        for m in _objects(intent)[2:]:
            exprs = m["spec"]["match"]["labelSelector"]["matchExpressions"]
            if not _job_in(intent, exprs):
                continue
            dropped += 1
            values = {v for e in exprs if e["key"] == intent.job_label for v in e["values"]}
            full = [{"key": intent.job_label, "operator": "Exists"}, *exprs]
            for case in suite.cases:
                labels = dict(case.pod["metadata"].get("labels") or {})
                for job in (None, "another-job", *values):
                    pod = {k: v for k, v in labels.items() if k != intent.job_label}
                    if job is not None:
                        pod[intent.job_label] = job
                    assert _matches(exprs, pod) == _matches(full, pod), (m["metadata"], pod)
    assert dropped  # the suites have per-job buckets that name their jobs


PINS = ("Assign", "AssignMetadata")


def _guarded(intent: AdmissionIntent, mutators: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The mutators with each rest bucket's pinning selector as it was before it could
    leave its named jobs to the named buckets: `NotIn` them, in its namespace."""
    out = copy.deepcopy(mutators)
    for m in out:
        (ns,) = m["spec"]["match"]["namespaces"] if m["kind"] in PINS else (None,)
        exprs = m["spec"]["match"]["labelSelector"]["matchExpressions"]
        named = named_jobs(intent, ns) if ns else ()
        if named and not any(
            e["key"] == intent.job_label and e["operator"] != "Exists" for e in exprs
        ):
            exprs.append({"key": intent.job_label, "operator": "NotIn", "values": list(named)})
    return out


def test_a_rest_bucket_leaves_its_named_jobs_to_mutators_gatekeeper_runs_first() -> None:
    """A rest bucket's pinning mutator without the `NotIn` on the named jobs: each named
    bucket of its namespace has a mutator of its kind at its location that sorts first
    (Gatekeeper's order: kind, then name), and one that does not keeps the `NotIn`."""
    loosened = 0
    for suite in SUITES:
        intent = suite.intent
        if not intent.per_job:
            continue
        objs = _objects(intent)[2:]
        for m in objs:
            exprs = m["spec"]["match"]["labelSelector"]["matchExpressions"]
            if m["kind"] not in PINS or _job_in(intent, exprs):
                continue
            assert not any(e["key"] == intent.job_label and e["operator"] == "NotIn" for e in exprs)
            (ns,) = m["spec"]["match"]["namespaces"]
            loosened += 1
            for job in named_jobs(intent, ns):
                first = [
                    o
                    for o in objs
                    if (o["kind"], o["spec"]["location"], o["spec"]["match"]["namespaces"])
                    == (m["kind"], m["spec"]["location"], [ns])
                    and any(job in e.get("values", ()) for e in _exprs(o) if e["operator"] == "In")
                ]
                assert len(first) == 1 and first[0]["metadata"]["name"] < m["metadata"]["name"]
    assert loosened  # the spread suites' rest buckets


def _exprs(m: dict[str, Any]) -> list[dict[str, Any]]:
    return m["spec"]["match"]["labelSelector"]["matchExpressions"]


def test_runs_after_wants_every_named_bucket_first() -> None:
    from topogen.render.gatekeeper import _Mutator, _runs_after

    def pin(name: str, kind: str = "Assign", location: str = "spec.x") -> _Mutator:
        return _Mutator(kind, name, {}, location, {}, {})

    rest = pin("g-roles-0-3-zone-terms")
    assert _runs_after(rest, [pin("g-roles-0-1-zone-terms"), pin("g-roles-0-2-zone-terms")], 2)
    assert not _runs_after(rest, [pin("g-roles-0-1-zone-terms")], 2)  # a bucket without one
    assert not _runs_after(rest, [pin("g-roles-0-4-zone-terms")], 1)  # Gatekeeper runs it after
    assert not _runs_after(pin("g-roles-0-10-zone-terms"), [pin("g-roles-0-9-zone-terms")], 1)
    assert not _runs_after(rest, [pin("g-roles-0-1-zone-terms", location="spec.y")], 1)
    assert not _runs_after(rest, [pin("g-roles-0-1-zone-terms", kind="AssignMetadata")], 1)


@pytest.mark.tools
def test_a_rest_bucket_without_its_not_in_mutates_every_pod_the_same(tmp_path: Path) -> None:
    """gator expand (Gatekeeper's mutation System) on every admission case's pod, in each
    namespace, of each named job and of a job the render did not know: the mutators as
    rendered give exactly the pods that the rest buckets' `NotIn` on the named jobs gives."""
    gator = require_tool("gator")
    compared = 0
    for suite in SUITES:
        intent = suite.intent
        if not intent.per_job:
            continue
        mutators = gatekeeper_policies(intent)[2].objects
        guarded = _guarded(intent, mutators)
        assert guarded != mutators
        pods = []
        for case in suite.cases:
            if not case.admission:
                continue
            for ns in intent.namespaces:
                for job in (*named_jobs(intent, ns), "unknown-job"):
                    p = copy.deepcopy(case.pod)
                    p["metadata"]["name"] = f"{case.name}-{ns}-{job}"
                    p["metadata"]["namespace"] = ns
                    if intent.job_label in (p["metadata"].get("labels") or {}):
                        p["metadata"]["labels"][intent.job_label] = job
                    pods.append(p)
        got = gator_expand(gator, mutators, pods, tmp_path / suite.key / "rendered")
        want = gator_expand(gator, guarded, pods, tmp_path / suite.key / "guarded")
        assert len(got) == len(pods) and got == want
        compared += sum(got[p["metadata"]["name"]] != p for p in pods)
    assert compared  # pods the rest buckets' and the named buckets' mutators pinned


def test_a_queued_jobs_exclusions_are_one_modify_set_per_role_for_its_jobs_alone() -> None:
    for suite in SUITES:
        intent = suite.intent
        found = [m for m in _objects(intent)[2:] if m["spec"]["location"] == ANTI]
        roles = len(intent.coordinator) + len(intent.worker)  # one per role selector
        assert len(found) == (roles if intent.job_excludes else 0)
        for m in found:
            assert m["kind"] == "ModifySet" and m["spec"]["parameters"]["operation"] == "merge"
            exprs = m["spec"]["match"]["labelSelector"]["matchExpressions"]
            assert {"key": intent.job_label, "operator": "In", "values": ["run-2"]} in exprs
            assert m["spec"]["match"]["namespaces"] == [intent.job_excludes[0][0][0]]


def test_workers_exclude_every_coordinator_selector() -> None:
    """A worker's match negates each ORed coordinator selector (disjunctive form)."""
    intent = synthetic_intent()
    worker_sets = [
        # after the job label and the Kueue keys
        m["spec"]["match"]["labelSelector"]["matchExpressions"][1 + len(intent.skip_keys) :]
        for m in _objects(intent)[2:]
        if m["metadata"]["name"].startswith("topogen-llm-worker-") and m["kind"] == "ModifySet"
    ]
    role_in = {"key": "example.com/role", "operator": "In", "values": ["node", "ps"]}
    assert worker_sets == [
        [role_in, {"key": "example.com/role", "operator": "NotIn", "values": ["node"]}],
        [role_in, {"key": "example.com/rank", "operator": "NotIn", "values": ["0"]}],
    ]


def _matches(reqs: list[dict[str, Any]], labels: dict[str, str]) -> bool:
    """A label selector's requirements, as the API server reads them."""
    for r in reqs:
        have = labels.get(r["key"])
        ok = {
            "In": have is not None and have in r.get("values", ()),
            "NotIn": have is None or have not in r.get("values", ()),
            "Exists": have is not None,
            "DoesNotExist": have is None,
        }[r["operator"]]
        if not ok:
            return False
    return True


def test_union_matches_exactly_what_its_selectors_match() -> None:
    """Over every labelling of three keys: the union's selectors match a pod exactly when
    one of the given selectors does."""
    import itertools
    import random

    from topogen.render.requirements import union

    keys, values = ("a", "b", "c"), ("1", "2", "3")
    labellings = [
        {k: v for k, v in zip(keys, choice, strict=True) if v is not None}
        for choice in itertools.product((None, *values), repeat=len(keys))
    ]
    rng = random.Random(7)

    def requirement() -> dict[str, Any]:
        op = rng.choice(("In", "In", "NotIn", "Exists", "DoesNotExist"))
        r: dict[str, Any] = {"key": rng.choice(keys), "operator": op}
        if op in ("In", "NotIn"):
            r["values"] = rng.sample(values, rng.randint(1, 2))
        return r

    shrunk = 0
    for _ in range(400):
        given = [
            [requirement() for _ in range(rng.randint(0, 2))] for _ in range(rng.randint(1, 4))
        ]
        got = union(given)
        shrunk += len(got) < len(given)
        for labels in labellings:
            want = any(_matches(s, labels) for s in given)
            assert any(_matches(s, labels) for s in got) == want, (given, got, labels)
    assert shrunk > 50  # the cases do exercise the merging


def test_the_constraint_holds_each_selector_as_lookups() -> None:
    """A role's selector reaches the Rego as value sets per key: two `In` on a key keep
    the values both allow, two `NotIn` deny what either denies, matchLabels is an `In`."""
    from dataclasses import replace

    from topogen.model import LabelSelector, Requirement
    from topogen.render.gatekeeper import parameters

    sel = LabelSelector(
        match_labels=(("app", "x"),),
        match_expressions=(
            Requirement("role", "In", ("a", "b")),
            Requirement("role", "In", ("b", "c")),
            Requirement("tier", "NotIn", ("1",)),
            Requirement("tier", "NotIn", ("2",)),
            Requirement("gpu", "Exists"),
            Requirement("spot", "DoesNotExist"),
        ),
    )
    got = parameters(replace(synthetic_intent(), coordinator=(sel,)))["coordinators"]
    assert got == [
        {
            "in": {"app": {"x": True}, "role": {"b": True}},
            "notIn": {"tier": {"1": True, "2": True}},
            "exists": ["gpu"],
            "absent": ["spot"],
        }
    ]


def test_every_role_is_pinned_by_one_mutator_per_field() -> None:
    """The synthetic group's role selectors (role launcher; role node and rank 0; role
    node or ps) are one selector: role launcher, node or ps."""
    intent = synthetic_intent()
    pins = [m for m in _objects(intent)[2:] if m["kind"] in ("Assign", "AssignMetadata")]
    assert [m["spec"]["location"].split(".")[-1] for m in pins][:1] == [
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert len(pins) == 2
    for m in pins:
        exprs = m["spec"]["match"]["labelSelector"]["matchExpressions"]
        assert exprs[1 + len(intent.skip_keys) :] == [
            {"key": "example.com/role", "operator": "In", "values": ["launcher", "node", "ps"]}
        ]


def test_location_keys_are_quoted() -> None:
    assert location_key("topology.kubernetes.io/zone") == '"topology.kubernetes.io/zone"'
    assert location_key('a"b\\c') == '"a\\"b\\\\c"'


def test_enforcement_action_follows_the_validation_action() -> None:
    """Enforce denies; Audit is dryrun at Gatekeeper's audit and gator only (its webhook
    skips the Constraint), or everywhere with gatekeeper.auditAtAdmission."""
    specs = {
        (s.intent.validation_action, at): _objects(replace(s.intent, audit_at_admission=at))[1][
            "spec"
        ]
        for s in SUITES
        for at in (False, True)
    }
    actions = {
        k: (v["enforcementAction"], v.get("scopedEnforcementActions")) for k, v in specs.items()
    }
    off_webhook = [
        {
            "action": "dryrun",
            "enforcementPoints": [{"name": "audit.gatekeeper.sh"}, {"name": "gator.gatekeeper.sh"}],
        }
    ]
    assert actions == {
        ("Audit", False): ("scoped", off_webhook),
        ("Audit", True): ("dryrun", None),
        ("Enforce", False): ("deny", None),
        ("Enforce", True): ("deny", None),
    }


def test_old_clusters_are_refused() -> None:
    with pytest.raises(TopogenError, match=r"Kubernetes 1\.31 or later"):
        gatekeeper_policies(SUITES[0].intent, kubernetes_version="1.30")
    assert gatekeeper_policies(SUITES[0].intent, kubernetes_version="1.31")


def test_the_module_documents_exactly_the_differences_the_suite_declares() -> None:
    declared = {
        name
        for suite in SUITES
        for case in suite.cases
        for name in case.differences.get("gatekeeper", ())
    }
    assert declared == set(DIFFERENCES)


# --- the real tools ----------------------------------------------------------------------


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for suite in SUITES:
        root = tmp_path_factory.mktemp(f"gatekeeper-{suite.key}")
        out[suite.key] = _write(
            root, gatekeeper_policies(suite.intent) + gatekeeper_test_files(suite.intent)
        )
    return out


@pytest.mark.tools
@pytest.mark.parametrize("key", [s.key for s in SUITES])
def test_gator_verify_passes_on_the_generated_suites(rendered: dict[str, Path], key: str) -> None:
    gator = require_tool("gator")
    proc = _run([str(gator), "verify", "-v", "./..."], rendered[key])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "--- PASS" in proc.stdout and "FAIL" not in proc.stdout


@pytest.mark.tools
def test_gator_verify_fails_a_wrong_expectation(rendered: dict[str, Path], tmp_path: Path) -> None:
    """The suites are not vacuous: flip one case's expectation and gator fails it."""
    gator = require_tool("gator")
    root = rendered[SUITES[0].key]
    suite_file = next(root.glob("tests/*/suite.yaml"))
    suite = yaml.safe_load(suite_file.read_text(encoding="utf-8"))
    case = next(c for c in suite["tests"][0]["cases"] if c["name"] == "unpinned-coordinator")
    case["assertions"] = [{"violations": "no"}]
    suite_file.with_name("flipped.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    try:
        proc = _run([str(gator), "verify", str(suite_file.with_name("flipped.yaml"))], root)
    finally:
        suite_file.with_name("flipped.yaml").unlink()
    assert proc.returncode != 0 and "unpinned-coordinator" in proc.stdout


@pytest.mark.tools
@pytest.mark.parametrize("key", [s.key for s in SUITES])
def test_opa_test_passes_on_the_generated_rego_tests(rendered: dict[str, Path], key: str) -> None:
    opa = require_tool("opa")
    folder = next(rendered[key].glob("tests/*/rego"))
    check = _run([str(opa), "check", "--strict", "."], folder)
    assert check.returncode == 0, check.stdout + check.stderr
    fmt = _run([str(opa), "fmt", "--list", "--fail", "colocation.rego"], folder)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    proc = _run([str(opa), "test", ".", "-v"], folder)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cases = len(list(rendered[key].glob("tests/*/cases/*.yaml")))
    assert f"PASS: {cases}/{cases}" in proc.stdout


@pytest.mark.tools
def test_gator_expand_converges_and_repeats(tmp_path: Path) -> None:
    """Mutating the mutated pods again changes nothing (the mutators converge)."""
    gator = require_tool("gator")
    suite = SUITES[1]
    mutators = gatekeeper_policies(suite.intent)[2].objects
    pods = [c.pod for c in suite.cases if c.admission]
    once = gator_expand(gator, mutators, pods, tmp_path / "once")
    twice = gator_expand(gator, mutators, list(once.values()), tmp_path / "twice")
    assert twice == once


def test_rendered_tree_from_the_cli(tmp_path: Path) -> None:
    """`topogen render` with engines [gatekeeper, native] writes both folders."""
    import shutil

    from click.testing import CliRunner

    from topogen.cli import main

    example = tmp_path / "zone-split"
    shutil.copytree(REPO / "examples" / "zone-split", example)
    cfg = yaml.safe_load((example / "topogen.yaml").read_text(encoding="utf-8"))
    cfg["engines"] = ["gatekeeper", "native"]
    (example / "topogen.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main, ["render", "-c", str(example / "topogen.yaml"), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    gk = out / "policies" / "lab" / "gatekeeper"
    assert (gk / "topogen-ml-training-template.yaml").is_file()
    assert (gk / "tests" / "topogen-ml-training" / "suite.yaml").is_file()
    assert (out / "policies" / "lab" / "native" / "topogen-ml-training-validate.yaml").is_file()
