"""The fleet measure for `make bench`: every plan on generated clusters, as Markdown.

    .venv/bin/python bench/schedbench.py [--quick] [--out FILE]

Static: SCENARIOS (3-12 zones), every job submitted at once, all known to the render.
Over time: TIMED, jobs arriving and finishing, a share of them unknown to the render (so
the fallback is exercised). One control plane for all; each plan on an emptied cluster.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bounds  # noqa: E402
import schedfleet as sf  # noqa: E402
import schedkarp  # noqa: E402
import schedrun as sr  # noqa: E402
from fleet_kit import Client, PodWatch  # noqa: E402

# the jobs' GPUs about the cluster's (load 1.0: the last job tips it over), then more
# jobs than the GPUs hold at once (1.5)
SCENARIOS = [
    *(sf.SchedSpec(s, z, load=1.0) for s, z in ((1, 3), (2, 4), (3, 5), (4, 6), (5, 8),
                                                 (6, 9), (7, 10), (8, 12), (9, 12))),
    *(sf.SchedSpec(s, z, load=1.5) for s, z in ((21, 4), (22, 8), (23, 12))),
]  # fmt: skip
TIMED = [sf.SchedSpec(s, z, load=1.5, known=0.8, max_jobs=40)
         for s, z in ((11, 4), (12, 8), (13, 6))]  # fmt: skip
QUICK = [sf.SchedSpec(1, 3, load=1.0), sf.SchedSpec(21, 4, load=1.5)]
QUICK_TIMED = [sf.SchedSpec(11, 4, load=1.0, known=0.8, max_jobs=12)]
STATIC_TARGET = 0.90  # useful GPUs / bound, spread, every cluster
TIMED_TARGET = 0.85  # useful GPU-hours over the makespan / the bound's


@dataclass
class Row:
    sc: sf.Scenario
    bound: int
    exact: bool
    runs: dict[str, sr.PlanRun]
    makespan_bound: float = 0.0
    fifo_makespan: float = 0.0  # the idealised online gang scheduler's (simulated)
    bound_how: str = ""  # which makespan bound (bench/bounds.py's min_makespan)


def _how(span: bounds.Makespan) -> str:
    exact = "exact" if span.exact else "lower bound"
    return f"{exact}, {span.how}"


def _pct(a: float, b: float) -> str:
    return f"{100 * a / b:.0f}%" if b else "-"


def measure(
    specs: Sequence[sf.SchedSpec],
    timed: bool,
    work: Path,
    plans: Sequence[str] = sr.PLANS,
    scheduler: dict[str, Any] | None = None,
) -> list[Row]:
    """Every plan on each scenario; `scheduler`: another kube-scheduler configuration."""
    name = f"plane-{'timed' if timed else 'static'}{'-variant' if scheduler else ''}"
    cp = sr.start(work / name, scheduler)
    rows = []
    try:
        client = Client(cp)
        with PodWatch(cp) as watch:
            for spec in specs:
                sc = sf.generate(spec)
                bound = sr.static_bound(sc)
                sr.prepare(cp, sc)
                runs = {}
                for plan in plans:
                    fn = sr.timed_run if timed else sr.static_run
                    began = time.monotonic()
                    runs[plan] = fn(cp, client, watch, sc, plan, work / "render" / spec.name)
                    r = runs[plan]
                    print(f"fleet: {spec.name} {'timed' if timed else 'static'} {plan}: useful "
                          f"{r.gpus('useful')} GPUs / bound {bound.gpus}, partial "
                          f"{r.count('partial')}, violations {len(r.violations)} "
                          f"({time.monotonic() - began:.0f}s)", file=sys.stderr, flush=True)  # fmt: skip
                span = sr.min_makespan(sc) if timed else None
                rows.append(Row(sc, bound.gpus, bound.exact, runs,
                                span.bound if span else 0.0,
                                sr.fifo_makespan(sc) if timed else 0.0,
                                _how(span) if span else ""))  # fmt: skip
    finally:
        cp.stop()
    return rows


def static_table(rows: Sequence[Row]) -> list[str]:
    head = ("| cluster | zones | GPUs | load | jobs | bound | " + " | ".join(
        f"{p}: useful GPUs (of bound) | {p}: partial / pending / split" for p in sr.PLANS) + " |")  # fmt: skip
    out = [head, "|" + " --- |" * (6 + 2 * len(sr.PLANS))]
    for r in rows:
        load = sum(j.gpus for j in r.sc.jobs) / r.sc.gpus
        cells = [r.sc.spec.name, str(len(r.sc.zones)), str(r.sc.gpus), f"{load:.2f}",
                 str(len(r.sc.jobs)), f"{r.bound}{'' if r.exact else ' (relaxation)'}"]  # fmt: skip
        for p in sr.PLANS:
            run = r.runs[p]
            cells.append(f"{run.gpus('useful')} ({_pct(run.gpus('useful'), r.bound)})")
            cells.append(f"{run.count('partial')} ({run.gpus('partial')} GPUs) / "
                         f"{run.count('pending')} / {run.count('split')}")  # fmt: skip
        out.append("| " + " | ".join(cells) + " |")
    return out


def timed_table(rows: Sequence[Row]) -> list[str]:
    head = ("| cluster | zones | GPUs | jobs (unknown to the render) | makespan bound | "
            "whole-job FIFO, simulated: makespan (of bound) | " +
            " | ".join(f"{p}: useful GPU-time / makespan (of bound) | {p}: makespan, never "
                       "ran, GPU-time held partly bound" for p in sr.PLANS) + " |")  # fmt: skip
    out = [head, "|" + " --- |" * (6 + 2 * len(sr.PLANS))]
    for r in rows:
        work = sum(j.gpus * j.duration for j in r.sc.jobs)
        best = work / r.makespan_bound if r.makespan_bound else 0.0
        unknown = sum(1 for j in r.sc.jobs if not j.known)
        cells = [r.sc.spec.name, str(len(r.sc.zones)), str(r.sc.gpus),
                 f"{len(r.sc.jobs)} ({unknown})", f"{r.makespan_bound:.1f} ({r.bound_how})",
                 f"{r.fifo_makespan:.1f} ({_pct(r.makespan_bound, r.fifo_makespan)})"]  # fmt: skip
        for p in sr.PLANS:
            run = r.runs[p]
            rate = run.useful_work / run.makespan if run.makespan else 0.0
            cells.append(f"{rate:.1f} GPUs ({_pct(rate, best)})")
            cells.append(f"{run.makespan:.1f}, {run.stuck}, {run.held_work:.0f}")
        out.append("| " + " | ".join(cells) + " |")
    return out


def ratio_static(r: Row) -> float:
    return r.runs["spread"].gpus("useful") / r.bound if r.bound else 1.0


def ratio_timed(r: Row, against: str = "bound") -> float:
    """spread's useful GPU-time per unit of its makespan over the bound's (or, against
    "fifo", the idealised online gang scheduler's)."""
    run = r.runs["spread"]
    work = sum(j.gpus * j.duration for j in r.sc.jobs)
    best = r.makespan_bound if against == "bound" else r.fifo_makespan
    if not run.makespan or not best:
        return 0.0
    return (run.useful_work / run.makespan) / (work / best)


def _per_cluster(rows: Sequence[Row]) -> str:
    return ", ".join(f"{r.sc.spec.name} {ratio_timed(r):.1%}" for r in rows)


def targets(static: Sequence[Row], timed: Sequence[Row], scored: Sequence[Row]) -> list[str]:
    worst_s = min((ratio_static(r) for r in static), default=0.0)
    held = [r for r in static if r.sc.spec.load <= 1.0]
    worst_full = min((ratio_static(r) for r in held), default=0.0)
    worst_t = min((ratio_timed(r) for r in timed), default=0.0)
    worst_fifo = min((ratio_timed(r, "fifo") for r in timed), default=0.0)
    worst_scored = min((ratio_timed(r) for r in scored), default=0.0)
    bad = sum(len(r.runs[p].violations) for r in [*static, *timed, *scored]
              for p in ("pin", "spread") if p in r.runs)  # fmt: skip
    partial = sum(r.runs["spread"].count("partial") for r in static)
    held_time = sum(r.runs["spread"].held_work for r in timed)

    def holds(ok: bool) -> str:
        return "holds" if ok else "does not hold"

    return [
        "| target | measured | |",
        "| --- | --- | --- |",
        f"| static, spread: useful GPUs >= {STATIC_TARGET:.0%} of the bound on every cluster "
        f"| worst {worst_s:.1%} | {holds(worst_s >= STATIC_TARGET)} |",
        f"| the same, clusters whose jobs about fill the GPUs (load 1.0) | worst "
        f"{worst_full:.1%} | {holds(worst_full >= STATIC_TARGET)} |",
        f"| static, spread: no job partly bound once the scheduler settled | {partial} jobs "
        f"| {holds(partial == 0)} |",
        f"| over time, spread: useful GPU-time over the makespan >= {TIMED_TARGET:.0%} of the "
        f"bound's, every cluster | {_per_cluster(timed)} | {holds(worst_t >= TIMED_TARGET)} |",
        "| the same, the kube-scheduler scoring free GPUs too (the cluster's configuration) "
        f"| {_per_cluster(scored)} | (reported: worst {worst_scored:.1%}) |",
        "| the same, of the idealised online gang scheduler's (whole-job FIFO, simulated) "
        f"| worst {worst_fifo:.1%} | (reported) |",
        f"| over time, spread: GPU-time held by partly bound jobs | {held_time:.0f} "
        "| (reported: see the gang caveat) |",
        "| pin and spread: no job split across zones, none outside its allowed zones or "
        f"topogen's, identity = zone, traffic allowed as bound | {bad} violations | "
        f"{holds(bad == 0)} |",
    ]


def caveat(static: Sequence[Row], timed: Sequence[Row]) -> list[str]:
    """How many jobs hold part of their pods once the scheduler settled, per plan."""
    held = {p: (sum(r.runs[p].count("partial") for r in static),
                sum(r.runs[p].gpus("partial") for r in static)) for p in sr.PLANS}  # fmt: skip
    cells = "; ".join(f"{p}: {n} jobs holding {g} GPUs" for p, (n, g) in held.items())
    over = "; ".join(f"{p}: {sum(r.runs[p].held_work for r in timed):.0f}" for p in sr.PLANS)
    return [
        f"Partly bound jobs over all static clusters ({cells}); GPU-time held partly bound "
        f"over time ({over}). The scheduler binds a coordinator before its workers and knows "
        "nothing of the job as a whole: where the jobs that reach a domain need more GPUs "
        "than it has, some end with part of their pods; and by default it scores a node by its "
        "free CPU and memory only, so a coordinator may land in the zone with no GPUs left for "
        "its workers (scoring free GPUs too sends it where they are: the table over time). "
        "`spread` gives every known job a "
        "domain by a packing of the cluster's known jobs, and each job the packing queues "
        "(the known jobs need more GPUs than the domains have at once) never shares its "
        "domain with the jobs of its slot: packed jobs of that domain whose GPUs hold it "
        "(required pod anti-affinity on the domain, which the scheduler applies both ways). "
        "Whichever starts first runs whole, the others wait Pending, and no set of known "
        "jobs that may share a domain needs more GPUs than it has. A job the render did not "
        "know (the fallback) goes where that packing leaves GPUs over (queue slots counted): "
        "under a static identity to the domain with the most left over (preferZones first "
        "among those that hold a job of its group), under placement identity to the domains "
        "that hold one (its coordinator chooses among them), else to the one with the most "
        "left over. What remains: where the known jobs claim every domain's GPUs (more jobs "
        "than GPUs, as over time here) no room is left to keep, so such a job takes GPUs a "
        "known job was given and over time the partly bound jobs are those and the known "
        "jobs they crowd out (and pinned to one domain, its coordinator cannot go where a "
        "scheduler scoring free GPUs would send it); a "
        "queued job that starts first leaves the rest of its slot idle (the static "
        "measure's shortfall); and over time a job waits for its own domain even where "
        "another has room, and behind its slot's jobs even where its domain has room (the "
        "packing takes the known jobs as present at once). Gang scheduling (Kueue, or the "
        "scheduler's Workload API, alpha and off by default in Kubernetes 1.36) removes "
        "the first.",
    ]


def limits_table(timed: Sequence[Row], scored: Sequence[Row]) -> list[str]:
    """spread over time: its rate of the bound and what its waiting jobs waited for."""
    keys = list(sr.WAIT_REASONS)
    head = ("| cluster | kube-scheduler | spread: useful GPU-time / makespan (of bound) | "
            "makespan | " + " | ".join(
                f"{'GPU-time held partly bound' if k.startswith('held') else 'waiting GPU-time'}"
                f": {sr.WAIT_REASONS[k]}" for k in keys) + " |")  # fmt: skip
    out = [head, "|" + " --- |" * (4 + len(keys))]
    for label, rows in (("default scoring", timed), ("scoring free GPUs", scored)):
        for r in rows:
            run = r.runs["spread"]
            cells = [r.sc.spec.name, label, f"{100 * ratio_timed(r):.0f}%", f"{run.makespan:.1f}"]
            cells += [f"{run.waits.get(k, 0.0):.0f}" for k in keys]
            out.append("| " + " | ".join(cells) + " |")
    return out


def scaled_part(rows: Sequence[Row]) -> list[str]:
    """The scale-from-zero clusters (bench/schedkarp.py): the static table, Karpenter
    provisioning the GPU nodes."""
    if not rows:
        return []
    worst = min(ratio_static(r) for r in rows)
    bad = sum(len(r.runs[p].violations) for r in rows for p in ("pin", "spread"))
    return [
        "### Scaled to zero: NodePools instead of GPU nodes",
        "",
        "The clusters above with their GPU nodes gone and, per zone that had them, a Karpenter "
        "NodePool limited to that zone's GPUs (the same bound); Karpenter v1.15.0 (its KWOK "
        "provider, the KWOK controller) launches the nodes as pods ask for them. topogen "
        "reads the NodePools and the instance types and plans on what they can add. Without "
        "a policy, Karpenter launches each node in the cheapest zone its pods allow.",
        "",
        *static_table(rows),
        "",
        f"spread: useful GPUs of the bound, worst {worst:.1%}; pin and spread: {bad} "
        "violations (split, outside the allowed or planned zones, identity, traffic).",
        "",
    ]


def report(
    static: Sequence[Row],
    timed: Sequence[Row],
    scored: Sequence[Row],
    seconds: float,
    scaled: Sequence[Row] = (),
) -> str:
    lines = [
        "## Fleet: GPUs kept busy under the real kube-scheduler",
        "",
        "`bench/schedbench.py` (issue 19): generated clusters (bench/schedfleet.py: 3-12 "
        "zones of uneven GPU capacity, tainted GPU nodes, CPU nodes in some zones; groups of "
        "the custom, PyTorchJob and MPIJob profiles with zone-isolating Cilium policies on a "
        "static label (`zone`) or on topology.kubernetes.io/zone (stamped at binding; the "
        "agent is configured to keep it, so the identity follows placement); jobs of a "
        "coordinator on a "
        "CPU or a GPU and 1-16 one-GPU workers). Each plan's native admission policies run "
        "on a real kube-apiserver (v1.36.3), pods are created as their controllers would "
        "(coordinator first; MPI: workers first), the real kube-scheduler binds them. "
        "`none`: no policy; `pin`: every job of a group in one domain (placement: pin); "
        "`spread`: every allowed domain (the default). Useful: every pod bound in one zone "
        "the group's policies allow. Bound: the best packing of the same jobs into allowed "
        "zones (exact, HiGHS MIP).",
        "",
        "### Static: every job submitted at once",
        "",
        *static_table(static),
        "",
        *scaled_part(scaled),
        "### Over time: jobs arrive, run their drawn duration once wholly bound, and leave",
        "",
        "A split job (`none`) holds its GPUs for its duration and does nothing. Bound: useful "
        "GPU-time over a lower bound of the makespan (bench/bounds.py), each row saying which: "
        "the exact minimum of whole-job schedules with the jobs' arrival times (HiGHS MIP) or "
        "the preemptive relaxation where a schedule reaches it. Whole-job FIFO: the "
        "makespan an idealised online gang scheduler reaches (whole jobs, first come first "
        "served with backfill, any allowed zone; simulated, not the real scheduler), for "
        "scale. A share of the jobs is not in the manifests topogen rendered from (the "
        "fallback).",
        "",
        *timed_table(timed),
        "",
        "What limits `spread` over time: the GPU-time of its waiting jobs (GPUs x time "
        "waiting) by what held each back at the time (its plan's zones had room for it, "
        "counting the GPUs it held there: an exclusion or its own pods' order kept it out; "
        "only another zone its policies allow had room: the plan pinned it; no allowed zone "
        "had room), and the GPUs partly bound jobs held meanwhile. Beside it, the same with "
        "the kube-scheduler scoring nodes by their free GPUs as well (NodeResourcesFit "
        "LeastAllocated over CPU, memory and nvidia.com/gpu; by default it scores CPU and "
        "memory only): a cluster's configuration, not topogen's, shown for what it changes.",
        "",
        *limits_table(timed, scored),
        "",
        "### Targets",
        "",
        *targets(static, timed, scored),
        "",
        "### The gang caveat",
        "",
        *caveat(static, timed),
        "",
        f"Measured in {seconds / 60:.1f} minutes.",
        "",
    ]
    return "\n".join(lines)


BEGIN, END = "<!-- fleet: begin -->", "<!-- fleet: end -->"


def splice(text: str, section: str) -> str:
    """RESULTS.md with the fleet section replaced (or appended)."""
    block = f"{BEGIN}\n{section}{END}\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        return head + block + rest.split(END, 1)[1].lstrip("\n")
    return text.rstrip("\n") + "\n\n" + block


def run(quick: bool) -> str:
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="topogen-fleet-") as tmp:
        work = Path(tmp)
        static = measure(QUICK if quick else SCENARIOS, False, work)
        timed = measure(QUICK_TIMED if quick else TIMED, True, work)
        scored = measure(QUICK_TIMED if quick else TIMED, True, work, ("spread",), sr.GPU_SCORING)
        scaled = [
            Row(sc, bound, exact, runs)
            for sc, bound, exact, runs in schedkarp.measure(
                schedkarp.QUICK_SCALED if quick else schedkarp.SCALED, work / "scaled"
            )
        ]
    return report(static, timed, scored, time.monotonic() - began, scaled)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    args = ap.parse_args(argv)
    section = run(args.quick)
    old = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
    args.out.write_text(splice(old, section), encoding="utf-8")
    print(f"fleet: wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
