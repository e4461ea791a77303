"""The race in `make bench`: both engines timed on the same clusters, answers compared.

For each size (workloads): the cluster bench/netpolgen.py writes (cached in
bench/.fleets), `topogen connectivity` timed over --runs whole-process runs, Cyclonus
(`cyclonus truth-table`) likewise, and the answers compared by bench/race.py.

Cyclonus asks its engine about every (sender, receiver, port) against every policy
target, so its time grows with workloads squared times policies: about a minute of
CPU at 1,000 workloads, about four hours at 5,000. Above FULL_UP_TO workloads it is
therefore asked about a sample of senders (every k-th in sender order, SAMPLE senders;
every receiver and port): that run's time is a lower bound of the full run's, which is
what the target is judged on; the full run's time is also projected from it (the
per-sender part scaled up, the fixed part, a run asking about no sender, added once).
The answers compared are the sampled senders'. `--race-full` asks about every sender.
A Cyclonus run longer than CACHE_AFTER is kept in bench/.fleets, keyed by the binary and
the files it reads, and reused by later runs unless `--fresh-peer`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import netpolgen  # noqa: E402
import race as race  # noqa: E402  (re-exported: run.py reads race.CYCLONUS)
from measure import PYTHON, Measured, measure  # noqa: E402

__all__ = [
    "BEGIN",
    "END",
    "SPEEDUP",
    "bench",
    "faster",
    "report_lines",
    "run",
    "splice",
    "target_rows",
]

FLEETS = HERE / ".fleets"
FULL_UP_TO = 1000  # workloads: Cyclonus asks about every sender up to this size
SAMPLE = 200  # senders Cyclonus asks about above it
CACHE_AFTER = 600.0  # s: a Cyclonus run longer than this is measured once
BEGIN, END = "<!-- race: begin -->", "<!-- race: end -->"


def cluster_dir(spec: netpolgen.RaceSpec) -> Path:
    """Generate the cluster once per generator version (bench/.fleets/<name>-<digest>)."""
    out = FLEETS / f"{spec.name}-{netpolgen.generator_digest()}"
    if not (out / "probe.json").exists():
        FLEETS.mkdir(exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".gen-", dir=FLEETS))
        netpolgen.write_cluster(spec, tmp)
        shutil.rmtree(out, ignore_errors=True)
        tmp.rename(out)
    return out


def _sizes(root: Path) -> dict[str, int]:
    ns = yaml.safe_load((root / "namespaces.yaml").read_text(encoding="utf-8"))["items"]
    policies = sum(
        len(yaml.safe_load(p.read_text(encoding="utf-8"))["items"])
        for p in (root / "policies").glob("*.yaml")
    )
    return {"namespaces": len(ns), "policies": policies}


def _timed(cmd: list[str], out: Path, runs: int, what: str) -> Measured:
    m = Measured()
    for _ in range(runs):
        r = measure(cmd, out)
        if r["rc"] != 0:
            raise SystemExit(f"race: {what} failed (exit {r['rc']}): {r['stderr']}")
        m.add(r)
        m.digests.add(hashlib.sha256(out.read_bytes()).hexdigest())
    return m


def inputs_digest(root: Path) -> str:
    """What Cyclonus reads: the policy files and the probe file."""
    h = hashlib.sha256()
    for p in [*sorted((root / "policies").glob("*.yaml")), root / "probe.json"]:
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def peer_cache(root: Path, cmd: Sequence[str]) -> tuple[Path, Path]:
    """Where a long Cyclonus run is kept: (its times, its answers), named by the binary,
    the files it reads and its arguments."""
    tag = hashlib.sha256(" ".join(cmd[2:]).encode()).hexdigest()[:8]
    key = f"peer-{race.CYCLONUS.resolve().name}-{inputs_digest(root)}-{tag}"
    return FLEETS / f"{key}.json", FLEETS / f"{key}.tsv"


def _peer(
    root: Path, cmd: list[str], runs: int, out: Path, fresh: bool
) -> tuple[Measured, Path, bool]:
    """Cyclonus's runs of `cmd`: (measured, its answers, whether from an earlier run)."""
    cached, answers = peer_cache(root, cmd)
    if cached.exists() and answers.exists() and not fresh:
        data = json.loads(cached.read_text(encoding="utf-8"))
        m = Measured(data["wall"], data["cpu"], data["rss_kb"], set(data["digests"]), {0})
        return m, answers, True
    m = _timed(cmd, out, 1, "cyclonus")
    if m.wall[0] <= CACHE_AFTER:
        more = _timed(cmd, out, runs - 1, "cyclonus")
        m.wall += more.wall
        m.cpu += more.cpu
        m.rss_kb += more.rss_kb
        m.digests |= more.digests
        return m, out, False
    FLEETS.mkdir(exist_ok=True)
    shutil.copy(out, answers)
    record = {"wall": m.wall, "cpu": m.cpu, "rss_kb": m.rss_kb, "digests": sorted(m.digests)}
    cached.write_text(json.dumps(record), encoding="utf-8")
    return m, answers, False


