"""The fleet measure: topogen's plans under the real kube-scheduler (issue 19).

For a generated scenario (bench/schedfleet.py) and each plan (`none`: no admission
policy; `pin`: every job of a group in one domain; `spread`: every allowed domain),
`topogen render` writes the native admission policies (MutatingAdmissionPolicy and
ValidatingAdmissionPolicy for Kubernetes 1.36), which are installed on a real
kube-apiserver; the jobs' pods are created there as their controllers would create
them, mutated by those policies, and bound by the real kube-scheduler.

Static: every job submitted at once (jobs in a seeded order, each job's pods in its
controller's order); once the scheduler has nothing left to try, each job is
- useful: every pod bound, all in one zone the group's policies allow;
- split: every pod bound, across zones or in a zone the policies deny (no progress);
- partial: some pods bound (GPUs held, no progress);
- pending: no pod bound.
Useful GPUs are compared with the cluster's GPUs and with the best packing of the same
jobs into allowed zones (bench/bounds.py).

Over time: jobs arrive at their arrival times, run for their duration once wholly bound
(a split job holds its GPUs for its duration and does nothing), and are deleted; useful
GPU-hours over the makespan are compared with the makespan bound.

Checked on the way, for pin and spread (each is a violation): a job with pods bound in two
zones, a pod bound in a zone its group's policies deny or outside the zones topogen's
analysis gave the group, a pod whose identity label does not name its node's zone, and a
useful job whose pods' actual labels (as the API server holds them, stamped at binding
where the plugin does) the network policies deny (topogen's policy engine, both ends).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests" / "live"))

import bounds  # noqa: E402
import measure  # noqa: E402
import schedfleet as sf  # noqa: E402
from fleet_kit import Client, PodState, PodWatch, settle  # noqa: E402
from live_harness import ControlPlane, KubeError, start_control_plane  # noqa: E402

TOPOGEN = measure.TOPOGEN  # the venv the bench runs in (measure.py)
PLANS = ("none", "pin", "spread")
PLACEMENT: dict[str, str | None] = {"none": None, "pin": "pin", "spread": "spread"}
ADMISSION = "admissionregistration.k8s.io"
# the scheduler as configured here: a client that keeps up with a fleet's pods, and
# retries that do not wait out the 10 s default backoff (the scheduler's logic is as is)
SCHEDULER_CONFIG = {
    "clientConnection": {"qps": 500, "burst": 1000},
    "podInitialBackoffSeconds": 1,
    "podMaxBackoffSeconds": 1,
}

__all__ = ["PLANS", "Outcome", "PlanRun", "Rendered", "start", "static_run", "timed_run"]


# the same, scoring nodes by their free GPUs too (NodeResourcesFit's default scoring
# counts CPU and memory only): a coordinator then goes where the most GPUs are free
GPU_SCORING = {
    **SCHEDULER_CONFIG,
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "pluginConfig": [
                {
                    "name": "NodeResourcesFit",
                    "args": {
                        "scoringStrategy": {
                            "type": "LeastAllocated",
                            "resources": [
                                {"name": "cpu", "weight": 1},
                                {"name": "memory", "weight": 1},
                                {"name": "nvidia.com/gpu", "weight": 5},
                            ],
                        }
                    },
                }
            ],
        }
    ],
}


def start(work: Path, scheduler_config: dict[str, Any] | None = None) -> ControlPlane:
    bin_dir = ROOT / ".tools" / "bin"
    config = SCHEDULER_CONFIG if scheduler_config is None else scheduler_config
    return start_control_plane(bin_dir, work, admission_policies=True, scheduler_config=config)


# --- topogen -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Rendered:
    plan: str
    config: Path
    objects: tuple[dict[str, Any], ...]  # the native admission objects
    refused: tuple[str, ...]
    zones: dict[str, tuple[str, ...]]  # group -> the zones topogen's plan gives it
    seconds: float
    # job key -> the zones topogen gives that job (spread: its domain, or the static
    # fallback's for a job it did not know; otherwise the group's)
    job_zones: dict[str, tuple[str, ...]] = field(default_factory=dict)
    fallback: dict[str, tuple[str, ...]] = field(default_factory=dict)  # group -> unknown jobs'

    def zones_of(self, job: sf.Job) -> tuple[str, ...]:
        """The zones this plan lets the job use (every allowed zone under `none`)."""
        got = self.job_zones.get(job.key) or self.fallback.get(job.group.name)
        return got or self.zones.get(job.group.name) or job.group.allowed


def _write(path: Path, docs: Iterable[Any]) -> None:
    path.write_text(yaml.safe_dump_all(list(docs), sort_keys=True))


def render(sc: sf.Scenario, plan: str, jobs: Sequence[sf.Job], work: Path) -> Rendered:
    """topogen render --stdout for this plan over the manifests of `jobs`."""
    folder = work / plan
    folder.mkdir(parents=True, exist_ok=True)
    _write(folder / "nodes.yaml", sc.nodes)
    _write(folder / "policies.yaml", sc.policies)
    namespaces = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
                  for n in sc.namespaces()]  # fmt: skip
    _write(folder / "workloads.yaml", [*namespaces, *sc.manifests(list(jobs))])
    placement = PLACEMENT[plan]
    cfg = sc.config(placement, "nodes.yaml", "policies.yaml", "workloads.yaml")
    config = folder / "topogen.yaml"
    config.write_text(yaml.safe_dump(cfg, sort_keys=False))
    if plan == "none":
        return Rendered(plan, config, (), (), {}, 0.0)
    began = time.perf_counter()
    out = subprocess.run([str(TOPOGEN), "render", "-c", str(config), "--stdout"],
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    seconds = time.perf_counter() - began
    if out.returncode not in (0, 1):
        raise RuntimeError(f"topogen render ({plan}) exit {out.returncode}: {out.stderr[-2000:]}")
    refused = tuple(line for line in out.stderr.splitlines() if "error:" in line)
    objects = tuple(
        d for d in yaml.safe_load_all(out.stdout)
        if d and str(d.get("apiVersion", "")).startswith(ADMISSION)
    )  # fmt: skip
    an = subprocess.run([str(TOPOGEN), "analyze", "-c", str(config), "-o", "json"],
                        capture_output=True, text=True, timeout=600)  # fmt: skip
    if an.returncode not in (0, 1):
        raise RuntimeError(f"topogen analyze ({plan}): {an.stderr[-2000:]}")
    plans = json.loads(an.stdout)["plans"]
    zones = {p["group"]: tuple(p["zones"]) for p in plans}
    per_job = {j["job"]: tuple(j["zones"]) for p in plans for j in p.get("jobPlacements") or []}
    # a job the render did not know: the plan's fallback zones (static identity: one
    # domain's; placement identity: the domains that keep room once the known jobs run)
    fallback: dict[str, tuple[str, ...]] = {p["group"]: tuple(p["fallbackZones"]) for p in plans
                if p.get("placement") == "spread" and p.get("fallbackZones")}  # fmt: skip
    return Rendered(plan, config, objects, refused, zones, seconds, per_job, fallback)


# --- the API server --------------------------------------------------------------------------


def _plural(obj: dict[str, Any]) -> str:
    kind = str(obj["kind"]).lower()
    return kind[:-1] + "ies" if kind.endswith("policy") else kind + "s"


def _probes(sc: sf.Scenario, groups: Iterable[str]) -> list[dict[str, Any]]:
    """A coordinator and a worker of each group's first job: each role has its policy,
    and the API server starts applying each policy on its own."""
    out = []
    for g in groups:
        job = next(j for j in sc.jobs if j.group.name == g)
        pods = sf.pods_of(job)
        lead = "launcher" if job.group.profile == "mpi-operator" else ""
        coord = next(p for p in pods if "coordinator" in p["metadata"]["name"]
                     or "master" in p["metadata"]["name"] or (lead and lead in p["metadata"]["name"]))  # fmt: skip
        worker = next(p for p in pods if "worker" in p["metadata"]["name"])
        out += [coord, worker]
    return out


def _dry_run(client: Client, pod: dict[str, Any]) -> dict[str, Any]:
    ns = pod["metadata"]["namespace"]
    got: dict[str, Any] = client.request("POST", f"/api/v1/namespaces/{ns}/pods", pod, dryRun="All")
    return got


def _mutated(got: dict[str, Any]) -> bool:
    return bool((got.get("spec") or {}).get("affinity"))


def install(client: Client, sc: sf.Scenario, rendered: Rendered, timeout: float = 60) -> None:
    for obj in rendered.objects:
        client.request("POST", f"/apis/{obj['apiVersion']}/{_plural(obj)}", obj)
    covered = {o["metadata"]["labels"].get("topogen.io/group") for o in rendered.objects}
    probes = _probes(sc, [g.name for g in sc.groups if g.name in covered])
    _until("the admission policies to act", lambda: all(
        _mutated(_dry_run(client, p)) for p in probes), timeout)  # fmt: skip


def uninstall(client: Client, sc: sf.Scenario, rendered: Rendered, timeout: float = 60) -> None:
    for obj in rendered.objects:
        path = f"/apis/{obj['apiVersion']}/{_plural(obj)}/{obj['metadata']['name']}"
        try:
            client.request("DELETE", path)
        except KubeError as exc:
            if exc.status != 404:
                raise
    probes = _probes(sc, [g.name for g in sc.groups])
    _until("the admission policies to stop", lambda: not any(
        _mutated(_dry_run(client, p)) for p in probes), timeout)  # fmt: skip


def _until(what: str, ready: Any, timeout: float) -> None:
    end = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > end:
            raise TimeoutError(f"{what}: not within {timeout:g}s")
        time.sleep(0.1)


def prepare(cp: ControlPlane, sc: sf.Scenario) -> None:
    """An empty cluster with this scenario's namespaces and nodes."""
    cp.reset()
    for ns in sc.namespaces():
        cp.ensure_namespace(ns)
    cp.create_nodes(sc.nodes)


