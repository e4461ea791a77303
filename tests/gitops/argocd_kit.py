"""Argo CD v3.6.2's own code around the topogen plugin (tools/argocd-cmp), for tests/gitops.

`sidecar()` starts Argo CD's CMP server (`argocd-cmp-server`) on argocd/plugin.yaml as the
repo-server's sidecar runs it: the environment argocd/Containerfile and
repo-server-sidecar.yaml give the container, `topogen-cmp` (argocd/topogen-cmp) and
`topogen` on PATH as the image installs them, its socket in a plugin folder the client
shares; when the tests run as root also uid 999 without a passwd entry, a read-only root
filesystem with a private /tmp (a mount namespace) and no network. `generate()` and
`discover()` are the repo-server's side: Argo CD's GenerateManifests or discovery for an
Application, under the application controller's deadline.

The CMP server ignores SIGTERM (it only removes its socket), so it is stopped with
SIGKILL, with every process of its session.
"""

from __future__ import annotations

import json
import os
import queue
import re
import select
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tooling import REPO, require_tool
from unprivileged import VENV_BIN, launcher_dir

from .gitops_kit import ident

__all__ = [
    "ARGOCD",
    "CONTROL_PLANE",
    "DEADLINE",
    "FAILED",
    "Rendered",
    "Sidecar",
    "appset_applications",
    "argocd_cmp",
    "check_plugin",
    "discover",
    "generate",
    "plugin_application",
    "sidecar",
    "untracked",
    "wait_gone",
]

ARGOCD = REPO / "argocd"
CONTROL_PLANE = "argocd"  # the namespace Argo CD runs in
DEADLINE = 60.0  # the application controller's --repo-server-timeout-seconds default
REVISION = "3f2a9c0d4b1e6f7a8b9c0d1e2f3a4b5c6d7e8f90"
KUBE_VERSION = "1.33.1"
API_VERSIONS = ["v1", "apps/v1", "batch/v1", "policies.kyverno.io/v1", "kyverno.io/v1"]
TRACKING = "argocd.argoproj.io/tracking-id"  # Argo CD's resource tracking (annotation)
# Argo CD's error for a failed plugin command, then the first line of its stderr: the
# reason (warnings that explain it may follow)
FAILED = re.compile(r"`topogen-cmp` failed exit status (\d+): (topogen: [^\n]*)")
BASE_IMAGE_ENV = {"LANG": "C.UTF-8"}  # python:3.11-slim-bookworm's own ENV that matters
HEALTH_CHECK = "Health/Check"
START_TIMEOUT = 120.0  # for the CMP server to listen, on a loaded machine

# Inside the sidecar's mount namespace (root only): its socket folder and its cache volume
# (XDG_CACHE_HOME) stay writable, its private /tmp is mounted over /tmp, then the root
# filesystem is made read-only.
_MOUNTS = (
    'set -e; s=$1; shift; mount --bind "$s/plugins" "$s/plugins"; '
    'mount --bind "$s/cache" "$s/cache"; '
    'mount --bind "$s/tmp" /tmp; mount -o remount,bind,ro /; exec "$@"'
)


def argocd_cmp() -> Path:
    return require_tool("argocd-cmp")


def _image_env() -> dict[str, str]:
    """The container's environment but PATH: the Containerfile's ENV, the sidecar's env."""
    env = dict(BASE_IMAGE_ENV)
    text = (ARGOCD / "Containerfile").read_text().replace("\\\n", " ")
    for line in text.splitlines():
        if line.startswith("ENV "):
            for pair in line.split()[1:]:
                key, _, value = pair.partition("=")
                if key != "PATH":
                    env[key] = value
    patch = yaml.safe_load((ARGOCD / "repo-server-sidecar.yaml").read_text())
    (container,) = patch["spec"]["template"]["spec"]["containers"]
    env.update({e["name"]: str(e["value"]) for e in container.get("env", [])})
    return env