def _one(
    spec: netpolgen.RaceSpec, runs: int, case: Path, full: bool, fresh: bool
) -> dict[str, Any]:
    root = cluster_dir(spec)
    topo = _timed(race.topogen_cmd(root), case / "topogen.csv", runs, "topogen connectivity")
    every = 1 if full or spec.workloads <= FULL_UP_TO else max(1, spec.workloads // SAMPLE)
    cmd = race.cyclonus_cmd(root, every)
    peer, answers, cached = _peer(root, cmd, runs, case / "cyclonus.tsv", fresh)
    fixed = None
    if every > 1:  # the same process asking about no sender: reading and building only
        no_sender = race.cyclonus_cmd(root, 1, spec.workloads)
        fixed = _timed(no_sender, case / "cyclonus-none.tsv", min(runs, 3), "cyclonus")
    variants = race.run_variants(root, case)
    senders = race.sample(list(race.served_ports(root)), every) if every > 1 else None
    topogen = race.read_topogen(case / "topogen.csv")
    agreement = race.compare(root, topogen, race.read_cyclonus(answers), variants, senders)
    return {"spec": spec, **_sizes(root), "topogen": topo, "cyclonus": peer, "every": every,
            "fixed": fixed, "peer_cached": cached, "agreement": agreement}  # fmt: skip


def bench(
    workloads: Sequence[int],
    seed: int,
    runs: int,
    work: Path,
    full: bool = False,
    fresh_peer: bool = False,
) -> list[dict[str, Any]]:
    """Per size: the cluster's counts, both engines' runs, and the answers compared."""
    results = []
    for n in workloads:
        print(f"bench: race {n} workloads ...", file=sys.stderr, flush=True)
        case = work / f"race-{n}"
        case.mkdir(parents=True, exist_ok=True)
        r = _one(netpolgen.RaceSpec(n, seed), runs, case, full, fresh_peer)
        results.append(r)
        print(f"bench:   topogen {r['topogen'].wall_med:.2f}s cyclonus "
              f"{r['cyclonus'].wall_med:.2f}s (1/{r['every']} of the senders), "
              f"{len(r['agreement'].disagreements)} disagreements", file=sys.stderr, flush=True)  # fmt: skip
    return results


def projected_cpu(r: dict[str, Any]) -> float:
    """Cyclonus's CPU time for every sender: measured, or projected from the sample."""
    c, fixed = r["cyclonus"].cpu_med, r["fixed"]
    if fixed is None:
        return float(c)
    senders = -(-r["agreement"].workloads // r["every"])
    return float(fixed.cpu_med + (c - fixed.cpu_med) * r["agreement"].workloads / senders)


def faster(r: dict[str, Any]) -> bool:
    """topogen no slower than Cyclonus (or than the sample, a lower bound of the full
    run): median wall time and median CPU time."""
    t, c = r["topogen"], r["cyclonus"]
    return bool(t.wall_med <= c.wall_med and t.cpu_med <= c.cpu_med)


# the race's speed target: topogen this many times faster than Cyclonus (wall and CPU
# time), at every size from this many workloads (below it both are start-up bound: the
# start-up rows of the Targets table hold topogen's own start-up)
SPEEDUP, SPEEDUP_FROM = 10.0, 1_000


def tenfold(r: dict[str, Any]) -> bool:
    """Cyclonus's median wall and CPU time at least SPEEDUP times topogen's (with a sample
    of senders, Cyclonus's times are a lower bound, and so is the ratio)."""
    t, c = r["topogen"], r["cyclonus"]
    return bool(c.wall_med >= SPEEDUP * t.wall_med and c.cpu_med >= SPEEDUP * t.cpu_med)


def target_rows(results: list[dict[str, Any]]) -> list[tuple[str, str, bool | None]]:
    """(target, measured, holds) rows for the report's Targets table."""
    speed = (
        f"race: `topogen connectivity` at least {SPEEDUP:.0f}x faster than Cyclonus from "
        f"{SPEEDUP_FROM:,} workloads"
    )
    same = "race: the same answers as Cyclonus, every pair and port compared"
    if not results:
        return [(speed, "not run", None), (same, "not run", None)]
    large = [r for r in results if r["spec"].workloads >= SPEEDUP_FROM]
    ratios = ", ".join(
        f"{r['spec'].workloads:,}: {r['cyclonus'].wall_med / r['topogen'].wall_med:.1f}x "
        f"({r['cyclonus'].cpu_med / r['topogen'].cpu_med:.1f}x)"
        + (" at least (a sample of senders)" if r["every"] > 1 else "")
        for r in results
    )
    wrong = sum(len(r["agreement"].disagreements) for r in results)
    answers = sum(r["agreement"].cells for r in results)
    return [
        (speed, f"Cyclonus / topogen wall time (CPU time), by workloads: {ratios}",
         all(tenfold(r) for r in large) if large else None),
        (same, f"{answers:,} answers, {wrong} disagreements, excluded by rule: "
         f"{_excluded(results)}", wrong == 0),
    ]  # fmt: skip


def _excluded(results: list[dict[str, Any]]) -> str:
    """Answers set aside, per rule (and combination), over all sizes."""
    total: dict[str, int] = {}
    for r in results:
        for rule, n in r["agreement"].excluded.items():
            total[rule] = total.get(rule, 0) + n
    return ", ".join(f"{n:,} `{rule}`" for rule, n in sorted(total.items())) or "none"


_INTRO = (
    "Cyclonus v0.5.6 (github.com/mattfenwick/cyclonus, built by `make tools`) computes the "
    "truth table of Kubernetes NetworkPolicies for pod pairs and ports, as `cyclonus analyze "
    "--mode probe` does: tools/cyclonus/main.go's `truth-table` asks its engine one question "
    "per pair and served port, one at a time, as its simulated probe runner does, without "
    "rendering N x N tables per port. Both read the same files written by bench/netpolgen.py "
    "(seed {seed}): topogen the namespaces, workload manifests and NetworkPolicyLists "
    "(`topogen connectivity --policies --workloads --namespaces -o csv`), Cyclonus the same "
    "policy files and the probe file made from the same manifests. Every ordered pair "
    "topogen lists (a one-pod workload is not paired with itself) is compared on every port "
    "its receiver serves. Times are whole processes, the median of {runs} runs; a Cyclonus "
    "run over {cache:.0f} minutes is measured once and kept in bench/.fleets for later runs "
    "(marked *). Above {full:,} workloads Cyclonus is asked about every k-th sender only "
    "(all receivers and ports; bench/racebench.py): its time there is a lower bound of the "
    "full run's, and the answers compared are those senders'."
)


def _secs(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.2f}"


def _row(r: dict[str, Any], runs: int) -> str:
    a, t, c = r["agreement"], r["topogen"], r["cyclonus"]
    star = "*" if r["peer_cached"] or (len(c.wall) == 1 and runs > 1) else ""
    ge = "&ge; " if r["every"] > 1 else ""
    return (
        f"| {r['spec'].workloads:,} | {r['namespaces']} | {r['policies']:,} | {a.pairs:,} "
        f"| {a.cells:,} | {a.allowed_cells:,} | {sum(a.excluded.values()):,} "
        f"| {len(a.disagreements)} | {t.wall_med:.2f} | {t.cpu_med:.2f} | {t.rss_mb:.0f} "
        f"| {ge}{_secs(c.wall_med)}{star} | {ge}{_secs(c.cpu_med)}{star} "
        f"| {_secs(projected_cpu(r))} | {c.rss_mb:.0f} "
        f"| {ge}{c.wall_med / t.wall_med:.1f}x | {ge}{c.cpu_med / t.cpu_med:.1f}x "
        f"| {'yes' if faster(r) else '**no**'} |"
    )


def targets(results: list[dict[str, Any]]) -> list[str]:
    """The race's Targets table (Markdown lines)."""
    marks = {True: "yes", False: "**no**", None: "n/a"}
    return ["| target | measured | holds |", "|---|---|---|",
            *(f"| {t} | {m} | {marks[h]} |" for t, m, h in target_rows(results))]  # fmt: skip


# what any Python CLI on topogen's stack pays before its own first line: the interpreter,
# click and PyYAML (with the standard modules they import)
FLOOR_CODE = "import click, yaml"


def _startup_line(topogen: Measured, cyclonus: Measured, floor: Measured | None = None) -> str:
    line = (
        "Start-up alone (the same measure on commands that read no input): "
        f"`topogen connectivity --help` (interpreter and imports) {topogen.wall_med:.2f} s, "
        f"{topogen.cpu_med:.2f} s of CPU; `cyclonus version` {cyclonus.wall_med:.2f} s, "
        f"{cyclonus.cpu_med:.2f} s of CPU."
    )
    if floor is not None:
        line += (
            f" The floor of topogen's stack, `python -c '{FLOOR_CODE}'` (the interpreter and "
            f"the two libraries the CLI is built on): {floor.wall_med:.2f} s, "
            f"{floor.cpu_med:.2f} s of CPU."
        )
    return line


def report_lines(
    results: list[dict[str, Any]],
    runs: int,
    startup: tuple[Measured, Measured] | tuple[Measured, Measured, Measured] | None = None,
) -> list[str]:
    """The race section's lines; `startup`: both engines on a command that reads nothing."""
    seed = results[0]["spec"].seed if results else 1
    intro = _INTRO.format(seed=seed, runs=runs, cache=CACHE_AFTER / 60, full=FULL_UP_TO)
    lines = [
        "## Race: `topogen connectivity` and Cyclonus",
        "",
        intro,
        "",
        *targets(results),
        "",
        "Answers set aside, each only where re-running topogen on policies rewritten so that "
        "Kubernetes' reading and the other engine's coincide gives Cyclonus's answer "
        "(bench/race.py):",
        "",
        f"- `{race.NOTIN_RULE}`, Cyclonus departs from Kubernetes: its label selector "
        "(pkg/kube/labelselector.go) returns false for `NotIn` on an object without the key; "
        "Kubernetes selects it (k8s.io/apimachinery labels.Requirement.Matches; the labels "
        'concept page: `tier notin (frontend, backend)` selects "all resources with no labels '
        'with the tier key" too). Rewrite: each NotIn also requires its key.',
        f"- `{race.POLICYTYPES_RULE}`, topogen departs from Kubernetes, as the Cilium agent "
        "it models does: Cilium translates every rule a NetworkPolicy writes whatever "
        "`policyTypes` says (pkg/k8s ParseNetworkPolicy; tests/cilium/test_mutations.py "
        "holds topogen to Cilium's own engine there); Kubernetes, and Cyclonus with it, "
        "apply only the directions policyTypes names. Rewrite: a written section "
        "policyTypes leaves out is removed.",
        "",
        "| workloads | namespaces | policies | ordered pairs compared | answers (pair, port) "
        "| allowed | excluded by rule | disagreements | topogen s | topogen CPU s "
        "| topogen MB | Cyclonus s | Cyclonus CPU s | Cyclonus CPU s, every sender "
        "| Cyclonus MB | Cyclonus / topogen, wall | Cyclonus / topogen, CPU "
        "| topogen no slower |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        *(_row(r, runs) for r in results),
    ]
    notes = []
    for r in results:
        if r["every"] > 1:
            n, senders = r["agreement"].workloads, -(-r["agreement"].workloads // r["every"])
            notes.append(
                f"- {n:,} workloads: Cyclonus asked about {senders} of {n:,} senders (every "
                f"{r['every']}th), all receivers and ports; reading the files and building "
                f"its policies alone (a run asking about no sender) takes "
                f"{r['fixed'].cpu_med:.2f} s of CPU, so every sender would take about "
                f"{projected_cpu(r):,.0f} s of CPU (projected, not measured; "
                "`--race-full` measures it)."
            )
        notes += [f"- {r['spec'].workloads:,} workloads: {d}"
                  for d in r["agreement"].disagreements[:20]]  # fmt: skip
    if notes:
        lines += ["", *notes]
    if startup is not None:
        lines += ["", _startup_line(*startup)]
    same = all(len(r["topogen"].digests) == 1 for r in results)
    lines += ["", f"topogen's output byte-identical across runs: {'yes' if same else '**no**'}."]
    return lines


def splice(text: str, section: str) -> str:
    """RESULTS.md with the race section replaced (or appended)."""
    block = f"{BEGIN}\n{section}{END}\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        return head + block + rest.split(END, 1)[1].lstrip("\n")
    return text.rstrip("\n") + "\n\n" + block if text.strip() else block


def run(
    workloads: Sequence[int], runs: int, work: Path, full: bool = False, fresh_peer: bool = False
) -> tuple[str, list[tuple[str, str, bool | None]]]:
    """The race measured: its RESULTS.md section (Markdown, ending in a newline) and its
    rows for the report's Targets table."""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    began = time.monotonic()
    results = bench(workloads, 1, runs, work, full=full, fresh_peer=fresh_peer)
    help_cmd = [str(race.TOPOGEN), "connectivity", "--help"]
    startup = (_timed(help_cmd, work / "help.txt", runs, "topogen connectivity --help"),
               _timed([str(race.CYCLONUS), "version"], work / "version.txt", runs, "cyclonus"),
               _timed([str(PYTHON), "-c", FLOOR_CODE],
                      work / "floor.txt", runs, "the Python floor"))  # fmt: skip
    out = (work / "version.txt").read_text(encoding="utf-8")
    version = re.search(r'"Version": "([^"]*)"', out)
    lines = [
        *report_lines(results, runs, startup),
        "",
        f"Measured in {(time.monotonic() - began) / 60:.1f} minutes (`cyclonus version`: "
        f"{version.group(1) if version else '?'}, "
        f"load average at start {load}; `bench/run.py --race-only` re-measures this section "
        "alone).",
        "",
    ]
    return "\n".join(lines), target_rows(results)
