"""The plugin through Argo CD v3.6.2's own code (tests/gitops/argocd_kit.py): its CMP server
on argocd/plugin.yaml as the sidecar runs it, and the repo-server's GenerateManifests and
discovery on Applications built from argocd/application.yaml and applicationset.yaml.

A checkout here is what the repo-server fetched: an example's inputs with topogen.yaml at
the root and its rendered tree (kustomize/, policies/, monitoring/) beside it, as a GitOps
repository holds them. Argo CD streams it to the sidecar and unpacks it there.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from .argocd_kit import (
    ARGOCD,
    FAILED,
    Rendered,
    Sidecar,
    appset_applications,
    discover,
    generate,
    plugin_application,
    sidecar,
    untracked,
)
from .gitops_kit import EXAMPLES, ZONE_SPLIT, ident, kustomize, render

EXAMPLE_CLUSTERS = {
    "zone-split": "lab",
    "pytorch-three-zone": "prod-east",
    "pytorch-scale-from-zero": "prod-east",
    "hostnetwork-mpi": "hpc",
}


pytestmark = pytest.mark.tools  # tools/argocd-cmp


@pytest.fixture(scope="module")
def side() -> Iterator[Sidecar]:
    with sidecar() as running:
        yield running


def checkout(dest: Path, example: str = "zone-split", config: dict[str, Any] | None = None) -> Path:
    """The example (its topogen.yaml replaced by `config`) with its rendered tree."""
    shutil.copytree(EXAMPLES / example, dest)
    if config is not None:
        (dest / "topogen.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    render(dest / "topogen.yaml", dest)
    return dest


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return checkout(tmp_path_factory.mktemp("argocd") / "repo")


def overlay(repo: Path, cluster: str) -> list[dict[str, Any]]:
    return sorted(kustomize(repo / "kustomize" / "overlays" / cluster), key=ident)


def assert_renders_overlay(rendered: Rendered, repo: Path, cluster: str) -> None:
    assert rendered.error == ""
    assert rendered.source_type == "Plugin"
    assert rendered.objects
    assert untracked(rendered) == overlay(repo, cluster)


# --- what Argo CD renders ------------------------------------------------------------------


@pytest.mark.parametrize("example", sorted(EXAMPLE_CLUSTERS))
def test_argocd_renders_every_example_as_its_overlay(
    side: Sidecar, example: str, tmp_path: Path
) -> None:
    cluster = EXAMPLE_CLUSTERS[example]
    repo = checkout(tmp_path / "repo", example)
    app = plugin_application(env={"TOPOGEN_CLUSTER": cluster})
    assert_renders_overlay(generate(side, app, repo), repo, cluster)


@pytest.mark.parametrize("engine", ["kyverno-legacy", "gatekeeper", "native"])
def test_argocd_renders_every_engine_as_its_overlay(
    side: Sidecar, engine: str, tmp_path: Path
) -> None:
    config = yaml.safe_load((ZONE_SPLIT / "topogen.yaml").read_text())
    config["engines"] = [engine]
    repo = checkout(tmp_path / "repo", config=config)
    rendered = generate(side, plugin_application(), repo)
    assert_renders_overlay(rendered, repo, "lab")
    assert (repo / "policies" / "lab" / engine).is_dir()


def test_argocd_application_yaml_as_it_is(side: Sidecar, repo: Path) -> None:
    """argocd/application.yaml unchanged: no destination namespace, in Argo CD's own."""
    app = yaml.safe_load((ARGOCD / "application.yaml").read_text())
    rendered = generate(side, app, repo)
    assert (rendered.app_name, rendered.namespace) == ("topogen-lab", "")
    assert_renders_overlay(rendered, repo, "lab")


def test_topogen_keeps_its_cache_in_the_sidecars_volume(side: Sidecar, repo: Path) -> None:
    """topogen-cmp's topogen writes its cache folder (the compiled start-up code, the kept
    parses) where the sidecar's env points, its volume: the next render reads it."""
    rendered = generate(side, plugin_application("lab"), repo)
    assert rendered.error == ""
    kept = side.root / "cache" / "topogen"
    assert any(p.name.startswith("dataclasses-") for p in kept.iterdir()), sorted(kept.iterdir())


