"""The gatekeeper engine through Gatekeeper's controller-manager (v3.23.1, out of cluster,
mutation enabled; see gatekeeper_harness.py) with the real kube-scheduler.

The zone-split group's pods, created as the Deployment and Job controllers create them,
are mutated at admission as `gator expand` mutates them and land in one allowed zone;
the engine-neutral cases of tests/engines give the answers gator is held to, through
the API server; and with Gatekeeper down its webhooks' failurePolicy Ignore (the
release's default) admits the group unconstrained, so the scheduler splits it again,
while the rendered gatekeeper-fail-closed Component makes the API server reject it.
"""

from __future__ import annotations

import copy
import json
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from gatekeeper_harness import Gatekeeper, mutators, start_gatekeeper
from live_harness import ControlPlane
from live_kit import (
    EXAMPLE,
    NS,
    cli,
    create_pod_raw,
    docs,
    example_snapshot,
    pods_of,
    project,
    write_config,
)
from webhook_harness import (
    WEBHOOK_PLUGINS,
    Answer,
    plane_with,
    wait_answered,
    wait_bound,
)

from engines.cases import Pod, Suite, expected, suites
from engines.engines import Checks, gator_expand
from tooling import require_plane_tool, require_tool
from topogen.config import load_config
from topogen.pipeline.analyze import analyze
from topogen.render.gatekeeper import gatekeeper_policies

BEFORE = EXAMPLE / "workloads" / "before"

pytestmark = [pytest.mark.slow, pytest.mark.tools]


@pytest.fixture(scope="module")
def gatekeeper_plane(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ControlPlane, Gatekeeper]]:
    binary = require_plane_tool("gatekeeper-controller-manager")
    work = tmp_path_factory.mktemp("gatekeeper-plane")
    yield from plane_with(
        work, WEBHOOK_PLUGINS, lambda cp: start_gatekeeper(cp, binary, work / "gatekeeper")
    )


@pytest.fixture
def plane(
    gatekeeper_plane: tuple[ControlPlane, Gatekeeper],
) -> Iterator[tuple[ControlPlane, Gatekeeper]]:
    cp, g = gatekeeper_plane
    if not g.alive():
        g.start()
    g.register(g.configs)  # as released (a test may have patched them)
    cp.reset()
    yield cp, g
    if not g.alive():
        g.start()
    g.clear()


def as_stored(pod: Pod) -> Pod:
    """A pod as the API server stores it after admission: each required pod (anti-)affinity
    term's matchLabelKeys become `<key> In (<the pod's value>)` in its labelSelector
    (Kubernetes 1.31+, MatchLabelKeysInPodAffinity); gator leaves them as they are."""
    out = copy.deepcopy(pod)
    labels = out["metadata"].get("labels") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        terms = ((out["spec"].get("affinity") or {}).get(kind) or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        ) or []
        for term in terms:
            sel = term.setdefault("labelSelector", {})
            for key in term.get("matchLabelKeys") or []:
                if key in labels:
                    sel.setdefault("matchExpressions", []).append(
                        {"key": key, "operator": "In", "values": [labels[key]]}
                    )
    return out


def _objects(files: Sequence[Any]) -> list[dict[str, Any]]:
    return [copy.deepcopy(o) for f in files for o in f.objects]


def _install(
    g: Gatekeeper,
    objs: Sequence[dict[str, Any]],
    probe: Pod,
    answered: Callable[[Answer], bool] | None = None,
) -> None:
    """Create the objects; wait until Gatekeeper reports each enforced and the API server's
    answer for `probe` (a dry run) is theirs: `answered`, by default the probe as gator
    (the same mutation code) mutates it with the mutators among `objs`."""
    g.cp.ensure_namespace(probe["metadata"]["namespace"])
    if answered is None:
        answered = _gator_mutation(objs, probe)
    g.apply(objs)
    g.wait_enforced(objs)
    wait_answered(g.cp, probe, answered, "Gatekeeper at admission")


