"""argocd/: the plugin contract, run as Argo CD runs it, and the manifests around it.

The contract: Argo CD's CMP server runs `generate` in the Application's source
folder (a checkout it unpacked), as uid 999, with the sidecar's environment plus
the build environment (ARGOCD_APP_*, ARGOCD_ENV_*, KUBE_VERSION ...), and kills it
after 90 s. Stdout must hold Kubernetes objects only; any failure must be a
non-zero exit with nothing on stdout. Here: a read-only, world-readable copy of an
example, `setpriv` to uid 999 when running as root, `unshare -n` (no network)
when the kernel allows it, and the 90 s budget as the timeout.

topogen comes from the repository's .venv, or a launcher uid 999 can run
(tests/unprivileged.py).
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tooling import REPO
from unprivileged import as_uid_999, launcher_dir

from .gitops_kit import VENV_BIN, ZONE_SPLIT, ident, is_object, kustomize, rel, write_kustomization

ARGOCD = REPO / "argocd"
EXEC_TIMEOUT = 90  # Argo CD's default for a plugin command
COMPARE = "ServerSideDiff=true,IncludeMutationWebhook=true"


def _load(name: str) -> Any:
    return yaml.safe_load((ARGOCD / name).read_text())


@pytest.fixture(scope="module")
def plugin() -> dict[str, Any]:
    return _load("plugin.yaml")  # type: ignore[no-any-return]


def _no_network_available() -> bool:
    return (
        shutil.which("unshare") is not None
        and subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0
    )


def _as_argocd(cmd: list[str]) -> list[str]:
    """The command as the sidecar runs it: uid 999, and no network where possible."""
    cmd = as_uid_999(cmd)
    if _no_network_available():
        cmd = ["unshare", "-n", *cmd]  # unshare needs root: it wraps setpriv
    return cmd


def _launcher_dir() -> Path:
    return launcher_dir()


@pytest.fixture(scope="module", autouse=True)
def topogen_bin() -> Iterator[Path]:
    global _BIN
    _BIN = _launcher_dir()
    yield _BIN
    if _BIN != VENV_BIN:
        shutil.rmtree(_BIN, ignore_errors=True)


_BIN = VENV_BIN


def _env(tmp: Path, **overrides: str | None) -> dict[str, str]:
    env = {
        "PATH": f"{_BIN}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp),
        "TMPDIR": str(tmp),
        "LANG": "C.UTF-8",
        "ARGOCD_APP_NAME": "lab",
        "ARGOCD_APP_NAMESPACE": "argocd",
        "ARGOCD_APP_PROJECT_NAME": "default",
        "ARGOCD_APP_REVISION": "3f2a9c0d4b1e6f7a8b9c0d1e2f3a4b5c6d7e8f90",
        "ARGOCD_APP_REVISION_SHORT": "3f2a9c0",
        "ARGOCD_APP_SOURCE_PATH": "examples/zone-split",
        "ARGOCD_APP_SOURCE_REPO_URL": "https://git.example.com/platform/gitops.git",
        "ARGOCD_APP_SOURCE_TARGET_REVISION": "main",
        "ARGOCD_ENV_TOPOGEN_CLUSTER": "lab",
        "KUBE_VERSION": "1.33.1",
        "KUBE_API_VERSIONS": "v1,apps/v1,batch/v1,policies.kyverno.io/v1,kyverno.io/v1,"
        "monitoring.coreos.com/v1",
    }
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


@pytest.fixture
def sandbox() -> Iterator[Path]:
    """A folder uid 999 can enter (pytest's own tmp folders are private to root)."""
    path = Path(tempfile.mkdtemp(prefix="topogen-argocd-", dir="/tmp"))
    path.chmod(0o755)
    (path / "tmp").mkdir()
    if os.geteuid() == 0:
        os.chown(path / "tmp", 999, 999)
    try:
        yield path
    finally:
        for p in [path, *path.rglob("*")]:
            if p.is_dir() and not p.is_symlink():
                p.chmod(0o755)
        shutil.rmtree(path)


def _checkout(sandbox: Path, edit: dict[str, str] | None = None) -> Path:
    """A read-only, world-readable copy of the example repository (as Argo CD unpacks it)."""
    repo = sandbox / "repo"
    shutil.copytree(ZONE_SPLIT, repo)
    for name, text in (edit or {}).items():
        (repo / name).write_text(text)
    for p in sorted(repo.rglob("*"), reverse=True):
        p.chmod(0o555 if p.is_dir() else 0o444)
    repo.chmod(0o555)
    return repo


def _discovers(plugin: dict[str, Any], app: Path, env: dict[str, str]) -> bool:
    """Argo CD's discovery rules: fileName glob, else find.glob, else find.command."""
    discover = plugin["spec"]["discover"]
    if "fileName" in discover:
        return bool(glob.glob(str(app / discover["fileName"])))
    find = discover["find"]
    if "glob" in find:
        return bool(glob.glob(str(app / find["glob"]), recursive=True))
    cmd = _as_argocd([*find["command"], *find.get("args", [])])
    out = subprocess.run(
        cmd, cwd=app, env=env, capture_output=True, text=True, timeout=EXEC_TIMEOUT
    )
    return out.returncode == 0 and bool(out.stdout.strip())


def _generate(
    plugin: dict[str, Any], app: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    gen = plugin["spec"]["generate"]
    cmd = _as_argocd([*gen["command"], *gen.get("args", [])])
    start = time.monotonic()
    result = subprocess.run(
        cmd, cwd=app, env=env, capture_output=True, text=True, timeout=EXEC_TIMEOUT
    )
    assert time.monotonic() - start < EXEC_TIMEOUT
    return result


def test_plugin_config(plugin: dict[str, Any]) -> None:
    assert plugin["apiVersion"] == "argoproj.io/v1alpha1"
    assert plugin["kind"] == "ConfigManagementPlugin"
    assert plugin["metadata"]["name"] == "topogen"
    assert "version" not in plugin["spec"]  # Applications name it plain `topogen`
    script = "\n".join(plugin["spec"]["generate"]["args"])
    assert "set -euo pipefail" in script
    assert "topogen render --stdout" in script
    assert '--cluster "$cluster"' in script
    assert 'cluster="${ARGOCD_ENV_TOPOGEN_CLUSTER:-$ARGOCD_APP_NAME}"' in script


def test_sandbox_is_what_argocd_gives(sandbox: Path) -> None:
    """The harness itself: non-root, read-only checkout, and (where possible) no network."""
    repo = _checkout(sandbox)
    probe = (
        "import os, socket\n"
        "print(os.geteuid())\n"
        "try:\n"
        "    open('topogen.yaml', 'a')\n"
        "    print('writable')\n"
        "except OSError:\n"
        "    print('read-only')\n"
        "try:\n"
        "    socket.create_connection(('192.0.2.1', 80), timeout=2)\n"
        "    print('network')\n"
        "except OSError:\n"
        "    print('no network')\n"
    )
    out = subprocess.run(
        _as_argocd(["bash", "-c", f'exec $(head -1 {_BIN / "topogen"} | cut -c3-) -c "$0"', probe]),
        cwd=repo,
        env=_env(sandbox / "tmp"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    uid, writable, network = out.stdout.split("\n")[:3]
    assert uid != "0" and writable == "read-only"
    if _no_network_available():
        assert network == "no network"


def test_discover_finds_topogen_yaml(plugin: dict[str, Any], sandbox: Path) -> None:
    repo = _checkout(sandbox)
    env = _env(sandbox / "tmp")
    assert _discovers(plugin, repo, env)
    assert not _discovers(plugin, repo / "workloads", env)


def test_generate_prints_the_clusters_objects_only(plugin: dict[str, Any], sandbox: Path) -> None:
    repo = _checkout(sandbox)
    result = _generate(plugin, repo, _env(sandbox / "tmp"))
    assert result.returncode == 0, result.stderr
    docs = [d for d in yaml.safe_load_all(result.stdout) if d is not None]
    assert docs and all(is_object(d) for d in docs)
    overlay = kustomize(REPO / "kustomize" / "overlays" / "lab")
    assert sorted(map(ident, docs)) == sorted(map(ident, overlay))
    assert not [ln for ln in result.stdout.splitlines() if ln.startswith("topogen: ")]


def test_cluster_falls_back_to_the_application_name(plugin: dict[str, Any], sandbox: Path) -> None:
    repo = _checkout(sandbox)
    env = _env(sandbox / "tmp", ARGOCD_ENV_TOPOGEN_CLUSTER=None, ARGOCD_APP_NAME="lab")
    result = _generate(plugin, repo, env)
    assert result.returncode == 0, result.stderr
    assert any(is_object(d) for d in yaml.safe_load_all(result.stdout))


NODES_TOO_SMALL = (
    (ZONE_SPLIT / "cluster" / "nodes.yaml")
    .read_text()
    .replace('nvidia.com/gpu: "2"', 'nvidia.com/gpu: "1"')
)


@pytest.mark.parametrize(
    ("edit", "env", "reason"),
    [
        (
            {"topogen.yaml": "apiVersion: topogen.io/v1alpha1\nkind: [broken\n"},
            {},
            "malformed YAML",
        ),
        (
            {"topogen.yaml": (ZONE_SPLIT / "topogen.yaml").read_text() + "clusterz: []\n"},
            {},
            "unknown key clusterz",
        ),
        (
            {},
            {"ARGOCD_ENV_TOPOGEN_CLUSTER": None, "ARGOCD_APP_NAME": "topogen-lab"},
            "no cluster named 'topogen-lab'",
        ),
        # topogen prints what it can render, then exits 1: none of it may reach Argo CD
        ({"cluster/nodes.yaml": NODES_TOO_SMALL}, {}, "no domain can hold it"),
    ],
    ids=["malformed", "unknown-key", "unknown-cluster", "refused-group"],
)
def test_any_error_fails_loudly_with_empty_stdout(
    plugin: dict[str, Any],
    sandbox: Path,
    edit: dict[str, str],
    env: dict[str, str | None],
    reason: str,
) -> None:
    repo = _checkout(sandbox, edit)
    result = _generate(plugin, repo, _env(sandbox / "tmp", **env))
    assert result.returncode != 0
    assert result.stdout == ""
    assert reason in result.stderr and "Traceback" not in result.stderr


def test_an_empty_render_is_refused(plugin: dict[str, Any], sandbox: Path) -> None:
    """No training group, no monitoring: zero objects would prune everything."""
    cfg = yaml.safe_load((ZONE_SPLIT / "topogen.yaml").read_text())
    cfg["groups"][0]["namespaces"] = ["nobody-trains-here"]
    cfg["monitoring"] = {"enabled": False}
    repo = _checkout(sandbox, {"topogen.yaml": yaml.safe_dump(cfg)})
    result = _generate(plugin, repo, _env(sandbox / "tmp"))
    assert result.returncode != 0 and result.stdout == ""
    assert "refusing an empty render" in result.stderr


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
    (generator,) = appset["spec"]["generators"]
    for element in generator["list"]["elements"]:
        path = template["spec"]["source"]["path"].replace("{{ .cluster }}", element["cluster"])
        assert (REPO / path / "kustomization.yaml").is_file(), path
        assert template["spec"]["destination"]["server"] == "{{ .server }}"


def test_containerfile() -> None:
    text = (ARGOCD / "Containerfile").read_text()
    assert "COPY argocd/plugin.yaml /home/argocd/cmp-server/config/plugin.yaml" in text
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
    rbac = list(yaml.safe_load_all((ARGOCD / "snapshot-rbac.yaml").read_text()))
    (role,) = [d for d in rbac if d["kind"] == "ClusterRole"]
    assert {v for rule in role["rules"] for v in rule["verbs"]} == {"list"}


def test_checkout_is_world_readable_and_read_only(sandbox: Path) -> None:
    repo = _checkout(sandbox)
    mode = (repo / "topogen.yaml").stat().st_mode
    assert mode & stat.S_IROTH and not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