@dataclass
class Sidecar:
    """A running CMP server: its sandbox, socket folder and log."""

    root: Path
    process: subprocess.Popen[str]
    log: list[dict[str, Any]] = field(default_factory=list)
    _lines: queue.Queue[dict[str, Any] | None] = field(default_factory=queue.Queue)

    @property
    def sockets(self) -> Path:
        return self.root / "plugins"

    @property
    def socket(self) -> Path:
        return self.sockets / "topogen.sock"

    def client_env(self) -> dict[str, str]:
        """The repo-server's environment: the shared plugin socket folder, `kustomize`."""
        return {
            "PATH": f"{self.root / 'repo-server'}:/usr/bin:/bin",
            "HOME": str(self.root / "repo-server"),
            "ARGOCD_PLUGINSOCKFILEPATH": str(self.sockets),
        }

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with suppress(ValueError):
                self._lines.put(json.loads(line))
        self._lines.put(None)

    def wait_for(self, match: Callable[[dict[str, Any]], bool], timeout: float) -> dict[str, Any]:
        """The next log entry that `match`es (entries read on the way are kept in .log)."""
        while True:
            try:
                entry = self._lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(
                    f"the CMP server logged no such entry in {timeout} s"
                ) from None
            if entry is None:
                raise AssertionError(f"the CMP server exited: {self.log[-5:]}")
            self.log.append(entry)
            if match(entry):
                return entry

    def configuration(self) -> dict[str, Any]:
        """The plugin's answer to CheckPluginConfiguration."""
        out = subprocess.run(
            [str(argocd_cmp()), "ping", str(self.socket)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)  # type: ignore[no-any-return]

    def calls_until_ping(self) -> list[str]:
        """The gRPC methods called since the last time this was asked. `argocd-cmp ping`
        ends with a health check, a call Argo CD never makes to a plugin, and the log is
        read up to it: calls Argo CD's client finished were logged before it returned."""
        start = len(self.log)
        self.configuration()
        # its last line: the health check finished
        self.wait_for(lambda e: _method(e) == HEALTH_CHECK and e.get("msg") == "finished call", 60)
        started = [_method(e) for e in self.log[start:] if e.get("msg") == "started call"]
        # the ping's own CheckPluginConfiguration and health check
        assert started[-2:] == ["CheckPluginConfiguration", HEALTH_CHECK], started
        return started[:-2]

    def session(self) -> list[int]:
        """The processes of the server's session but the server: the plugin's commands."""
        return [pid for pid in _session_pids(self.process.pid) if pid != self.process.pid]

    def stop(self) -> None:
        for pid in [*self.session(), self.process.pid]:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait(timeout=60)


def _method(entry: dict[str, Any]) -> str:
    if entry.get("grpc.service") == "grpc.health.v1.Health":
        return HEALTH_CHECK
    return str(entry.get("grpc.method", ""))


def _session_pids(sid: int) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[3]) == sid:
            pids.append(int(proc.name))
    return pids


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    """Waits until every process of `pids` has exited (pidfds); those still alive."""
    fds = {}
    for pid in pids:
        with suppress(ProcessLookupError):
            fds[os.pidfd_open(pid)] = pid
    try:
        pending = set(fds)
        if pending:
            poller = select.poll()
            for fd in pending:
                poller.register(fd, select.POLLIN)
            deadline_ms = int(timeout * 1000)
            while pending:
                events = poller.poll(deadline_ms)
                if not events:
                    break
                for fd, _ in events:
                    pending.discard(fd)
                    poller.unregister(fd)
        return sorted(fds[fd] for fd in pending)
    finally:
        for fd in fds:
            os.close(fd)


def _sandbox() -> Path:
    """Outside /tmp (the sidecar's own /tmp is mounted over it), enterable by uid 999."""
    # the sidecar runs the topogen installed from this checkout: under /tmp it would be
    # hidden by the sidecar's private /tmp (as an image's would not be), so say that plainly
    assert not REPO.resolve().is_relative_to("/tmp"), (
        f"the Argo CD tests need the repository outside /tmp ({REPO}): the sidecar's "
        "private /tmp is mounted over it"
    )
    root = Path(tempfile.mkdtemp(prefix="topogen-argocd-", dir="/var/tmp"))
    root.chmod(0o755)
    folders = (
        ("bin", 0o755),
        ("config", 0o755),
        ("plugins", 0o755),
        ("tmp", 0o1777),
        ("cache", 0o700),
    )
    for name, mode in folders:
        (root / name).mkdir()
        (root / name).chmod(mode)
    if os.geteuid() == 0:
        os.chown(root / "plugins", 999, 999)
        os.chown(root / "cache", 999, 999)
    return root


def _link(src: Path, dest: Path) -> None:
    try:
        os.link(src.resolve(), dest)
    except OSError:
        shutil.copy2(src.resolve(), dest)
    dest.chmod(0o755)