def test_argocd_application_in_another_namespace_renders_its_cluster(
    side: Sidecar, repo: Path
) -> None:
    """No TOPOGEN_CLUSTER: the cluster is the Application's name, without the
    `<namespace>_` Argo CD puts before it outside its own namespace."""
    app = plugin_application("lab", namespace="team-a", env={}, destination_namespace="ml-demo")
    rendered = generate(side, app, repo)
    assert (rendered.app_name, rendered.namespace) == ("team-a_lab", "ml-demo")
    assert_renders_overlay(rendered, repo, "lab")
    same = generate(side, plugin_application("lab", env={}), repo)
    assert same.app_name == "lab"
    assert untracked(same) == overlay(repo, "lab")


# --- failures: topogen's reason in Argo CD's error, nothing rendered ------------------------

NODES = (ZONE_SPLIT / "cluster" / "nodes.yaml").read_text()
CONFIG = (ZONE_SPLIT / "topogen.yaml").read_text()

FAILURES: dict[str, tuple[dict[str, str | bytes | None], dict[str, str], str, str]] = {
    # name: (files to write (None: remove), plugin env, exit status, reason)
    "refused-group": (
        {"cluster/nodes.yaml": NODES.replace('nvidia.com/gpu: "2"', 'nvidia.com/gpu: "1"')},
        {},
        "1",
        "topogen: error: cluster lab: group ml-training: no domain can hold it",
    ),
    "malformed-config": (
        {"topogen.yaml": "apiVersion: topogen.io/v1alpha1\nkind: [broken\n"},
        {},
        "2",
        "topogen: error: topogen.yaml:3: malformed YAML",
    ),
    "unreadable-input": (
        {"cluster/nodes.yaml": b"\xff\xfe\x00not text"},
        {},
        "2",
        "topogen: error: cluster/nodes.yaml: file is not UTF-8 text",
    ),
    "missing-input": (
        {"cluster/nodes.yaml": None},
        {},
        "2",
        "topogen: error: cluster/nodes.yaml: clusters.lab.nodes path does not exist",
    ),
    "missing-cluster": (
        {},
        {"TOPOGEN_CLUSTER": "staging"},
        "2",
        "topogen: error: topogen.yaml: no cluster named 'staging' (have: lab)",
    ),
    "hostile-path": (
        {"topogen.yaml": CONFIG.replace("[cluster/nodes.yaml]", "[../../../../etc/passwd]")},
        {},
        "2",
        "topogen: error: topogen.yaml: clusters.lab.nodes: ../../../../etc/passwd is outside "
        "the folder of the config",
    ),
    "source-override": (
        {
            ".argocd-source-topogen-lab.yaml": "plugin:\n  env:\n    - {name: TOPOGEN_CLUSTER, value: x}\n"
        },
        {},
        "2",
        "topogen: error: ./.argocd-source-topogen-lab.yaml: Argo CD merges it into the "
        "Application's source",
    ),
    "empty-render": (
        {
            "topogen.yaml": CONFIG.replace("namespaces: [ml-demo]", "namespaces: [nobody]")
            + "monitoring: {enabled: false}\n"
        },
        {},
        "1",
        "topogen: error: rendered no objects for cluster lab; refusing an empty render",
    ),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_argocd_shows_topogens_reason_and_renders_nothing(
    side: Sidecar, case: str, tmp_path: Path
) -> None:
    files, env, status, reason = FAILURES[case]
    repo = shutil.copytree(ZONE_SPLIT, tmp_path / "repo")
    for name, body in files.items():
        if body is None:
            (repo / name).unlink()
        elif isinstance(body, bytes):
            (repo / name).write_bytes(body)
        else:
            (repo / name).write_text(body)
    rendered = generate(side, plugin_application(env={"TOPOGEN_CLUSTER": "lab", **env}), repo)
    assert rendered.objects == []
    found = FAILED.search(rendered.error)
    assert found, rendered.error
    assert found[1] == status
    assert found[2].startswith(reason), found[2]
    assert rendered.error.startswith('CMP processing failed for application "topogen-lab"')


def test_argocd_source_override_would_change_the_cluster(
    side: Sidecar, repo: Path, tmp_path: Path
) -> None:
    """Why the override file is refused: Argo CD merges it into the source, plugin env too
    (here it turns cluster `lab` into `staging`, which the plugin then reports)."""
    copy = shutil.copytree(ZONE_SPLIT, tmp_path / "repo")
    (copy / ".argocd-source.yaml").write_text(
        "plugin:\n  env:\n    - {name: TOPOGEN_CLUSTER, value: staging}\n"
    )
    rendered = generate(side, plugin_application(), copy)
    assert "./.argocd-source.yaml: Argo CD merges it" in rendered.error
    assert rendered.objects == []


def test_argocd_renders_a_commit_that_carries_an_interrupted_render(
    side: Sidecar, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A render killed after its journal's commit, and that state committed: the files half
    old, half new, .topogen/journal beside them. In the sidecar's fresh unpacked checkout
    (every file 0644) topogen finishes it first, then renders: Argo CD gets the objects of
    the new inputs, as from a clean render of them."""
    from topogen.emit import journal

    after = yaml.safe_load((ZONE_SPLIT / "topogen-after.yaml").read_text())
    repo = checkout(tmp_path / "repo")
    (repo / "topogen.yaml").write_text(yaml.safe_dump(after, sort_keys=False))
    real, calls = os.replace, [0]

    def cut(src: Any, dst: Any) -> None:
        calls[0] += 1
        if calls[0] == 3:  # the commit and a file done: the journal holds the rest
            raise OSError(5, "Input/output error", str(dst))
        real(src, dst)

    monkeypatch.setattr(journal.os, "replace", cut)
    with pytest.raises(AssertionError, match="the next topogen command finishes it"):
        render(repo / "topogen.yaml", repo)
    monkeypatch.setattr(journal.os, "replace", real)
    assert (repo / ".topogen" / journal.JOURNAL / "PLAN").is_file()
    clean = checkout(tmp_path / "clean", config=after)
    assert overlay(repo, "lab") != overlay(clean, "lab")  # the checkout's tree: half done
    rendered = generate(side, plugin_application(env={"TOPOGEN_CLUSTER": "lab"}), repo)
    assert rendered.error == ""
    assert untracked(rendered) == overlay(clean, "lab")


# --- discovery ------------------------------------------------------------------------------


def test_argocd_discovery_claims_a_folder_with_topogen_yaml_only(
    side: Sidecar, repo: Path, tmp_path: Path
) -> None:
    work = shutil.copytree(repo, tmp_path / "repo")
    (work / "near-misses").mkdir()
    (work / "near-misses" / "topogen.yml").write_text(CONFIG)
    (work / "near-misses" / "my-topogen.yaml").write_text(CONFIG)
    (work / "near-misses" / "deeper").mkdir()
    (work / "near-misses" / "deeper" / "topogen.yaml").write_text(CONFIG)
    expected = {
        ".": (True, "Plugin"),
        "near-misses": (False, "Directory"),
        "near-misses/deeper": (True, "Plugin"),
        "workloads": (False, "Directory"),
        "kustomize/overlays/lab": (False, "Kustomize"),
    }
    for path, (matched, app_type) in expected.items():
        found = discover(side, plugin_application("lab", path=path, plugin=False), work)
        assert (found.error, found.matched, found.app_type) == ("", matched, app_type), path
    # an unnamed source with topogen.yaml renders through the plugin (cluster = its name)
    rendered = generate(side, plugin_application("lab", plugin=False), work)
    assert_renders_overlay(rendered, work, "lab")


def test_argocd_named_plugin_needs_topogen_yaml_too(side: Sidecar, repo: Path) -> None:
    """With discovery configured, Argo CD asks the plugin even when it is named."""
    rendered = generate(side, plugin_application(path="workloads"), repo)
    assert rendered.objects == []
    assert 'could not find cmp-server plugin with name "topogen" supporting' in rendered.error


def test_argocd_applicationset_kustomize_apps_never_reach_the_plugin(
    side: Sidecar, repo: Path
) -> None:
    apps = appset_applications(ARGOCD / "applicationset.yaml")
    assert [a["metadata"]["name"] for a in apps] == ["topogen-lab"]
    side.calls_until_ping()
    for app in apps:
        rendered = generate(side, app, repo)
        assert (rendered.error, rendered.source_type) == ("", "Kustomize")
        assert untracked(rendered) == overlay(repo, "lab")
    assert side.calls_until_ping() == []
    # the same Application without `kustomize: {}` streams the repository to the plugin
    del app["spec"]["source"]["kustomize"]
    rendered = generate(side, app, repo)
    assert (rendered.error, rendered.source_type) == ("", "Kustomize")
    assert side.calls_until_ping() == ["CheckPluginConfiguration", "MatchRepository"]


def test_argocd_plugin_socket_reports_discovery_and_no_git_credentials(side: Sidecar) -> None:
    """What the sidecar answers the repo-server's first question (CheckPluginConfiguration):
    discovery on, and no git credentials wanted (provideGitCreds false)."""
    assert side.configuration() == {"isDiscoveryConfigured": True}


PROBE = """\
apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata:
  name: probe
spec:
  generate:
    command: [bash, -c]
    args:
      - |
        can() { if "$@" >/dev/null 2>&1; then echo yes; else echo no; fi; }
        say() { printf "  %s: '%s'\\n" "$1" "${2//\\'/\\'\\'}"; }
        echo 'apiVersion: v1'; echo 'kind: ConfigMap'; echo 'metadata: {name: probe}'
        echo 'data:'
        say uid "$(id -u)"
        say user "$(id -un 2>&1)"
        say home "$HOME"
        say home-writable "$(can touch "$HOME/probe")"
        say root-writable "$(can touch /probe)"
        say tmp-writable "$(can mktemp)"
        say checkout-writable "$(can mktemp -p .)"
        say cache-writable "$(can mktemp -p "${XDG_CACHE_HOME:-/nonexistent}")"
        say cwd "$PWD"
        say file "$(stat -c '%a %u' topogen.yaml)"
        say folder "$(stat -c '%a %u' cluster)"
        for v in ARGOCD_APP_NAME ARGOCD_APP_NAMESPACE ARGOCD_APP_PROJECT_NAME \\
                 ARGOCD_APP_SOURCE_PATH ARGOCD_ENV_TOPOGEN_CLUSTER KUBE_VERSION \\
                 TOPOGEN_CMP_TIMEOUT ARGOCD_EXEC_TIMEOUT; do
          say "$v" "${!v-unset}"
        done
"""


def test_argocd_gives_the_command_what_the_sidecar_has(repo: Path, tmp_path: Path) -> None:
    """The environment Argo CD's CMP server gives a plugin command, in this harness (a probe
    plugin prints it): what topogen-cmp is written for."""
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / "plugin.yaml").write_text(PROBE)
    work = shutil.copytree(repo, tmp_path / "repo")
    (work / "topogen.yaml").chmod(0o600)  # Argo CD unpacks every file 0644
    app = plugin_application("lab", namespace="team-a")
    app["spec"]["source"]["plugin"]["name"] = "probe"
    with sidecar(tmp_path / "probe" / "plugin.yaml") as probe:
        rendered = generate(probe, app, work)
    assert rendered.error == ""
    (configmap,) = rendered.objects
    seen = configmap["data"]
    assert {k: seen[k] for k in ("ARGOCD_APP_NAME", "ARGOCD_APP_NAMESPACE")} == {
        "ARGOCD_APP_NAME": "team-a_lab",
        "ARGOCD_APP_NAMESPACE": "",
    }
    assert seen["ARGOCD_APP_PROJECT_NAME"] == "default"
    assert seen["ARGOCD_APP_SOURCE_PATH"] == "."
    assert seen["ARGOCD_ENV_TOPOGEN_CLUSTER"] == "lab"
    assert seen["KUBE_VERSION"] == "1.33.1"
    assert seen["TOPOGEN_CMP_TIMEOUT"] == "45"  # the sidecar's env (repo-server-sidecar.yaml)
    assert seen["ARGOCD_EXEC_TIMEOUT"] == "unset"  # not a CMP setting
    assert seen["home"] == "/home/argocd"
    assert (seen["home-writable"], seen["tmp-writable"], seen["checkout-writable"]) == (
        "no",
        "yes",
        "yes",
    )
    # topogen's cache folder: the sidecar's volume of its own (here, the sandbox's stand-in)
    assert seen["cache-writable"] == "yes"
    if os.geteuid() == 0:  # uid 999 without a passwd entry, read-only root
        assert seen["uid"] == "999"
        assert "cannot find name for user ID 999" in seen["user"]
        assert seen["root-writable"] == "no"
        assert seen["cwd"].startswith("/tmp/_cmp_server/")
        assert (seen["file"], seen["folder"]) == ("644 999", "755 999")