# --- outcomes --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    job: sf.Job
    state: str  # useful | split | partial | pending
    zones: tuple[str, ...]
    bound_gpus: int


def outcome(job: sf.Job, pods: dict[tuple[str, str], PodState], zone_of: dict[str, str]) -> Outcome:
    mine = [pods.get((job.group.namespace, p["metadata"]["name"])) for p in sf.pods_of(job)]
    gpu_pod = [sf.GPU in str(p["spec"]["containers"][0]["resources"]) for p in sf.pods_of(job)]
    bound = [s for s in mine if s is not None and s.node]
    zones = tuple(sorted({zone_of[s.node] for s in bound}))
    held = sum(1 for s, g in zip(mine, gpu_pod, strict=True) if g and s is not None and s.node)
    if len(bound) < len(mine):
        state = "pending" if not bound else "partial"
    elif len(zones) == 1 and zones[0] in job.group.allowed:
        state = "useful"
    else:
        state = "split"
    return Outcome(job, state, zones, held)


def violations(
    sc: sf.Scenario,
    rendered: Rendered,
    outcomes: Sequence[Outcome],
    pods: dict[tuple[str, str], PodState],
    zone_of: dict[str, str],
) -> list[str]:
    """What must never happen under pin or spread (see the module docstring)."""
    out = []
    for o in outcomes:
        j, g = o.job, o.job.group
        if len(o.zones) > 1:
            out.append(f"{j.key}: pods bound in {', '.join(o.zones)}")
        for z in o.zones:
            if z not in g.allowed:
                out.append(f"{j.key}: bound in {z}, which the group's policies deny")
            planned = rendered.zones.get(g.name)
            if planned and z not in planned:
                out.append(f"{j.key}: bound in {z}, outside topogen's zones {planned}")
        for p in sf.pods_of(j):
            s = pods.get((g.namespace, p["metadata"]["name"]))
            if g.identity_label is None or s is None or not s.node:
                continue
            if s.labels.get(g.identity_label) != zone_of[s.node]:
                got = s.labels.get(g.identity_label)
                out.append(f"{j.key}: {p['metadata']['name']} in {zone_of[s.node]} has "
                           f"{g.identity_label}={got}")  # fmt: skip
    out += traffic_violations(rendered.config, [o for o in outcomes if o.state == "useful"], pods)
    return out


