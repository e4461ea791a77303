"""Admission latency of pod creation through kube-apiserver with Kyverno's admission
controller in front of it: tests/live's harness (etcd, kube-apiserver with the webhook
admission plugins, Kyverno v1.19.1 out of cluster, see tests/live/kyverno_harness.py);
no scheduler and no nodes, so pods are stored, not placed.

Three configurations over the same pods (the coordinators and workers of the largest
group, bench/kyverno_pods.py): no policy, the one-toleration reference MutatingPolicy,
and the group's generated policies as rendered. Pods are created one at a time over one
keep-alive connection, each timed from the request to the end of the response. The
configurations take turns in rounds (installed, probed until the API server calls Kyverno
for it, a few untimed warm-up pods, its share of timed pods, removed), so a slow stretch
of the shared machine falls on all three. Between rounds the pods and Kyverno's
admission reports are deleted, as its reports controller would consume the reports
(Kyverno stops writing them past --maxAdmissionReports: rounds small enough for that).

The timing loop (measure_configs) is shared with Gatekeeper's controller-manager
(bench/admission_gatekeeper.py): each admission path supplies how to switch policies and
what to delete between rounds.
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "tests" / "live"), str(ROOT / "tests")]

import admission_variants as av  # noqa: E402
from admission_report import (  # noqa: E402
    ENFORCE,
    MUTATIONS,
    REFERENCE_ENFORCE,
    REFERENCE_NO_REPORT,
    SLOW,
    VARIANTS,
    percentile,
    ratios,
)
from kyverno_harness import PLUGINS, Kyverno, generates_vap, start_kyverno  # noqa: E402
from kyverno_pods import group_pods, pod_creations, reference_policy  # noqa: E402
from live_harness import ADMIN_TOKEN, ControlPlane, Process, start_control_plane  # noqa: E402

from topogen.config import load_config  # noqa: E402
from topogen.render.kyverno import API_SERVER_LABEL  # noqa: E402

TOOLS_BIN = ROOT / ".tools" / "bin"
BINARY = TOOLS_BIN / "kyverno-admission-controller"
WARMUP = 20  # untimed pods after each switch
SETTLE_TRIES = 5  # sends of an untimed pod refused while admission settles (create_settled)
MISPLACED = "bench-misplaced"  # the probe pods an enforced validation rejects
SETTLE = 1.0  # s after a switch: the last round's deletions off the machine first
# s from one pod's creation to the next's (a pod that takes longer delays the next); 0:
# back to back, the default. Back to back keeps this 2-core machine's CPU busy (the
# admission reports Kyverno writes after answering compete with the next pod), but one
# pod every 20 ms measured no smaller spread between rounds and a higher latency for
# every configuration (none: 5.1 ms against 3.6 ms at p50)
PACE = 0.0


def available() -> bool:
    return all(
        (TOOLS_BIN / t).exists() for t in ("etcd", "kube-apiserver", "kyverno-admission-controller")
    )


class Client:
    """POST pods over one keep-alive TLS connection (what a controller's client does)."""

    def __init__(self, cp: ControlPlane) -> None:
        assert cp.admin is not None
        self.host, self.port = "127.0.0.1", cp.port
        self.ctx = cp.admin.ctx
        self.conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx)
        self.headers = {
            "Authorization": f"Bearer {ADMIN_TOKEN}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }

    def create(self, pod: dict[str, Any], dry_run: bool = False) -> tuple[float, dict[str, Any]]:
        took, status, raw = self.post(pod, dry_run)
        if status != 201:
            raise SystemExit(f"bench: pod {pod['metadata']['name']}: {status} {raw[:400]!r}")
        return took, json.loads(raw)

    def post(self, pod: dict[str, Any], dry_run: bool = False) -> tuple[float, int, bytes]:
        ns = pod["metadata"]["namespace"]
        body = json.dumps(pod)
        path = f"/api/v1/namespaces/{ns}/pods" + ("?dryRun=All" if dry_run else "")
        start = time.perf_counter()
        self.conn.request("POST", path, body, self.headers)
        resp = self.conn.getresponse()
        raw = resp.read()
        return time.perf_counter() - start, resp.status, raw


def create_settled(
    client: Client, pod: dict[str, Any], dry_run: bool, settle: Callable[[], None]
) -> dict[str, Any]:
    """client.create for a pod no measurement times (a warm-up, a sample): one refused
    (403) is sent again once admission shows the installed policies again (`settle`), up
    to SETTLE_TRIES times. Right after a switch, an admission controller re-registering
    its webhooks can miss a call (failurePolicy Ignore): the pod is admitted unmutated,
    and an enforced ValidatingAdmissionPolicy then refuses it."""
    for _ in range(SETTLE_TRIES - 1):
        _, status, raw = client.post(pod, dry_run)
        if status != 403:
            break
        settle()
    else:
        return client.create(pod, dry_run)[1]
    if status != 201:
        raise SystemExit(f"bench: pod {pod['metadata']['name']}: {status} {raw[:400]!r}")
    return dict(json.loads(raw))


def fields(pod: dict[str, Any]) -> str:
    spec = pod.get("spec", {})
    keys = ("tolerations", "affinity", "nodeSelector")
    return json.dumps([pod["metadata"].get("labels"), *(spec.get(k) for k in keys)], sort_keys=True)


def until(what: str, check: Callable[[], bool], timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while not check():
        if time.monotonic() > end:
            raise SystemExit(f"bench: {what}: not within {timeout:g}s")
        time.sleep(0.2)


class AdmissionPath(Protocol):
    """How one admission controller takes policies on and off its path."""

    def switch(
        self, old: Sequence[dict[str, Any]], new: Sequence[dict[str, Any]], probe: dict[str, Any]
    ) -> None: ...

    def settle(self, current: Sequence[dict[str, Any]], probe: dict[str, Any]) -> None:
        """Wait until admission shows `current` (installed) again."""

    def clean(self, namespaces: Sequence[str]) -> None: ...


class KyvernoPath:
    def __init__(
        self, cp: ControlPlane, k: Kyverno, client: Client, misplaced: Sequence[dict[str, Any]]
    ) -> None:
        self.cp, self.k, self.client = cp, k, client
        self.misplaced = misplaced  # pods an enforced ValidatingPolicy rejects (coordinators)

    def switch(
        self, old: Sequence[dict[str, Any]], new: Sequence[dict[str, Any]], probe: dict[str, Any]
    ) -> None:
        """Remove `old`, install `new`, and wait until admission shows exactly `new`."""
        if old:
            self.k.delete(old)
            self.k.wait_unregistered([p["metadata"]["name"] for p in old])
        if new:
            self.k.apply(new)
            self.k.wait_registered(new)
        self.settle(new, probe)

    def settle(self, current: Sequence[dict[str, Any]], probe: dict[str, Any]) -> None:
        plain = fields(probe)
        if current:
            until("the policies at admission", lambda: self._dry(probe) != plain)
            if any(generates_vap(p) for p in current):  # the API server loads it later
                until(
                    "the ValidatingAdmissionPolicy at admission",
                    lambda: any(self.client.post(p, True)[1] == 403 for p in self.misplaced),
                )
        else:
            until("no policy at admission", lambda: self._dry(probe) == plain)

    def _dry(self, probe: dict[str, Any]) -> str:
        return fields(self.client.create(probe, True)[1])

    def clean(self, namespaces: Sequence[str]) -> None:
        kube = self.cp.kube()
        for ns in namespaces:  # a loaded machine can take minutes over hundreds of pods
            for path, query in (
                (f"/api/v1/namespaces/{ns}/pods", {"gracePeriodSeconds": 0}),
                (f"/apis/reports.kyverno.io/v1/namespaces/{ns}/ephemeralreports", None),
            ):
                kube.request("DELETE", path, query=query, timeout=600)


def variants(generated: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for name in VARIANTS:
        pols = json.loads(json.dumps(list(generated)))
        if name == MUTATIONS:
            pols = [p for p in pols if p["kind"] == "MutatingPolicy"]
        for p in pols:
            if name == "generated, no admission reports":
                p["metadata"]["labels"]["reports.kyverno.io/disabled"] = "true"
            elif p["kind"] != "ValidatingPolicy" or name == MUTATIONS:
                continue
            elif name.startswith(ENFORCE):
                p["spec"]["validationActions"] = ["Deny"]
                allowed = API_SERVER_LABEL[0] in p["metadata"]["labels"]
                vap = {"enabled": name == ENFORCE and allowed}
                p["spec"]["autogen"]["validatingAdmissionPolicy"] = vap
                p["spec"]["evaluation"]["admission"]["enabled"] = True
            else:
                p["spec"]["evaluation"]["admission"]["enabled"] = True
        out[name] = pols
    return out


def reference_variants() -> dict[str, list[dict[str, Any]]]:
    """The reference without its admission report (what one report costs), and with the
    smallest ValidatingPolicy under Enforce (what a ValidatingAdmissionPolicy costs)."""
    ref = reference_policy("reference")
    ref["metadata"]["labels"] = {"reports.kyverno.io/disabled": "true"}
    return {
        REFERENCE_NO_REPORT: [ref],
        REFERENCE_ENFORCE: [reference_policy("reference"), reference_validation()],
    }


def reference_validation() -> dict[str, Any]:
    """One expression, Enforce as the enforce Component makes it (Kyverno generates the
    ValidatingAdmissionPolicy): it rejects only the probe pods `misplaced` names, so the
    bench sees when the API server has loaded it."""
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "ValidatingPolicy",
        "metadata": {"name": "reference-validate"},
        "spec": {
            "autogen": {
                "podControllers": {"controllers": []},
                "validatingAdmissionPolicy": {"enabled": True},
            },
            "evaluation": {"admission": {"enabled": True}, "background": {"enabled": False}},
            "validationActions": ["Deny"],
            "matchConstraints": pod_creations(),
            "validations": [
                {
                    "expression": f"object.metadata.name != '{MISPLACED}'",
                    "message": "reference",
                    "reason": "Forbidden",  # 403, as the generated validations answer
                }
            ],
        },
    }


def misplaced(pods: Sequence[dict[str, Any]], zone_label: str) -> list[dict[str, Any]]:
    """One of each kind of pod (by labels) among the first, asking for no zone the group
    may use: the group's enforced ValidatingPolicy rejects the coordinators among them."""
    out: dict[str, dict[str, Any]] = {}
    for pod in pods[:50]:
        one = json.loads(json.dumps(pod))
        one["metadata"]["name"] = MISPLACED
        one["spec"]["nodeSelector"] = {zone_label: "bench-no-such-zone"}
        out.setdefault(json.dumps(pod["metadata"].get("labels"), sort_keys=True), one)
    return list(out.values())


def run_admission(
    policy_files: Sequence[Path],
    config: Path,
    group: str,
    pods: int,
    work: Path,
    rounds: int = 10,
    pace: float = PACE,
) -> dict[str, Any]:
    """rounds: 2,000 pods in rounds of 200 (and their warm-up pods) keep the generated set's two
    admission reports a pod under the install's --maxAdmissionReports=1000, past which
    Kyverno stops writing them (`reports / pod` shows it); short rounds put a slow stretch
    of the machine on every configuration."""
    generated = [
        d for f in policy_files for d in yaml.safe_load_all(f.read_text(encoding="utf-8")) if d
    ]
    policies = {
        "none": [],
        "reference": [reference_policy("reference")],
        "generated": generated,
        **variants(generated),
        **reference_variants(),
    }
    all_pods = group_pods(config, group, pods)
    namespaces = sorted({p["metadata"]["namespace"] for p in all_pods})
    zone_label = load_config(config).clusters[0].zone_label
    cp = start_control_plane(TOOLS_BIN, work / "plane", PLUGINS, scheduler=False)
    try:
        k = start_kyverno(cp, BINARY, work / "kyverno")
        try:
            client = Client(cp)
            path = KyvernoPath(cp, k, client, misplaced(all_pods, zone_label))
            for ns in namespaces:
                cp.ensure_namespace(ns)
            policies[av.STATIC] = [static_variant(path, client, generated, all_pods)]
            procs = {"API server": cp.apiserver, "Kyverno": k.proc, "etcd": cp.etcd}
            stats = measure_configs(
                cp, path, client, policies, all_pods, namespaces, rounds, procs, pace
            )
            nudged = k.nudged
        finally:
            k.stop()
    finally:
        cp.stop()
    return ratios(stats) | {
        "group": group,
        "policies": [f.name for f in policy_files],
        "pods": len(all_pods),
        "rounds": rounds,
        "pace": pace,
        "nudged": nudged,
    }


def admitted_as(
    path: KyvernoPath,
    client: Client,
    policies: Sequence[dict[str, Any]],
    pods: Sequence[dict[str, Any]],
) -> list[dict[str, Any]]:
    """The pods as admission returns them (dry run) with `policies` installed."""
    path.switch([], policies, pods[0])
    try:
        return [
            create_settled(client, pod, True, lambda: path.settle(policies, pods[0]))
            for pod in pods
        ]
    finally:
        path.switch(policies, [], pods[0])


def static_variant(
    path: KyvernoPath,
    client: Client,
    generated: Sequence[dict[str, Any]],
    pods: Sequence[dict[str, Any]],
) -> dict[str, Any]:
    """The STATIC policy from what Kyverno made of each kind of pod among the first."""
    sample = list(pods[:50])
    admitted = admitted_as(path, client, generated, sample)
    by_name = {a["metadata"]["name"]: a for a in admitted}
    return av.static_policy(
        [(telling, p, by_name[p["metadata"]["name"]]) for telling, p in av.shapes(sample)]
    )


def measure_configs(
    cp: ControlPlane,
    path: AdmissionPath,
    client: Client,
    policies: dict[str, list[dict[str, Any]]],
    pods: Sequence[dict[str, Any]],
    namespaces: Sequence[str],
    rounds: int,
    processes: Mapping[str, Process | None] | None = None,
    pace: float = PACE,
) -> dict[str, dict[str, Any]]:
    """Latency statistics (ms) per configuration, the configurations taking turns; with
    how many timed pods admission changed, how many took at least SLOW seconds, and the
    CPU each started one of `processes` spent per timed pod (ms)."""
    running = {n: p for n, p in (processes or {}).items() if p is not None}
    for ns in namespaces:
        cp.ensure_namespace(ns)
    probe = pods[0]
    times: dict[str, list[float]] = {c: [] for c in policies}
    changed = dict.fromkeys(policies, 0)
    counted = {c: dict.fromkeys(COUNTERS, 0.0) for c in policies}
    cpu = {c: dict.fromkeys(running, 0.0) for c in policies}
    round_p50: dict[str, list[float]] = {c: [] for c in policies}
    current: list[dict[str, Any]] = []
    share = -(-len(pods) // rounds)
    index = {name: c for c, name in enumerate(policies)}
    for r in range(rounds):
        chunk = pods[r * share : (r + 1) * share]
        for name in turns(list(policies), r):
            c = index[name]
            path.switch(current, policies[name], probe)
            current = policies[name]
            time.sleep(SETTLE)
            tick = Pacer(pace)
            for i, pod in enumerate(chunk[:WARMUP]):
                tick()
                settle = partial(path.settle, current, probe)
                create_settled(client, _named(pod, f"c{c}-{r}-w{i}"), False, settle)
            before = counters(cp)
            cpu_before = {n: cpu_seconds(p) for n, p in running.items()}
            took_round = []
            for i, pod in enumerate(chunk):
                one = _named(pod, f"c{c}-{r}-{i}")
                tick()
                took, body = client.create(one)
                took_round.append(took)
                changed[name] += fields(body) != fields(one)
            times[name] += took_round
            round_p50[name].append(percentile(took_round, 50) * 1000)
            time.sleep(0.2)  # Kyverno writes a MutatingPolicy's report after answering
            for n, proc in running.items():
                cpu[name][n] += cpu_seconds(proc) - cpu_before[n]
            after = counters(cp)
            for k in COUNTERS:
                counted[name][k] += after[k] - before[k]
            path.clean(namespaces)
    return {
        name: {
            "count": len(t),
            "p50": percentile(t, 50) * 1000,
            "p99": percentile(t, 99) * 1000,
            "mean": statistics.fmean(t) * 1000,
            "changed": changed[name],
            "slow": sum(x >= SLOW for x in t),
            "round_p50": round_p50[name],
            **({"cpu": {n: v / len(t) * 1000 for n, v in cpu[name].items()}} if running else {}),
            **{k: counted[name][k] / len(t) for k in COUNTERS},
        }
        for name, t in times.items()
    }


class Pacer:
    """Called before each pod: waits until `pace` seconds after the last call's start
    (not at all when that has passed)."""

    def __init__(self, pace: float) -> None:
        self.pace, self.next = pace, 0.0

    def __call__(self) -> None:
        now = time.perf_counter()
        if self.next > now:
            time.sleep(self.next - now)
            now = self.next
        self.next = now + self.pace


def turns(names: Sequence[str], r: int) -> list[str]:
    """The configurations' order in round r: rotated by r, reversed in odd rounds, so no
    configuration always follows the same one (and the clean-up of its pods) or comes
    first after a slow stretch."""
    k = r % len(names)
    order = [*names[k:], *names[:k]]
    return order[::-1] if r % 2 else order


COUNTERS = ("calls", "reports")


def cpu_seconds(proc: Process) -> float:
    """User and system CPU the process has used (/proc/<pid>/stat)."""
    assert proc.proc is not None
    fields = Path(f"/proc/{proc.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _named(pod: dict[str, Any], prefix: str) -> dict[str, Any]:
    """A copy of the pod under a name of its own (prefix, then its name)."""
    one: dict[str, Any] = json.loads(json.dumps(pod))
    one["metadata"]["name"] = f"{prefix}-{pod['metadata']['name']}"[:63]
    return one


def counters(cp: ControlPlane) -> dict[str, float]:
    """From the API server's metrics: webhook calls on pod creation (each admission
    webhook it called, each time) and Kyverno's admission reports created."""
    kube = cp.kube()
    req = urllib.request.Request(
        kube.server + "/metrics", headers={"Authorization": f"Bearer {kube.token}"}
    )
    with urllib.request.urlopen(req, context=kube.ctx, timeout=30) as resp:
        text = resp.read().decode()
    out = dict.fromkeys(COUNTERS, 0.0)
    for line in text.splitlines():
        name, _, value = line.rpartition(" ")
        if name.startswith("apiserver_admission_webhook_admission_duration_seconds_count{"):
            out["calls"] += float(value) if 'operation="CREATE"' in name else 0.0
        elif name.startswith("apiserver_request_total{") and all(
            f in name for f in ('resource="ephemeralreports"', 'verb="POST"', 'code="201"')
        ):
            out["reports"] += float(value)
    return out