def _gator_mutation(objs: Sequence[dict[str, Any]], probe: Pod) -> Callable[[Answer], bool]:
    mutating = mutators(objs)
    assert mutating, "no mutator to probe: pass `answered`"
    with tempfile.TemporaryDirectory(prefix="topogen-probe-") as tmp:
        by_gator = gator_expand(require_tool("gator"), mutating, [probe], Path(tmp))
    want = project(as_stored(by_gator[probe["metadata"]["name"]]))
    assert want != project(probe), "the probe is a pod the mutators leave as is"
    return lambda a: a[0] == 201 and project(a[1]) == want


def _warned(constraint: str, want: Checks) -> Callable[[Answer], bool]:
    """The answer of a `warn` constraint: admitted, warned exactly `want`."""
    prefix = f"[{constraint}] "
    return lambda a: (
        a[0] == 201
        and all(w.startswith(prefix) for w in a[2])
        and _checks(a[2], constraint) == want
    )


def _render(config: Path, out: Path) -> list[dict[str, Any]]:
    raw = yaml.safe_load(config.read_text())
    raw["engines"] = ["gatekeeper"]
    config.write_text(yaml.safe_dump(raw, sort_keys=False))
    rendered = cli("render", "-c", config, "--out", out)
    assert rendered.exit_code == 0, rendered.output
    (folder,) = (out / "policies").glob("*/gatekeeper")
    order = {"ConstraintTemplate": 0}
    objs = [
        d
        for f in sorted(folder.glob("topogen-*.yaml"))
        for d in yaml.safe_load_all(f.read_text(encoding="utf-8"))
        if d
    ]
    return sorted(objs, key=lambda d: order.get(d["kind"], 1))


def _schedule(
    cp: ControlPlane, pods: Sequence[dict[str, Any]], admitted: dict[str, Any] | None = None
) -> dict[str, str]:
    """Coordinators first, then workers: pod -> zone of the node it was bound to;
    `admitted` gets each pod as admission returned it."""
    first = [p for p in pods if p["metadata"]["labels"].get("role") == "coordinator"]
    zones = {}
    for batch in (first, [p for p in pods if p not in first]):
        for p in batch:
            status, body, _ = create_pod_raw(cp, p, dry_run=False)
            assert status == 201, body
            if admitted is not None:
                admitted[p["metadata"]["name"]] = body
        names = [p["metadata"]["name"] for p in batch]
        for name, node in wait_bound(cp, NS, names).items():
            labels = cp.kube().get(f"/api/v1/nodes/{node}")["metadata"]["labels"]
            zones[name] = labels["topology.kubernetes.io/zone"]
    return zones


def test_gatekeeper_zone_split_pods_mutated_at_admission_land_in_one_zone(
    plane: tuple[ControlPlane, Gatekeeper], tmp_path: Path
) -> None:
    cp, g = plane
    gator = require_tool("gator")
    snap = example_snapshot(cp, tmp_path)
    config = write_config(tmp_path, nodes=[snap], workloads=[BEFORE])
    objs = _render(config, tmp_path / "out")
    pods = pods_of(docs(BEFORE))
    _install(g, objs, pods[0])
    by_gator = gator_expand(gator, mutators(objs), pods, tmp_path)
    for pod in pods:
        status, body, _ = create_pod_raw(cp, pod)
        assert status == 201, body
        want = as_stored(by_gator[pod["metadata"]["name"]])
        assert project(body) == project(want), json.dumps([project(body), project(want)])
    zones = _schedule(cp, pods)
    (plan,) = analyze(load_config(config)).plans
    assert set(zones.values()) == set(plan.zones) == {"zone-a"}


_CHECK = (
    (re.compile(r"must be pinned to "), "coordinator-pinned"),
    (re.compile(r"must require pod affinity"), "worker-affinity"),
    (re.compile(r": identity label "), "identity"),
)


def _checks(warnings: Sequence[str], constraint: str) -> Checks:
    """(check, message) of each violation, from the `warn` constraint's warnings."""
    out = []
    for w in warnings:
        prefix = f"[{constraint}] "
        assert w.startswith(prefix), w
        message = w.removeprefix(prefix)
        span = re.search(r": node affinity spans (\S+) and (\S+), whose", message)
        check = (
            f"denied:{span[1]}:{span[2]}"
            if span
            else next(c for pattern, c in _CHECK if pattern.search(message))
        )
        out.append((check, message))
    return tuple(sorted(out))