@contextmanager
def sidecar(plugin: Path | None = None, env: dict[str, str] | None = None) -> Iterator[Sidecar]:
    """Argo CD's CMP server on `plugin` (default argocd/plugin.yaml), as the sidecar."""
    tool = argocd_cmp()
    root = _sandbox()
    launchers = launcher_dir(parent=root)
    try:
        _link(tool, root / "bin" / "argocd-cmp-server")
        _link(ARGOCD / "topogen-cmp", root / "bin" / "topogen-cmp")
        (root / "repo-server").mkdir()
        _link(tool, root / "repo-server" / "kustomize")
        shutil.copyfile(plugin or ARGOCD / "plugin.yaml", root / "config" / "plugin.yaml")
        sidecar_env = {
            **_image_env(),
            "PATH": f"{root / 'bin'}:{launchers}:/usr/local/bin:/usr/bin:/bin",
            "ARGOCD_PLUGINSOCKFILEPATH": str(root / "plugins"),
            **(env or {}),
        }
        if "XDG_CACHE_HOME" in sidecar_env:  # the manifest's cache volume: one of the sandbox's
            sidecar_env["XDG_CACHE_HOME"] = str(root / "cache")
        server = [
            str(root / "bin" / "argocd-cmp-server"),
            f"--config-dir-path={root / 'config'}",
            "--logformat=json",
        ]
        if os.geteuid() == 0:
            isolate = ["unshare", "-m", "--propagation", "private"]
            if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0:
                isolate.append("-n")
            as_999 = ["setpriv", "--reuid=999", "--regid=999", "--clear-groups", "--"]
            envs = [f"{k}={v}" for k, v in sidecar_env.items()]
            cmd = [*isolate, "--", "sh", "-c", _MOUNTS, "sh", str(root), *as_999, "env", "-i"]
            cmd += [*envs, *server]
            run_env = None
        else:
            cmd, run_env = server, {**sidecar_env, "ARGOCD_CMP_WORKDIR": str(root / "tmp")}
        process = subprocess.Popen(
            cmd,
            env=run_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        side = Sidecar(root, process)
        threading.Thread(target=side._read, daemon=True).start()
        try:
            side.wait_for(lambda e: "serving on" in str(e.get("msg", "")), START_TIMEOUT)
            yield side
        finally:
            side.stop()
    finally:
        if launchers != VENV_BIN:
            shutil.rmtree(launchers, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)


# --- the repo-server's side ---------------------------------------------------------------


@dataclass(frozen=True)
class Rendered:
    """What Argo CD's repo-server made of one Application."""

    app_name: str  # ARGOCD_APP_NAME
    namespace: str  # ARGOCD_APP_NAMESPACE
    source_type: str
    objects: list[dict[str, Any]]
    error: str
    seconds: float
    matched: bool  # discover: a plugin claimed the folder
    app_type: str  # discover: the source type discovery gives


def plugin_application(
    name: str = "topogen-lab",
    *,
    namespace: str = CONTROL_PLANE,
    path: str = ".",
    env: dict[str, str] | None = None,
    destination_namespace: str | None = None,
    plugin: bool = True,
) -> dict[str, Any]:
    """argocd/application.yaml, renamed, and with the plugin env `env` (None: as it is)."""
    app: dict[str, Any] = yaml.safe_load((ARGOCD / "application.yaml").read_text())
    app["metadata"].update(name=name, namespace=namespace)
    source = app["spec"]["source"]
    source["path"] = path
    if env is not None:
        source["plugin"]["env"] = [{"name": k, "value": v} for k, v in env.items()]
    if not plugin:
        del source["plugin"]
    if destination_namespace is not None:
        app["spec"]["destination"]["namespace"] = destination_namespace
    return app


def _client(mode: str, side: Sidecar, app: dict[str, Any], repo: Path, deadline: float) -> Rendered:
    request = {
        "application": app,
        "controlPlaneNamespace": CONTROL_PLANE,
        "repoRoot": str(repo),
        "revision": REVISION,
        "kubeVersion": KUBE_VERSION,
        "apiVersions": API_VERSIONS,
        "timeoutSeconds": deadline,
    }
    out = subprocess.run(
        [str(argocd_cmp()), mode],
        input=json.dumps(request),
        env=side.client_env(),
        capture_output=True,
        text=True,
        timeout=deadline + 120,
    )
    assert out.returncode == 0, out.stderr
    resp = json.loads(out.stdout)
    return Rendered(
        app_name=resp["appName"],
        namespace=resp["namespace"],
        source_type=resp.get("sourceType", ""),
        objects=[json.loads(m) for m in resp["manifests"]],
        error=resp.get("error", ""),
        seconds=resp["seconds"],
        matched=resp["matched"],
        app_type=resp.get("appType", ""),
    )


def generate(
    side: Sidecar, app: dict[str, Any], repo: Path, deadline: float = DEADLINE
) -> Rendered:
    """GenerateManifests for `app` with `repo` as the checkout of its revision."""
    return _client("generate", side, app, repo, deadline)


def discover(
    side: Sidecar, app: dict[str, Any], repo: Path, deadline: float = DEADLINE
) -> Rendered:
    """The discovery the repo-server runs for `app`'s source when it names no type."""
    return _client("discover", side, app, repo, deadline)


def appset_applications(path: Path) -> list[dict[str, Any]]:
    """The Applications Argo CD's ApplicationSet controller generates from `path`."""
    out = subprocess.run(
        [str(argocd_cmp()), "appset", str(path)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def check_plugin(folder: Path) -> subprocess.CompletedProcess[str]:
    """Argo CD's plugin.yaml reader on folder/plugin.yaml, then a strict decode."""
    return subprocess.run(
        [str(argocd_cmp()), "check-plugin", str(folder)], capture_output=True, text=True, timeout=60
    )


def untracked(rendered: Rendered) -> list[dict[str, Any]]:
    """The objects, without the tracking annotation Argo CD adds to each (checked here)."""
    out = []
    for obj in rendered.objects:
        meta = obj["metadata"]
        annotations = dict(meta["annotations"])
        group = obj["apiVersion"].rpartition("/")[0]
        # a cluster-scoped object is tracked in the destination namespace
        namespace = meta.get("namespace") or rendered.namespace
        key = f"{rendered.app_name}:{group}/{obj['kind']}:{namespace}/{meta['name']}"
        assert annotations.pop(TRACKING) == key
        meta = {k: v for k, v in meta.items() if k != "annotations"}
        if annotations:
            meta["annotations"] = annotations
        out.append({**obj, "metadata": meta})
    return sorted(out, key=ident)