def traffic_violations(
    config: Path, useful: Sequence[Outcome], pods: dict[tuple[str, str], PodState]
) -> list[str]:
    """Useful jobs whose coordinator and workers may not talk, labels as bound."""
    from topogen.analysis.context import required_ports
    from topogen.analysis.reachability import PolicyIndex, pod_endpoint
    from topogen.config import load_config
    from topogen.sources.loader import load_cluster_inputs

    cfg = load_config(config)
    inputs = load_cluster_inputs(cfg, cfg.clusters[0])
    index = PolicyIndex(inputs.policies, inputs.namespaces)
    ports = (("rendezvous", sf.PORT, "TCP"),)
    need = {g.name: required_ports(g) for g in cfg.groups}
    out = []
    for o in useful:
        j = o.job
        ns = j.group.namespace
        states = [pods[(ns, p["metadata"]["name"])] for p in sf.pods_of(j)]
        eps = {tuple(sorted(s.labels.items())): pod_endpoint(s.labels, ns, inputs.namespaces, ports)
               for s in states}  # fmt: skip
        for a in eps.values():
            for b in eps.values():
                if not index.verdict(a, b).permits(need[j.group.name]):
                    out.append(f"{j.key}: traffic denied between its pods as bound")
                    break
            else:
                continue
            break
    return out