SUITES = suites()


def _rego_alone(template: dict[str, Any]) -> dict[str, Any]:
    """The ConstraintTemplate with its Rego alone: what Gatekeeper runs with native
    validation off (as rendered, it runs the K8sNativeValidation CEL)."""
    for target in template["spec"]["targets"]:
        target["code"] = [c for c in target["code"] if c["engine"] == "Rego"]
    return template


@pytest.mark.parametrize("engine", ["rendered", "Rego"])
@pytest.mark.parametrize("suite", SUITES, ids=[s.key for s in SUITES])
def test_gatekeeper_admission_behaves_as_gator(
    plane: tuple[ControlPlane, Gatekeeper], suite: Suite, engine: str
) -> None:
    """tests/engines' cases created (dryRun=All) through the API server: the pods Gatekeeper
    returns and the violations it reports (enforcementAction warn: a warning each) are
    what gator is held to (expected(case, "gatekeeper")), with the template's CEL and
    with its Rego."""
    cp, g = plane
    for ns in sorted({c.pod["metadata"]["namespace"] for c in suite.cases}):
        cp.ensure_namespace(ns)
    template, constraint, *mutators = _objects(gatekeeper_policies(suite.intent))
    if engine == "Rego":
        template = _rego_alone(template)
    constraint["spec"]["enforcementAction"] = "warn"
    name = constraint["metadata"]["name"]
    only = [c for c in suite.cases if not c.admission]
    admission = [c for c in suite.cases if c.admission]
    wrong = []
    unpinned = suite.case("unpinned-coordinator")
    warned = _warned(name, expected(unpinned, "gatekeeper", suite.intent).checks)
    _install(g, [template, constraint], unpinned.pod, warned)
    for case in only:
        status, body, warnings = create_pod_raw(cp, case.pod)
        assert status == 201, body
        want = expected(case, "gatekeeper", suite.intent).checks
        if _checks(warnings, name) != want:
            wrong.append(f"{case.name}: expected {want}, got {_checks(warnings, name)}")
    first = project(as_stored(expected(admission[0], "gatekeeper", suite.intent).pod))
    _install(g, mutators, admission[0].pod, lambda a: a[0] == 201 and project(a[1]) == first)
    for case in admission:
        status, body, warnings = create_pod_raw(cp, case.pod)
        assert status == 201, body
        want_ = expected(case, "gatekeeper", suite.intent)
        if project(body) != project(as_stored(want_.pod)):
            wrong.append(
                f"{case.name}: mutated {project(body)}\n  want {project(as_stored(want_.pod))}"
            )
        if _checks(warnings, name) != want_.checks:
            wrong.append(f"{case.name}: expected {want_.checks}, got {warnings}")
    assert not wrong, "\n".join(wrong)


def test_gatekeeper_audit_is_scoped_off_the_webhook(
    plane: tuple[ControlPlane, Gatekeeper],
) -> None:
    """Under Audit the Constraint is scoped to Gatekeeper's audit and gator: its webhook
    skips it. Its action made `warn` (the webhook's only visible trace): warned while its
    points include validation.gatekeeper.sh, not once they are the rendered ones."""
    cp, g = plane
    suite = next(s for s in SUITES if s.intent.validation_action == "Audit")
    template, constraint, *_ = _objects(gatekeeper_policies(suite.intent))
    spec = constraint["spec"]
    assert spec["enforcementAction"] == "scoped"
    (scoped,) = spec["scopedEnforcementActions"]
    rendered = scoped["enforcementPoints"]
    assert {p["name"] for p in rendered} == {"audit.gatekeeper.sh", "gator.gatekeeper.sh"}
    scoped["action"] = "warn"
    unpinned = suite.case("unpinned-coordinator")
    name = constraint["metadata"]["name"]
    want = expected(unpinned, "gatekeeper", suite.intent).checks
    assert want, "the probe violates a check"
    scoped["enforcementPoints"] = [*rendered, {"name": "validation.gatekeeper.sh"}]
    _install(g, [template, constraint], unpinned.pod, _warned(name, want))
    g.delete([constraint])
    scoped["enforcementPoints"] = rendered
    _install(g, [constraint], unpinned.pod, _warned(name, ()))
    status, _, warnings = create_pod_raw(cp, unpinned.pod)
    assert status == 201 and warnings == [], (status, warnings)


