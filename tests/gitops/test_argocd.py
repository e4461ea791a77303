"""argocd/: the plugin's files and the manifests around it. The plugin itself runs through
Argo CD v3.6.2's own code in test_argocd_plugin.py and test_argocd_deadline.py."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tooling import REPO
from topogen import parsecache

from .argocd_kit import check_plugin
from .gitops_kit import kustomize, rel, write_kustomization

ARGOCD = REPO / "argocd"
COMPARE = "ServerSideDiff=true,IncludeMutationWebhook=true"


def _load(name: str) -> Any:
    return yaml.safe_load((ARGOCD / name).read_text())


@pytest.mark.tools
def test_argocd_reads_plugin_yaml_and_knows_every_key() -> None:
    """Argo CD's own reader (cmpserver/plugin.ReadPluginConfig) loads plugin.yaml, and a
    strict decode into its types finds no key it ignores."""
    result = check_plugin(ARGOCD)
    assert result.returncode == 0, result.stdout + result.stderr
    assert yaml.safe_load(result.stdout) == {"name": "topogen", "discovery": True}


@pytest.mark.tools
def test_argocd_ignores_a_misspelt_key_and_the_check_refuses_it(tmp_path: Path) -> None:
    """A typo (`discovery:`) loads in Argo CD with discovery silently off; the check fails."""
    text = (ARGOCD / "plugin.yaml").read_text()
    assert "\n  discover:\n" in text
    (tmp_path / "plugin.yaml").write_text(text.replace("\n  discover:\n", "\n  discovery:\n"))
    result = check_plugin(tmp_path)
    assert result.returncode == 1
    report = yaml.safe_load(result.stdout)
    assert report["discovery"] is False  # what Argo CD would run with
    assert '"discovery"' in report["strict"]


def test_plugin_config_names_the_script() -> None:
    plugin = _load("plugin.yaml")
    assert plugin["metadata"]["name"] == "topogen"
    assert "version" not in plugin["spec"]  # Applications name it plain `topogen`
    assert plugin["spec"]["generate"] == {"command": ["topogen-cmp"]}
    assert plugin["spec"]["discover"] == {"fileName": "./topogen.yaml"}
    script = ARGOCD / "topogen-cmp"
    assert os.access(script, os.X_OK)
    assert script.read_text().startswith("#!/bin/bash\n")


# --- the sidecar and the Applications --------------------------------------------------------

REPO_SERVER = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "argocd-repo-server", "namespace": "argocd"},
    "spec": {
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "argocd-repo-server",
                        "image": "quay.io/argoproj/argocd:v3.1.0",
                        "volumeMounts": [
                            {"name": "tmp", "mountPath": "/tmp"},
                            {"name": "plugins", "mountPath": "/home/argocd/cmp-server/plugins"},
                            {"name": "var-files", "mountPath": "/var/run/argocd"},
                        ],
                    }
                ],
                "volumes": [
                    {"name": "var-files", "emptyDir": {}},
                    {"name": "plugins", "emptyDir": {}},
                    {"name": "tmp", "emptyDir": {}},
                ],
            }
        }
    },
}


def test_sidecar_component(tmp_path: Path) -> None:
    """The argocd/ component over a stock argocd-repo-server, built with kubectl kustomize."""
    build = tmp_path / "argocd-install"
    build.mkdir()
    (build / "install.yaml").write_text(yaml.safe_dump(REPO_SERVER))
    # as Argo CD's documented install kustomization: `namespace: argocd` over install.yaml
    write_kustomization(
        build, namespace="argocd", resources=["install.yaml"], components=[rel(ARGOCD, build)]
    )
    objs = {o["kind"]: o for o in kustomize(build)}
    spec = objs["Deployment"]["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in spec["containers"]}
    assert sorted(containers) == ["argocd-repo-server", "topogen-cmp"]
    repo_server, sidecar = containers["argocd-repo-server"], containers["topogen-cmp"]
    assert repo_server == REPO_SERVER["spec"]["template"]["spec"]["containers"][0]
    assert sidecar["command"] == ["/var/run/argocd/argocd-cmp-server"]
    sc = sidecar["securityContext"]
    assert sc["runAsUser"] == 999 and sc["runAsNonRoot"] is True
    mounts = {m["mountPath"]: m for m in sidecar["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert mounts["/var/run/argocd"]["name"] == "var-files"
    assert mounts["/home/argocd/cmp-server/plugins"]["name"] == "plugins"
    config = mounts["/home/argocd/cmp-server/config/plugin.yaml"]
    assert config["subPath"] == "plugin.yaml"
    tmp = mounts["/tmp"]["name"]
    assert tmp != "tmp" and "emptyDir" in volumes[tmp]  # private, not the repo-server's
    cm = objs["ConfigMap"]
    assert volumes[config["name"]]["configMap"]["name"] == cm["metadata"]["name"]
    assert cm["data"]["plugin.yaml"] == (ARGOCD / "plugin.yaml").read_text()


def _check_app_spec(spec: dict[str, Any]) -> None:
    assert "ignoreDifferences" not in spec
    assert spec["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True}
    assert "ServerSideApply=true" in spec["syncPolicy"]["syncOptions"]


def test_application() -> None:
    app = _load("application.yaml")
    assert app["kind"] == "Application"
    annotations = app["metadata"]["annotations"]
    assert annotations["argocd.argoproj.io/compare-options"] == COMPARE
    assert int(annotations["argocd.argoproj.io/sync-wave"]) < 0  # before training apps
    plugin = app["spec"]["source"]["plugin"]
    assert plugin["name"] == _load("plugin.yaml")["metadata"]["name"]
    assert {"name": "TOPOGEN_CLUSTER", "value": "lab"} in plugin["env"]
    _check_app_spec(app["spec"])


def test_applicationset_deploys_each_clusters_overlay() -> None:
    appset = _load("applicationset.yaml")
    assert appset["kind"] == "ApplicationSet" and appset["spec"]["goTemplate"] is True
    template = appset["spec"]["template"]
    annotations = template["metadata"]["annotations"]
    assert annotations["argocd.argoproj.io/compare-options"] == COMPARE
    _check_app_spec(template["spec"])
    # explicit: never offered to the plugin's discovery (test_argocd_plugin.py)
    assert template["spec"]["source"]["kustomize"] == {}
    (generator,) = appset["spec"]["generators"]
    for element in generator["list"]["elements"]:
        path = template["spec"]["source"]["path"].replace("{{ .cluster }}", element["cluster"])
        assert (REPO / path / "kustomization.yaml").is_file(), path
        assert template["spec"]["destination"]["server"] == "{{ .server }}"


def test_containerfile() -> None:
    text = (ARGOCD / "Containerfile").read_text()
    assert "COPY argocd/plugin.yaml /home/argocd/cmp-server/config/plugin.yaml" in text
    assert "COPY argocd/topogen-cmp /usr/local/bin/topogen-cmp" in text
    assert "COPY generator /opt/topogen/generator" in text
    # templates/ is built into the package (package data); the license file is metadata
    assert "COPY templates /opt/topogen/templates" in text
    assert "COPY pyproject.toml README.md LICENSE /opt/topogen/" in text
    # every dependency checked against the lock's hashes; topogen from source, no index
    assert "pip install --no-cache-dir --require-hashes --no-deps" in text
    assert "-r /opt/topogen/requirements.lock" in text
    assert "--no-deps --no-build-isolation --no-index" in text
    assert "USER 999:999" in text
    assert "/var/run/argocd/argocd-cmp-server" in text


DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def _images() -> list[tuple[str, str]]:
    """(file, image) of every image argocd/ names: FROM lines and `image:` fields."""
    found = []
    for line in (ARGOCD / "Containerfile").read_text().splitlines():
        if line.startswith("FROM "):
            found.append(("Containerfile", line.split()[1]))
    for path in sorted(ARGOCD.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            stack: list[Any] = [doc]
            while stack:
                item = stack.pop()
                if isinstance(item, dict):
                    if isinstance(item.get("image"), str):
                        found.append((path.name, item["image"]))
                    stack.extend(item.values())
                elif isinstance(item, list):
                    stack.extend(item)
    return found


def test_every_image_is_pinned_by_digest() -> None:
    images = _images()
    assert {f for f, _ in images} == {
        "Containerfile",
        "repo-server-sidecar.yaml",
        "snapshot-cronjob.yaml",
    }
    for file, image in images:
        assert DIGEST.search(image), f"{file}: {image} is not pinned by digest"
    (base,) = [i for f, i in images if f == "Containerfile"]
    # docker-library/repo-info, repos/python/remote/3.11-slim-bookworm.md (Python 3.11.16)
    assert base == (
        "docker.io/library/python:3.11-slim-bookworm@sha256:"
        "fe556eaffd0d96abd8685b83bb8a69addd0dc730fa193669a7df0d49ddcfac02"
    )


LOCK_LINE = re.compile(r"^([a-z0-9][a-z0-9._-]*)==([^ ;]+)(?: ;.*)? \\$")


def _lock() -> dict[str, list[str]]:
    """package -> its hashes, from argocd/requirements.lock."""
    out: dict[str, list[str]] = {}
    current = None
    for line in (ARGOCD / "requirements.lock").read_text().splitlines():
        m = LOCK_LINE.match(line)
        if m:
            current = m[1]
            out[current] = []
        elif line.strip().startswith("--hash=sha256:") and current is not None:
            out[current].append(line.strip().split(":", 1)[1].rstrip(" \\"))
        else:
            assert not line or line.startswith("#"), f"unexpected lock line {line!r}"
    return out


def test_the_image_lock_pins_every_dependency_with_hashes() -> None:
    """`make lock` (uv pip compile --universal --generate-hashes): every runtime dependency
    of pyproject.toml and what building topogen needs, each with its wheels' hashes."""
    import tomllib

    lock = _lock()
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    wanted = [re.split(r"[<>=!~ \[]", d)[0].lower() for d in project["project"]["dependencies"]]
    wanted += ["setuptools", "wheel"]
    for name in wanted:
        assert name in lock, f"{name} is not in argocd/requirements.lock: run `make lock`"
    for name, hashes in lock.items():
        assert hashes and all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes), name
    # the versions the tests run with, where this environment has the package
    from importlib.metadata import PackageNotFoundError, version

    for name in wanted[:-2]:
        with contextlib.suppress(PackageNotFoundError):
            assert version(name) == _lock_version(name), f"{name}: run `make lock`"