@dataclass
class PlanRun:
    plan: str
    outcomes: list[Outcome] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    refused: tuple[str, ...] = ()
    seconds: float = 0.0  # creation to settled
    render_seconds: float = 0.0
    pods: int = 0
    # over time
    makespan: float = 0.0
    useful_work: float = 0.0  # GPU x time units of useful jobs
    stuck: int = 0  # jobs that never ran
    held_work: float = 0.0  # GPU x time held by partly bound jobs (the gang caveat)
    # GPU x time of jobs waiting, by what held them back (see `_waits`)
    waits: dict[str, float] = field(default_factory=dict)
    starts: dict[str, float] = field(default_factory=dict)  # job key -> when it ran wholly bound

    def count(self, state: str) -> int:
        return sum(1 for o in self.outcomes if o.state == state)

    def gpus(self, state: str) -> int:
        return sum(o.job.gpus if o.state == "useful" else o.bound_gpus
                   for o in self.outcomes if o.state == state)  # fmt: skip


def _zone_of(sc: sf.Scenario) -> dict[str, str]:
    return {n["metadata"]["name"]: n["metadata"]["labels"][sf.ZONE] for n in sc.nodes}


def _clear(client: Client, watch: PodWatch, sc: sf.Scenario) -> None:
    nss = set(sc.namespaces())
    keys = [k for k in watch.snapshot() if k[0] in nss]
    client.delete_pods(keys)
    watch.wait("pods deleted", lambda pods: not any(k[0] in nss for k in pods), 120)


def static_run(
    cp: ControlPlane,
    client: Client,
    watch: PodWatch,
    sc: sf.Scenario,
    plan: str,
    work: Path,
    settled: Callable[[ControlPlane, PodWatch], None] = settle,
    zones: Callable[[sf.Scenario], dict[str, str]] = _zone_of,
) -> PlanRun:
    """`settled`: until nothing more will be bound; `zones`: node -> zone (bench/schedkarp.py
    passes Karpenter's: its nodes come and go)."""
    rendered = render(sc, plan, [j for j in sc.jobs if j.known], work)
    run = PlanRun(plan, refused=rendered.refused, render_seconds=rendered.seconds)
    install(client, sc, rendered)
    try:
        order = list(sc.jobs)
        random.Random(sc.spec.seed).shuffle(order)
        batches = [sf.pods_of(j) for j in order]
        run.pods = sum(len(b) for b in batches)
        began = time.monotonic()
        client.create_pods(batches)
        settled(cp, watch)
        run.seconds = time.monotonic() - began
        pods = watch.snapshot()
        zone_of = zones(sc)
        run.outcomes = [outcome(j, pods, zone_of) for j in sc.jobs]
        if plan != "none":
            run.violations = violations(sc, rendered, run.outcomes, pods, zone_of)
        _clear(client, watch, sc)
    finally:
        uninstall(client, sc, rendered)
    return run


