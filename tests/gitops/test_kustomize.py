"""The kustomize/ tree, built with the real `kubectl kustomize`: overlays and components."""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from tooling import REPO, module_dir
from topogen.cli import main
from topogen.render.kustomize import DEPRECATED_FIELDS

from .gitops_kit import (
    EXAMPLES,
    ZONE_SPLIT,
    copy_inputs,
    ident,
    is_object,
    kustomize,
    rel,
    render,
    write_kustomization,
)

COMPONENTS = ("audit", "enforce", "workload-patches")
WAVE = "argocd.argoproj.io/sync-wave"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """zone-split as two clusters: `lab` (Kyverno CEL policies) and `lab-legacy` (every
    other engine: Kyverno ClusterPolicy, Gatekeeper, ValidatingAdmissionPolicy)."""
    root = tmp_path_factory.mktemp("fleet")
    cfg = yaml.safe_load((ZONE_SPLIT / "topogen.yaml").read_text())
    (lab,) = cfg["clusters"]
    for key in ("nodes", "networkPolicies"):
        copy_inputs(ZONE_SPLIT, root, lab[key])
    legacy = {
        **lab,
        "name": "lab-legacy",
        "engines": ["kyverno-legacy", "gatekeeper", "native"],
        "validationAction": "Enforce",
    }
    cfg["clusters"] = [lab, legacy]
    copy_inputs(ZONE_SPLIT, root, cfg["workloads"])
    (root / "topogen.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return render(root / "topogen.yaml", root / "out")


def _stdout_objects(config: Path, cluster: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(
        main, ["render", "-c", str(config), "--stdout", "--cluster", cluster]
    )
    assert result.exit_code == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d is not None]


def _kustomizations(root: Path) -> Iterator[Path]:
    yield from sorted(root.rglob("kustomization.yaml"))


POLICY_GROUPS = {
    "policies.kyverno.io",
    "kyverno.io",
    "templates.gatekeeper.sh",
    "constraints.gatekeeper.sh",
    "mutations.gatekeeper.sh",
    "admissionregistration.k8s.io",
}


def _policies(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objs if o["apiVersion"].rpartition("/")[0] in POLICY_GROUPS]


def _actions(objs: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(kind, Audit or Enforce) for every validating policy, whatever the engine."""
    out: set[tuple[str, str]] = set()
    for o in _policies(objs):
        group, spec = o["apiVersion"].rpartition("/")[0], o["spec"]
        if o["kind"] in ("ValidatingPolicy", "ValidatingAdmissionPolicyBinding"):
            (action,) = spec["validationActions"]
            out.add((o["kind"], {"Audit": "Audit", "Deny": "Enforce"}[action]))
        elif (
            o["kind"] == "ClusterPolicy"
            and o["metadata"]["labels"]["topogen.io/role"] == "validate"
        ):
            # each rule's failureAction (the deprecated spec-level field is not written)
            assert "validationFailureAction" not in spec
            (action,) = {r["validate"]["failureAction"] for r in spec["rules"]}
            out.add((o["kind"], action))
        elif group == "constraints.gatekeeper.sh":
            action = spec["enforcementAction"]
            if action == "scoped":  # Audit off the webhook: dryrun at audit and gator
                (scoped,) = spec["scopedEnforcementActions"]
                points = {p["name"] for p in scoped["enforcementPoints"]}
                assert points == {"audit.gatekeeper.sh", "gator.gatekeeper.sh"}
                action = scoped["action"]
            out.add(("Constraint", {"dryrun": "Audit", "deny": "Enforce"}[action]))
    return out


VALIDATING = {
    "lab": {"ValidatingPolicy"},
    "lab-legacy": {"ClusterPolicy", "Constraint", "ValidatingAdmissionPolicyBinding"},
}


def test_tree_layout(fleet: Path) -> None:
    k = fleet / "kustomize"
    assert sorted(p.relative_to(k).as_posix() for p in _kustomizations(k)) == [
        "base/kustomization.yaml",
        "components/audit/kustomization.yaml",
        "components/enforce/kustomization.yaml",
        "components/workload-patches/lab-legacy/kustomization.yaml",
        "components/workload-patches/lab/kustomization.yaml",
        "overlays/lab-legacy/kustomization.yaml",
        "overlays/lab/kustomization.yaml",
    ]


@pytest.mark.parametrize("root", [REPO, None], ids=["committed", "fleet"])
def test_only_current_kustomize_fields(root: Path | None, fleet: Path) -> None:
    base = root or fleet
    found = list(_kustomizations(base / "kustomize")) + list(_kustomizations(base / "policies"))
    assert found
    for path in found:
        doc = yaml.safe_load(path.read_text())
        assert not DEPRECATED_FIELDS & set(doc), path
        assert (doc["apiVersion"], doc["kind"]) in {
            ("kustomize.config.k8s.io/v1beta1", "Kustomization"),
            ("kustomize.config.k8s.io/v1alpha1", "Component"),
        }, path


def test_policy_folders_list_policy_files_only(fleet: Path) -> None:
    # policies/<cluster>/ holds one folder per engine (and placements.yaml, no object)
    for engine_dir in sorted(p for p in (fleet / "policies").glob("*/*") if p.is_dir()):
        listed = yaml.safe_load((engine_dir / "kustomization.yaml").read_text())["resources"]
        files = sorted(p.name for p in engine_dir.glob("*.yaml") if p.name != "kustomization.yaml")
        assert listed == files and all("test" not in f for f in listed)
        built = kustomize(engine_dir)
        in_files = [d for f in files for d in yaml.safe_load_all((engine_dir / f).read_text()) if d]
        assert sorted(map(ident, built)) == sorted(map(ident, in_files))


@pytest.mark.parametrize("cluster", ["lab", "lab-legacy"])
def test_overlay_is_the_plugin_output(fleet: Path, cluster: str) -> None:
    """An overlay builds the objects `render --stdout --cluster` prints, with waves and labels."""
    built = kustomize(fleet / "kustomize" / "overlays" / cluster)
    streamed = _stdout_objects(fleet.parent / "topogen.yaml", cluster)
    assert sorted(map(ident, built)) == sorted(map(ident, streamed))
    assert {k for k, _ in _actions(built)} == VALIDATING[cluster]
    for o in built:
        assert o["metadata"]["labels"]["topogen.io/cluster"] == cluster
        wave = (o["metadata"].get("annotations") or {}).get(WAVE)
        if o["kind"] == "ConstraintTemplate":
            assert wave == "-2"  # defines the Constraint's kind
        else:
            assert wave == ("-1" if o in _policies(built) else None), ident(o)


@functools.cache
def _plain(overlay: Path) -> list[dict[str, Any]]:
    return kustomize(overlay)


def _combos() -> list[tuple[str, ...]]:
    return [
        c
        for n in range(len(COMPONENTS) + 1)
        for c in itertools.permutations(COMPONENTS, n)
        if list(c) == sorted(c) or set(c) == {"audit", "enforce"}
    ]


@pytest.mark.parametrize("cluster", ["lab", "lab-legacy"])
@pytest.mark.parametrize("components", _combos(), ids=lambda c: "+".join(c) or "none")
def test_every_component_combination_builds(
    fleet: Path, tmp_path: Path, cluster: str, components: tuple[str, ...]
) -> None:
    k = fleet / "kustomize"
    paths = [k / "components" / c for c in components]
    paths = [p / cluster if p.name == "workload-patches" else p for p in paths]
    user = tmp_path / "mine"
    user.mkdir()
    resources = [rel(k / "overlays" / cluster, user)]
    if "workload-patches" in components:
        for f in sorted((ZONE_SPLIT / "workloads" / "before").glob("*.yaml")):
            (user / f.name).write_text(f.read_text())
            resources.append(f.name)
    write_kustomization(user, resources=resources, components=[rel(p, user) for p in paths])
    built = kustomize(user)
    plain = _plain(k / "overlays" / cluster)
    assert {ident(o) for o in _policies(built)} == {ident(o) for o in _policies(plain)}
    last = next((c for c in reversed(components) if c in ("audit", "enforce")), None)
    action = {
        None: "Audit" if cluster == "lab" else "Enforce",
        "audit": "Audit",
        "enforce": "Enforce",
    }[last]
    assert _actions(built) == {(kind, action) for kind in VALIDATING[cluster]}
    for vpol in (o for o in built if o["kind"] == "ValidatingPolicy"):
        # Enforce: Kyverno generates a ValidatingAdmissionPolicy; Audit: background scans
        autogen = vpol["spec"]["autogen"]["validatingAdmissionPolicy"]
        assert autogen == {"enabled": action == "Enforce"}
        assert vpol["spec"]["evaluation"] == {
            "admission": {"enabled": action == "Enforce"},
            "background": {"enabled": True},
        }
    if "workload-patches" in components:
        coordinator = next(o for o in built if o["kind"] == "Deployment")
        spec = coordinator["spec"]["template"]["spec"]
        assert spec["tolerations"] and spec["affinity"]["nodeAffinity"]


@pytest.mark.parametrize(
    "example", sorted(p.name for p in EXAMPLES.iterdir() if (p / "topogen.yaml").exists())
)
def test_every_example_overlay_builds(example: str, tmp_path: Path) -> None:
    out = render(EXAMPLES / example / "topogen.yaml", tmp_path / "out")
    overlays = sorted((out / "kustomize" / "overlays").iterdir())
    assert overlays
    for overlay in overlays:
        built = kustomize(overlay)
        assert all(is_object(o) for o in built)
        expected = {
            ident(d)
            for f in sorted((out / "policies" / overlay.name).glob("*/*.yaml"))
            if f.name != "kustomization.yaml"
            for d in yaml.safe_load_all(f.read_text())
            if d
        }
        assert expected and expected <= {ident(o) for o in built}


def test_committed_overlays_build() -> None:
    overlays = sorted((REPO / "kustomize" / "overlays").iterdir())
    assert [o.name for o in overlays] == ["lab"]
    names = {o["metadata"]["name"] for o in kustomize(overlays[0])}
    assert {
        "topogen-ml-training-mutate",
        "topogen-ml-training-validate",
    } <= names


def _gatekeeper_config(tmp: Path, failure_policy: str | None) -> Path:
    cfg = yaml.safe_load((ZONE_SPLIT / "topogen.yaml").read_text())
    (lab,) = cfg["clusters"]
    for key in ("nodes", "networkPolicies"):
        copy_inputs(ZONE_SPLIT, tmp, lab[key])
    copy_inputs(ZONE_SPLIT, tmp, cfg["workloads"])
    cfg["engines"] = ["gatekeeper"]
    if failure_policy is not None:
        cfg["gatekeeper"] = {"failurePolicy": failure_policy}
    (tmp / "topogen.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return tmp / "topogen.yaml"


@pytest.mark.tools
def test_gatekeeper_fail_closed_component_on_gatekeepers_release_manifest(
    tmp_path: Path,
) -> None:
    """gatekeeper.failurePolicy: Fail renders a Component that, built with the release
    manifest of the pinned Gatekeeper, sets Fail on its two policy webhooks and changes
    nothing else."""
    out = render(_gatekeeper_config(tmp_path, "Fail"), tmp_path / "out")
    component = out / "kustomize" / "components" / "gatekeeper-fail-closed"
    release = module_dir("gatekeeper", "github.com/open-policy-agent/gatekeeper/v3")
    install = tmp_path / "gatekeeper-install"
    install.mkdir()
    (install / "gatekeeper.yaml").write_bytes((release / "deploy" / "gatekeeper.yaml").read_bytes())
    plain = kustomize(write_kustomization(install, resources=["gatekeeper.yaml"]))
    patched = kustomize(
        write_kustomization(
            install, resources=["gatekeeper.yaml"], components=[rel(component, install)]
        )
    )
    assert len(plain) == len(patched)
    changed = []
    for a, b in zip(plain, patched, strict=True):
        if a == b:
            continue
        assert a["kind"].endswith("WebhookConfiguration"), a["kind"]
        for wa, wb in zip(a["webhooks"], b["webhooks"], strict=True):
            if wa != wb:
                assert wa | {"failurePolicy": "Fail"} == wb
                changed.append((a["metadata"]["name"], wa["name"], wa["failurePolicy"]))
    assert sorted(changed) == [
        ("gatekeeper-mutating-webhook-configuration", "mutation.gatekeeper.sh", "Ignore"),
        ("gatekeeper-validating-webhook-configuration", "validation.gatekeeper.sh", "Ignore"),
    ]


def test_gatekeeper_fails_open_by_default_and_says_so(tmp_path: Path) -> None:
    config = _gatekeeper_config(tmp_path, None)
    out = render(config, tmp_path / "out")
    assert not (out / "kustomize" / "components" / "gatekeeper-fail-closed").exists()
    result = CliRunner().invoke(main, ["analyze", "-c", str(config), "-o", "json"])
    (warning,) = json.loads(result.stdout)["warnings"]
    assert warning.startswith("cluster lab: Gatekeeper's webhooks fail open (failurePolicy Ignore")
    assert "pods are admitted unmutated and unchecked" in warning
    assert "gatekeeper.failurePolicy: Fail" in warning
    rendered = CliRunner().invoke(main, ["render", "-c", str(config), "--out", str(tmp_path / "o")])
    assert f"topogen: warning: {warning}" in rendered.stderr


@pytest.mark.parametrize("example", ["zone-split", "hostnetwork-mpi", "pytorch-three-zone"])
def test_stdout_means_what_the_overlay_builds(example: str, tmp_path: Path) -> None:
    """`render --stdout --cluster C` (the Argo CD plugin) prints the objects the real
    `kubectl kustomize kustomize/overlays/C` builds: cluster label and sync waves too."""
    config = EXAMPLES / example / "topogen.yaml"
    out = render(config, tmp_path)
    for overlay in sorted((out / "kustomize" / "overlays").iterdir()):
        built = sorted(kustomize(overlay), key=ident)
        streamed = CliRunner().invoke(
            main, ["render", "-c", str(config), "--stdout", "--cluster", overlay.name]
        )
        assert streamed.exit_code == 0, streamed.output
        docs = sorted((d for d in yaml.safe_load_all(streamed.stdout) if d), key=ident)
        assert docs == built
        waves = [o["metadata"].get("annotations", {}) for o in docs if "policies" in str(o)]
        assert any("argocd.argoproj.io/sync-wave" in a for a in waves)
        assert all(o["metadata"]["labels"]["topogen.io/cluster"] == overlay.name for o in docs)