def test_gatekeeper_deny_rejects_with_the_checks_message(
    plane: tuple[ControlPlane, Gatekeeper],
) -> None:
    cp, g = plane
    suite = SUITES[0]
    intent = replace(suite.intent, validation_action="Enforce")
    template, constraint, *_ = _objects(gatekeeper_policies(intent))
    assert constraint["spec"]["enforcementAction"] == "deny"
    bad = suite.case("unpinned-coordinator").pod
    tag = f"[{constraint['metadata']['name']}] "
    _install(g, [template, constraint], bad, lambda a: a[0] == 403 and tag in a[1]["message"])
    status, body, _ = create_pod_raw(cp, bad)
    assert status == 403, body
    message = body["message"]
    assert message.startswith('admission webhook "validation.gatekeeper.sh" denied')
    assert f"[{constraint['metadata']['name']}] pod unpinned-coordinator: " in message
    assert "must be pinned to" in message


def _fail_closed(g: Gatekeeper, tmp: Path) -> list[Mapping[str, Any]]:
    """Gatekeeper's webhook configurations with the rendered fail-closed Component's
    patches applied (the Component itself is built with the real kustomize in
    tests/gitops)."""
    config = write_config(
        tmp,
        nodes=[EXAMPLE / "cluster" / "nodes.yaml"],
        policies=[EXAMPLE / "cilium"],
        workloads=[BEFORE],
        name="fail.yaml",
    )
    cfg = yaml.safe_load(config.read_text())
    cfg |= {"engines": ["gatekeeper"], "gatekeeper": {"failurePolicy": "Fail"}}
    config.write_text(yaml.safe_dump(cfg))
    rendered = cli("render", "-c", config, "--out", tmp / "fail")
    assert rendered.exit_code == 0, rendered.output
    component = tmp / "fail" / "kustomize" / "components" / "gatekeeper-fail-closed"
    patches = yaml.safe_load((component / "kustomization.yaml").read_text())["patches"]
    out = copy.deepcopy(g.configs)
    for p in patches:
        change = yaml.safe_load(p["patch"])
        (cfg_,) = [c for c in out if c["metadata"]["name"] == change["metadata"]["name"]]
        for hook in change["webhooks"]:
            (target,) = [w for w in cfg_["webhooks"] if w["name"] == hook["name"]]
            target.update(hook)
    return out


def test_gatekeeper_down_fails_open_and_the_component_closes_it(
    plane: tuple[ControlPlane, Gatekeeper], tmp_path: Path
) -> None:
    cp, g = plane
    snap = example_snapshot(cp, tmp_path)
    config = write_config(tmp_path, nodes=[snap], workloads=[BEFORE])
    objs = _render(config, tmp_path / "out")
    pods = pods_of(docs(BEFORE))
    _install(g, objs, pods[0])
    assert {
        w["failurePolicy"] for c in g.configs for w in c["webhooks"] if "policy" not in w["name"]
    } >= {"Ignore"}

    g.kill()
    # fail open: admitted as submitted, and the scheduler splits the group again
    admitted: dict[str, Any] = {}
    zones = _schedule(cp, pods, admitted)
    assert {z for p, z in zones.items() if "coordinator" in p} == {"zone-b"}
    assert {z for p, z in zones.items() if "workers" in p} == {"zone-a"}
    for p in pods:
        assert project(admitted[p["metadata"]["name"]]) == project(p)

    g.register(_fail_closed(g, tmp_path))
    again = copy.deepcopy(pods[0])
    again["metadata"]["name"] = "trainer-coordinator-again"
    wait_answered(
        cp,
        again,
        lambda a: (
            a[0] == 500 and 'failed calling webhook "mutation.gatekeeper.sh"' in a[1]["message"]
        ),
        "the fail-closed webhooks",
    )
    status, body, _ = create_pod_raw(cp, again)
    assert status == 500 and body["reason"] == "InternalError", body
    assert 'failed calling webhook "mutation.gatekeeper.sh"' in body["message"], body