def timed_run(
    cp: ControlPlane, client: Client, watch: PodWatch, sc: sf.Scenario, plan: str, work: Path
) -> PlanRun:
    """The jobs arriving over time (see the module docstring); time in the jobs' units."""
    rendered = render(sc, plan, [j for j in sc.jobs if j.known], work)
    run = PlanRun(plan, refused=rendered.refused, render_seconds=rendered.seconds)
    zone_of = _zone_of(sc)
    install(client, sc, rendered)
    began = time.monotonic()
    try:
        arrivals = sorted(sc.jobs, key=lambda j: (j.arrival, j.name))
        waiting: list[sf.Job] = []
        running: dict[str, tuple[float, sf.Job]] = {}
        final: dict[str, Outcome] = {}
        clock = 0.0
        held = 0  # GPUs partly bound jobs hold since the last event
        reasons: dict[str, int] = {}  # the waiting jobs' GPUs by reason, since then
        while arrivals or waiting or running:
            ends = [end for end, _ in running.values()]
            nxt = min([*ends, *(j.arrival for j in arrivals[:1])], default=None)
            if nxt is None:  # waiting jobs, none running, none to come: they never run
                run.stuck = len(waiting)
                break
            run.held_work += held * (nxt - clock)
            for why, gpus in reasons.items():
                run.waits[why] = run.waits.get(why, 0.0) + gpus * (nxt - clock)
            clock = nxt
            done = [j for end, j in running.values() if end <= clock]
            for j in done:
                del running[j.name]
            if done:
                client.delete_pods((j.group.namespace, p["metadata"]["name"])
                                   for j in done for p in sf.pods_of(j))  # fmt: skip
                gone = {(j.group.namespace, p["metadata"]["name"]) for j in done
                        for p in sf.pods_of(j)}  # fmt: skip
                watch.wait("finished pods deleted", _none_of(gone), 120)
            new = [j for j in arrivals if j.arrival <= clock]
            arrivals = arrivals[len(new) :]
            client.create_pods([sf.pods_of(j) for j in new])
            run.pods += sum(len(sf.pods_of(j)) for j in new)
            waiting += new
            settle(cp, watch)
            pods = watch.snapshot()
            still = []
            for j in waiting:
                o = outcome(j, pods, zone_of)
                if o.state in ("useful", "split"):
                    running[j.name] = (clock + j.duration, j)
                    run.starts[j.key] = clock
                    final[j.name] = o
                    if o.state == "useful":
                        run.useful_work += j.gpus * j.duration
                else:
                    still.append(j)
            waiting = still
            held = sum(outcome(j, pods, zone_of).bound_gpus for j in waiting)
            reasons = _waits(sc, rendered, waiting, [*waiting, *running_jobs(running)], pods)
            if plan != "none":
                present = [outcome(j, pods, zone_of) for j in [*waiting, *running_jobs(running)]]
                run.violations += violations(sc, rendered, present, pods, zone_of)
        run.makespan = clock
        run.outcomes = [final.get(j.name) or Outcome(j, "pending", (), 0) for j in sc.jobs]
        run.seconds = time.monotonic() - began
        _clear(client, watch, sc)
    finally:
        uninstall(client, sc, rendered)
    run.violations = sorted(set(run.violations))
    return run


WAIT_REASONS = {
    "home": "room in its own zones",
    "elsewhere": "room only in another allowed zone",
    "none": "no room in any allowed zone",
    "held-known": "known jobs",
    "held-unknown": "jobs the render did not know",
}