def _lock_version(name: str) -> str:
    for line in (ARGOCD / "requirements.lock").read_text().splitlines():
        m = LOCK_LINE.match(line)
        if m and m[1] == name:
            return m[2]
    raise AssertionError(name)


def test_sidecar_limits_and_snapshot_rbac() -> None:
    sidecar = _load("repo-server-sidecar.yaml")["spec"]["template"]["spec"]
    (container,) = sidecar["containers"]
    assert container["resources"]["limits"]["cpu"] and container["resources"]["limits"]["memory"]
    tmp = next(v for v in sidecar["volumes"] if v["name"] == "topogen-cmp-tmp")
    assert tmp["emptyDir"]["sizeLimit"]
    # topogen's caches on a volume of their own (the root filesystem is read-only), with
    # room for the parses' bound and the compiled code beside it
    env = {e["name"]: e["value"] for e in container["env"]}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volume = next(v for v in sidecar["volumes"] if v["name"] == mounts[env["XDG_CACHE_HOME"]])
    assert volume["emptyDir"]["sizeLimit"] == "1Gi"
    assert parsecache.MAX_BYTES <= (1 << 30) // 2
    rbac = list(yaml.safe_load_all((ARGOCD / "snapshot-rbac.yaml").read_text()))
    (role,) = [d for d in rbac if d["kind"] == "ClusterRole"]
    assert {v for rule in role["rules"] for v in rule["verbs"]} == {"list"}
    assert "pods" not in {r for rule in role["rules"] for r in rule["resources"]}
    # pods: list in the groups' namespaces only (a Role per namespace, bound to the account)
    roles = {d["metadata"]["name"]: d for d in rbac if d["kind"] == "Role"}
    pods = roles["topogen-snapshot-pods"]
    assert pods["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]
    # and get on the Cilium agent's settings only, by name, in kube-system
    cilium = roles["topogen-snapshot-cilium-config"]
    assert cilium["metadata"]["namespace"] == "kube-system"
    assert cilium["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": ["cilium-config"],
            "verbs": ["get"],
        }
    ]
    assert set(roles) == {"topogen-snapshot-pods", "topogen-snapshot-cilium-config"}
    bindings = {d["metadata"]["name"]: d for d in rbac if d["kind"] == "RoleBinding"}
    assert set(bindings) == set(roles)
    binding = bindings["topogen-snapshot-pods"]
    assert binding["metadata"]["namespace"] == pods["metadata"]["namespace"]
    assert binding["roleRef"]["name"] == pods["metadata"]["name"]