def _waits(
    sc: sf.Scenario,
    rendered: Rendered,
    waiting: Sequence[sf.Job],
    present: Sequence[sf.Job],
    pods: dict[tuple[str, str], PodState],
) -> dict[str, int]:
    """What holds each waiting job back, in its GPUs: its plan's zones have room for it
    (the GPUs it holds there counted as its own: exclusions or its pods' order hold it),
    only another zone its policies allow has, or none has; and the GPUs partly bound jobs
    hold, known to the render or not."""
    zone_of = _zone_of(sc)
    free = dict(sc.zone_gpus())
    mine: dict[str, dict[str, int]] = {}
    for j in present:
        at = mine.setdefault(j.key, {})
        for p in sf.pods_of(j):
            s = pods.get((j.group.namespace, p["metadata"]["name"]))
            if s is not None and s.node and sf.GPU in str(p["spec"]["containers"][0]["resources"]):
                z = zone_of[s.node]
                at[z] = at.get(z, 0) + 1
                free[z] -= 1
    out: dict[str, int] = {}
    for j in waiting:
        fits = {z for z in j.group.allowed if free[z] + mine[j.key].get(z, 0) >= j.gpus}
        why = "home" if fits & set(rendered.zones_of(j)) else "elsewhere" if fits else "none"
        out[why] = out.get(why, 0) + j.gpus
        if mine[j.key]:
            key = "held-known" if j.known else "held-unknown"
            out[key] = out.get(key, 0) + sum(mine[j.key].values())
    return out


def _none_of(keys: set[tuple[str, str]]) -> Callable[[dict[tuple[str, str], PodState]], bool]:
    return lambda pods: not keys & pods.keys()


def running_jobs(running: dict[str, tuple[float, sf.Job]]) -> list[sf.Job]:
    return [j for _, j in running.values()]


# --- bounds ----------------------------------------------------------------------------------


def demands(sc: sf.Scenario) -> list[bounds.Demand]:
    gpus = sc.zone_gpus()
    return [bounds.Demand(j.key, j.gpus, tuple(z for z in j.group.allowed if gpus[z] >= j.gpus))
            for j in sc.jobs]  # fmt: skip


def static_bound(sc: sf.Scenario) -> bounds.Packing:
    return bounds.best_packing(demands(sc), sc.zone_gpus())


def _timed_jobs(sc: sf.Scenario) -> list[tuple[float, float, int, tuple[str, ...]]]:
    pairs = zip(sc.jobs, demands(sc), strict=True)
    return [(j.arrival, j.duration, d.gpus, d.domains) for j, d in pairs]


def makespan_bound(sc: sf.Scenario) -> float:
    return bounds.makespan_bound(_timed_jobs(sc), sc.zone_gpus())


def min_makespan(sc: sf.Scenario) -> bounds.Makespan:
    """The tightest makespan bound bench/bounds.py states for the scenario, and which."""
    return bounds.min_makespan(_timed_jobs(sc), sc.zone_gpus())


def fifo_makespan(sc: sf.Scenario) -> float:
    """The idealised online gang scheduler's makespan (bench/bounds.py), for reference."""
    return bounds.fifo_makespan(_timed_jobs(sc), sc.zone_gpus())


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="one scenario, every plan, printed")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--zones", type=int, default=4)
    ap.add_argument("--load", type=float, default=1.2)
    ap.add_argument("--plans", default=",".join(PLANS))
    ap.add_argument("--timed", action="store_true")
    args = ap.parse_args(argv)
    sc = sf.generate(sf.SchedSpec(args.seed, args.zones, args.load))
    bound = static_bound(sc)
    print(f"{sc.spec.name}: {len(sc.jobs)} jobs, {sc.gpus} GPUs {sc.zone_gpus()}, "
          f"bound {bound.gpus} (exact {bound.exact})")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="topogen-fleet-") as tmp:
        work = Path(tmp)
        cp = start(work / "plane")
        try:
            prepare(cp, sc)
            client = Client(cp)
            with PodWatch(cp) as watch:
                for plan in args.plans.split(","):
                    fn = timed_run if args.timed else static_run
                    r = fn(cp, client, watch, sc, plan, work / "render")
                    print(f"  {plan}: useful {r.count('useful')} jobs {r.gpus('useful')} GPUs, "
                          f"split {r.count('split')}, partial {r.count('partial')} "
                          f"({r.gpus('partial')} GPUs), pending {r.count('pending')}; "
                          f"{r.pods} pods in {r.seconds:.1f}s; makespan {r.makespan:.1f} "
                          f"work {r.useful_work:.0f} stuck {r.stuck}; "
                          f"violations {len(r.violations)} {r.violations[:3]} refused {r.refused}")  # fmt: skip
        finally:
            cp.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
