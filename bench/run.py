"""`make bench`: topogen on synthetic fleets, against the YAML parsing floor and Kyverno.

    .venv/bin/python bench/run.py [--runs 5] [--kyverno-pods 10000] [--admission-pods 2000]
                                  [--quick] [--out bench/RESULTS.md]

For every fleet (bench/fleet.py, cached under bench/.fleets/): the median of --runs
whole-process runs of `topogen analyze -o json` and `topogen render --partial --out DIR`
(wall and CPU time, peak RSS of the process; --partial: the large fleet has groups no
domain can hold, and without it a render writes nothing, leaving no tree to compare),
the parsing floor (a process that only parses the same input files with
yaml.CSafeLoader) and the ratio to it, and whether every run
wrote byte-identical output. Three sweeps around the large fleet (nodes, policies,
training jobs) give the scaling exponents. Then the Kyverno CLI evaluates the policies
of the large fleet's largest group over --kyverno-pods pods of that group, against the
same number of a minimal reference MutatingPolicy that adds one toleration. And the same
group's policies on the admission path (bench/admission_bench.py): pod creation latency
through kube-apiserver with Kyverno's admission controller, and with Gatekeeper's
controller-manager, each against its one-toleration reference and no policy
(`--admission-only`: that alone, its section and Targets rows of RESULTS.md replaced).
Start-up (bench/startup.py, `--startup-only`): each command paired with the floor of
topogen's stack round by round, and with `--startup-baseline REV` a git revision's code
in the same rounds. `--compare REV` (bench/compare.py): the large fleet with this code
and REV's in the same rounds, output compared byte for byte.

Results go to bench/RESULTS.md (Markdown) with the machine's description.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import admission  # noqa: E402
import admission_bench  # noqa: E402
import argocd_bench  # noqa: E402
import compare  # noqa: E402
import fleet as fleetgen  # noqa: E402
import racebench  # noqa: E402
import schedbench  # noqa: E402
import startup as startup_bench  # noqa: E402
from kyverno_pods import group_pods, reference_policy  # noqa: E402
from measure import (  # noqa: E402
    DEV_PYTHON,
    DEV_TOPOGEN,
    PYTHON,
    TOPOGEN,
    Measured,
    interpreter,
    measure,
    tree_digest,
)
from run_report import FLOOR_TARGET, FLOORS, KYVERNO, machine, report, scratch  # noqa: E402

FLEETS = HERE / ".fleets"

# only parse the files: the floor any YAML-reading tool pays, with three loaders
_PARSE_HEAD = "import sys\ntexts = [open(f, encoding='utf-8').read() for f in sys.argv[1:]]\n"


def floor_available(name: str) -> bool:
    code = {"yaml-rs": "import yaml_rs", "libyaml": "import yaml; yaml.CSafeLoader"}.get(name, "")
    return subprocess.run([str(PYTHON), "-c", code], capture_output=True).returncode == 0


@dataclass(frozen=True)
class Case:
    label: str  # table row name
    spec: fleetgen.FleetSpec
    variant: str  # snapshot | kubectl
    sweep: str = ""  # nodes | policies | jobs (scaling rows)


_measure = measure


def fleet_dir(spec: fleetgen.FleetSpec) -> Path:
    """Generate the fleet once per generator version (bench/.fleets/<name>-<digest>)."""
    name = f"{spec.nodes}n-{spec.zones}z-{spec.policies}p-{spec.jobs}j-s{spec.seed}"
    out = FLEETS / f"{name}-{fleetgen.generator_digest()}"
    if not (out / "MANIFEST").exists():
        FLEETS.mkdir(exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".gen-", dir=FLEETS))
        fleetgen.write_fleet(spec, tmp)
        shutil.rmtree(out, ignore_errors=True)
        tmp.rename(out)
    return out


def input_files(config: Path) -> list[Path]:
    """Every YAML file the config reads (the parsing floor's input)."""
    cfg = yaml.safe_load(config.read_text(encoding="utf-8"))
    base = config.parent
    paths = [config]
    names = list(cfg.get("workloads") or [])
    for c in cfg["clusters"]:
        names += c.get("nodes", []) + c.get("networkPolicies", []) + c.get("namespaces", [])
    for n in names:
        p = base / n
        paths += sorted(p.rglob("*.yaml")) if p.is_dir() else [p]
    return paths


# every input parsed, as on a first run: the parses topogen keeps between runs
# (topogen/parsecache.py) off, so the fleets' rows and the parse floors compare like for like
PARSED = ("env", "TOPOGEN_PARSE_CACHE=0")


def _analyze_run(argv: Sequence[str | Path], m: Measured, out: Path) -> None:
    r = _measure([*argv, "-o", "json"], out)
    m.add(r)
    m.digests.add(hashlib.sha256(out.read_bytes()).hexdigest())


def _render_run(argv: Sequence[str | Path], m: Measured, work: Path, label: str) -> None:
    tree = work / "render"
    shutil.rmtree(tree, ignore_errors=True)
    r = _measure([*argv, "--out", tree, "--partial"], work / "render.log")
    m.add(r)
    if not any(p.is_file() for p in tree.rglob("*")):  # an empty tree compares equal
        raise SystemExit(f"{label}: render wrote no files (exit {r['rc']})")
    m.digests.add(tree_digest(tree))


def run_case(case: Case, runs: int, work: Path) -> dict[str, Any]:
    """Each round: analyze and render with every input parsed; the large snapshot fleet
    also with the parses kept by a run before (its inputs unchanged: an Argo CD refresh
    of a new commit that left them alone), in the same rounds."""
    config = fleet_dir(case.spec) / case.variant / "topogen.yaml"
    results: dict[str, Any] = {"case": case}
    analyze, render = Measured(), Measured()
    large = case.label == "large" and case.variant == "snapshot"
    kept = {"analyze": Measured(), "render": Measured()} if large else {}
    # the large fleet on the development venv's interpreter too, when it is another
    dev = {"analyze": Measured(), "render": Measured()} if large and _other_dev_venv() else {}
    floors = {name: Measured() for name in FLOORS if floor_available(name)}
    if kept:  # the run before, which keeps the parses
        _measure([TOPOGEN, "analyze", "-c", config, "-o", "json"], work / "analyze.json")
    for _ in range(runs):
        _analyze_run([*PARSED, TOPOGEN, "analyze", "-c", config], analyze, work / "analyze.json")
        _render_run([*PARSED, TOPOGEN, "render", "-c", config], render, work, case.label)
        if kept:
            _analyze_run([TOPOGEN, "analyze", "-c", config], kept["analyze"], work / "a.json")
            _render_run([TOPOGEN, "render", "-c", config], kept["render"], work, case.label)
        if dev:
            _analyze_run([*PARSED, DEV_TOPOGEN, "analyze", "-c", config], dev["analyze"],
                         work / "d.json")  # fmt: skip
            _render_run([*PARSED, DEV_TOPOGEN, "render", "-c", config], dev["render"], work,
                        case.label)  # fmt: skip
        for name, floor in floors.items():
            code = _PARSE_HEAD + FLOORS[name]
            r = _measure([PYTHON, "-c", code, *input_files(config)], work / "parse.log")
            if r["rc"] != 0:
                raise SystemExit(f"{case.label}: the {name} parse floor failed: {r['stderr']}")
            floor.wall.append(r["wall"])
            floor.cpu.append(r["cpu"])
            floor.rss_kb.append(r["rss_kb"])
    results.update(analyze=analyze, render=render, floors=floors, kept=kept, dev=dev)
    results["input_mb"] = sum(p.stat().st_size for p in input_files(config)) / 1e6
    rcs = analyze.rcs | render.rcs | {rc for m in (*kept.values(), *dev.values()) for rc in m.rcs}
    if rcs - {0, 1}:
        raise SystemExit(f"{case.label}: topogen failed (exit {rcs})")
    return results


def _other_dev_venv() -> bool:
    """Whether the development venv exists and runs another interpreter than the bench's."""
    return DEV_PYTHON.exists() and interpreter(DEV_PYTHON) != interpreter(PYTHON)


def startup(runs: int, work: Path) -> float:
    """Median wall time of `topogen render --help` (interpreter and the imports of render)."""
    return statistics.median(
        float(_measure([TOPOGEN, "render", "--help"], work / "v.txt")["wall"]) for _ in range(runs)
    )


# --- Kyverno CLI ---------------------------------------------------------------------------


def _kyverno(policies: Sequence[Path], pods: Path) -> tuple[float, float, str]:
    """(wall, CPU seconds, summary line) of one `kyverno apply` over one shard."""
    r = _measure(
        [KYVERNO, "apply", *policies, "-r", pods, "--remove-color"], pods.with_suffix(".out")
    )
    text = pods.with_suffix(".out").read_text(encoding="utf-8", errors="replace")
    summary = next((ln for ln in text.splitlines()[::-1] if ln.startswith("pass:")), "?")
    if "error: 0" not in summary:
        raise SystemExit(f"kyverno apply reported errors: {summary}\n{r['stderr']}")
    return r["wall"], r["cpu"], summary


def largest_group(render_dir: Path) -> tuple[str, list[Path]]:
    """The group whose Kyverno policies are the largest, and their files."""
    policy_dir = next((render_dir / "policies").glob("*/kyverno"))
    groups: dict[str, list[Path]] = {}
    for f in sorted(policy_dir.glob("*.yaml")):
        if f.name == "kustomization.yaml":
            continue
        doc = yaml.safe_load(f.read_text(encoding="utf-8"))
        groups.setdefault(doc["metadata"]["labels"]["topogen.io/group"], []).append(f)
    group = max(groups, key=lambda g: sum(p.stat().st_size for p in groups[g]))
    return group, groups[group]


def run_kyverno(render_dir: Path, config: Path, pods: int, work: Path) -> dict[str, Any]:
    """Generated policies of the largest group against as many reference policies."""
    group, generated = largest_group(render_dir)
    ref = work / "reference.yaml"
    ref.write_text(
        yaml.safe_dump_all(
            [reference_policy(f"reference-{i}") for i in range(len(generated))], sort_keys=True
        ),
        encoding="utf-8",
    )
    shard = 500
    all_pods = group_pods(config, group, pods)
    shards = []
    for i in range(0, len(all_pods), shard):
        p = work / f"pods-{i // shard:03d}.yaml"
        p.write_text(yaml.safe_dump_all(all_pods[i : i + shard], sort_keys=True), encoding="utf-8")
        shards.append(p)

    # the CLI's own cost (start-up, reading the pods): a policy that matches no pod
    floor = work / "floor.yaml"
    none = reference_policy("matches-nothing")
    none["spec"]["matchConstraints"]["resourceRules"][0]["resources"] = ["configmaps"]
    floor.write_text(yaml.safe_dump(none, sort_keys=True), encoding="utf-8")

    def runs(p: Path) -> tuple[tuple[float, float, str], ...]:
        out = []
        for name, pols in (("gen", generated), ("ref", [ref]), ("floor", [floor])):
            q = p.with_name(f"{p.stem}-{name}.yaml")
            shutil.copy(p, q)
            out.append(_kyverno(pols, q))
        return tuple(out)

    t = time.perf_counter()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        results = list(ex.map(runs, shards))
    wall = time.perf_counter() - t
    gen_cpu = sum(g[1] for g, _, _ in results)
    ref_cpu = sum(r[1] for _, r, _ in results)
    floor_cpu = sum(f[1] for _, _, f in results)
    return {
        "group": group,
        "policies": [p.name for p in generated],
        "policy_bytes": sum(p.stat().st_size for p in generated),
        "pods": len(all_pods),
        "shards": len(shards),
        "wall": wall,
        "generated_cpu": gen_cpu,
        "reference_cpu": ref_cpu,
        "floor_cpu": floor_cpu,
        "ratio": gen_cpu / ref_cpu,
        "net_ratio": (gen_cpu - floor_cpu) / (ref_cpu - floor_cpu),
        "generated_summary": results[0][0][2],
        "reference_summary": results[0][1][2],
    }


def cases(quick: bool) -> list[Case]:
    sizes = fleetgen.SIZES
    out = []
    for name in ("small", "medium", "large"):
        if quick and name == "large":
            continue
        for variant in ("snapshot", "kubectl"):
            out.append(Case(name, sizes[name], variant))
    if quick:
        return out
    big = sizes["large"]
    for n in (1250, 2500):
        out.append(Case(f"nodes {n}", fleetgen.FleetSpec("sweep", n, big.zones, big.policies,
                                                          big.jobs), "snapshot", "nodes"))  # fmt: skip
    for p in (500, 1000):
        out.append(Case(f"policies {p}", fleetgen.FleetSpec("sweep", big.nodes, big.zones, p,
                                                            big.jobs), "snapshot", "policies"))  # fmt: skip
    for j in (250, 500):
        out.append(Case(f"jobs {j}", fleetgen.FleetSpec("sweep", big.nodes, big.zones,
                                                        big.policies, j), "snapshot", "jobs"))  # fmt: skip
    return out


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--kyverno-pods", type=int, default=10_000)
    ap.add_argument("--skip-kyverno", action="store_true")
    ap.add_argument("--admission-pods", type=int, default=2_000)
    ap.add_argument("--skip-admission", action="store_true")
    ap.add_argument(
        "--admission-pace-ms",
        type=float,
        default=admission.PACE * 1000,
        help="ms from one pod's creation to the next's on the admission path (default 0: back to back)",
    )
    ap.add_argument("--quick", action="store_true", help="small and medium fleets only")
    ap.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    ap.add_argument("--skip-fleet", action="store_true", help="no scheduler fleet measure")
    ap.add_argument(
        "--fleet-only", action="store_true", help="only the fleet measure (its section replaced)"
    )
    ap.add_argument(
        "--admission-only",
        action="store_true",
        help="only the admission measure (its section and Targets rows replaced)",
    )
    ap.add_argument(
        "--gatekeeper-only",
        action="store_true",
        help="only Gatekeeper's part of the admission measure (its subsection and Targets "
        "rows replaced, Kyverno's kept)",
    )
    ap.add_argument(
        "--race-workloads",
        default="",
        help="race sizes, e.g. 100,1000 (default 100,1000,5000; --quick: 100)",
    )
    ap.add_argument("--skip-race", action="store_true", help="no race with Cyclonus")
    ap.add_argument("--startup-runs", type=int, default=21, help="rounds of the start-up measure")
    ap.add_argument(
        "--startup-baseline",
        default="",
        metavar="REV",
        help="also measure git revision REV's code in the start-up rounds",
    )
    ap.add_argument("--compare", default="", metavar="REV",
                    help="only: the large fleet with this code and with git revision REV's, "
                    "in the same rounds (its section replaced)")  # fmt: skip
    ap.add_argument("--startup-only", action="store_true",
                    help="only the start-up measure (its section replaced)")  # fmt: skip
    ap.add_argument("--skip-argocd", action="store_true", help="no timing through Argo CD")
    ap.add_argument("--race-only", action="store_true", help="only the race (its section replaced)")
    ap.add_argument("--race-full", action="store_true",
                    help="Cyclonus asked about every sender at every size (hours at 5,000)")  # fmt: skip
    ap.add_argument("--fresh-peer", action="store_true",
                    help="re-measure Cyclonus runs kept from an earlier make bench")  # fmt: skip
    args = ap.parse_args(list(argv) if argv is not None else None)
    if args.fleet_only:
        return _fleet(args.out, args.quick)
    if args.admission_only or args.gatekeeper_only:
        return _admission_only(args)
    if args.race_only:
        return _race(args)
    if args.startup_only:
        return _startup(args)
    if args.compare:
        return _compare(args)
    began = time.perf_counter()
    # byte-compile topogen as `pip install` does for an installed package (an editable
    # install compiles on first import, unless PYTHONDONTWRITEBYTECODE forbids it)
    subprocess.run([str(PYTHON), "-m", "compileall", "-q", str(ROOT / "generator")], check=True)
    env = machine()
    results = []
    with tempfile.TemporaryDirectory(prefix="topogen-bench-", dir=scratch()) as tmp:
        work = Path(tmp)
        start = startup(args.runs, work)
        for case in cases(args.quick):
            print(f"bench: {case.label} ({case.variant}) ...", file=sys.stderr, flush=True)
            results.append(run_case(case, args.runs, work))
            r = results[-1]
            print(
                f"bench:   analyze {r['analyze'].wall_med:.2f}s render {r['render'].wall_med:.2f}s "
                f"floor {r['floors'][FLOOR_TARGET].wall_med:.2f}s",
                file=sys.stderr,
                flush=True,
            )
        kyv, adm = None, None
        fleet_name = "small" if args.quick else "large"
        config = fleet_dir(fleetgen.SIZES[fleet_name]) / "snapshot" / "topogen.yaml"
        tree = work / "kyverno-render"
        if not (args.skip_kyverno and args.skip_admission):
            _render(config, tree)
        if not args.skip_kyverno and KYVERNO.exists():
            print("bench: kyverno ...", file=sys.stderr, flush=True)
            kwork = work / "kyverno"
            kwork.mkdir()
            kyv = run_kyverno(tree, config, args.kyverno_pods, kwork)
            kyv["fleet"] = fleet_name
        if not args.skip_admission:
            adm = _admission(tree, config, fleet_name, args, work / "admission")
    # start-up and the race in the same run: their sections written now, their rows in the
    # report's Targets table
    more = _startup_rows(args)
    if not args.skip_race:
        more += _race_rows(args)
    seconds = time.perf_counter() - began
    text = report(results, start, kyv, args.runs, env, seconds, adm, more)
    old = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
    args.out.write_text(keep_sections(text, old), encoding="utf-8")
    print(f"bench: wrote {args.out}", file=sys.stderr)
    if not args.skip_argocd:
        argocd_bench.main(["--runs", str(args.runs), "--out", str(args.out)]
                          + ["--quick"] * args.quick)  # fmt: skip
    if args.skip_fleet:
        return 0
    return _fleet(args.out, args.quick)


def _render(config: Path, tree: Path) -> None:
    """The fleet's policies for the Kyverno and admission measures: --partial, since the
    fleet has groups no domain can hold (refused: render then writes nothing without it)."""
    subprocess.run(
        [str(TOPOGEN), "render", "-c", str(config), "--out", str(tree), "--partial"],
        capture_output=True,
        check=False,
    )


def _admission(
    tree: Path, config: Path, fleet_name: str, args: argparse.Namespace, work: Path
) -> dict[str, Any]:
    """Both admission controllers on the largest group's policies (bench/admission_bench.py)."""
    group, files = largest_group(tree)
    pods = min(args.admission_pods, 300) if args.quick else args.admission_pods
    pace = args.admission_pace_ms / 1000
    engines = ("gatekeeper",) if args.gatekeeper_only else ("kyverno", "gatekeeper")
    return admission_bench.measure(
        TOPOGEN, config, group, files, fleet_name, pods, work, pace, engines
    )


def _admission_only(args: argparse.Namespace) -> int:
    fleet_name = "small" if args.quick else "large"
    config = fleet_dir(fleetgen.SIZES[fleet_name]) / "snapshot" / "topogen.yaml"
    with tempfile.TemporaryDirectory(prefix="topogen-bench-", dir=scratch()) as tmp:
        work = Path(tmp)
        _render(config, work / "kyverno-render")
        adm = _admission(work / "kyverno-render", config, fleet_name, args, work / "admission")
    old = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
    if args.gatekeeper_only:
        if adm["gatekeeper"] is None:
            raise SystemExit("bench: Gatekeeper's controller-manager is not built (make tools)")
        new = admission_bench.splice_gatekeeper(old, adm["gatekeeper"])
    else:
        new = admission_bench.splice(old, adm)
    args.out.write_text(new, encoding="utf-8")
    print(f"bench: wrote {args.out}", file=sys.stderr)
    return 0


def keep_sections(text: str, old: str) -> str:
    """The new report with the fleet and race sections of the old one, until they are
    measured again (each by its own step, which replaces its section)."""
    for begin, end, splice in ((schedbench.BEGIN, schedbench.END, schedbench.splice),
                               (startup_bench.BEGIN, startup_bench.END, startup_bench.splice),
                               (compare.BEGIN, compare.END, compare.splice),
                               (racebench.BEGIN, racebench.END, racebench.splice),
                               (argocd_bench.BEGIN, argocd_bench.END, argocd_bench.splice)):  # fmt: skip
        if begin in old and end in old:
            text = splice(text, old.split(begin, 1)[1].split(end, 1)[0].lstrip("\n"))
    return text


def _race(args: argparse.Namespace) -> int:
    """The race with Cyclonus (bench/racebench.py): its section written or replaced."""
    _race_rows(args)  # without Cyclonus: says so, measures nothing
    return 2 if args.race_only and not racebench.race.CYCLONUS.exists() else 0


def _race_rows(args: argparse.Namespace) -> list[tuple[str, str, bool | None]]:
    """The race measured, its section written; its Targets rows (none without Cyclonus)."""
    if not racebench.race.CYCLONUS.exists():
        print(f"bench: no race: {racebench.race.CYCLONUS} is not built (make tools)",
              file=sys.stderr)  # fmt: skip
        return []
    subprocess.run([str(PYTHON), "-m", "compileall", "-q", str(ROOT / "generator")], check=True)
    sizes = args.race_workloads or ("100" if args.quick else "100,1000,5000")
    with tempfile.TemporaryDirectory(prefix="topogen-race-", dir=scratch()) as tmp:
        section, rows = racebench.run([int(n) for n in sizes.split(",")], args.runs, Path(tmp),
                                      full=args.race_full, fresh_peer=args.fresh_peer)  # fmt: skip
    old = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
    args.out.write_text(racebench.splice(old, section), encoding="utf-8")
    print(f"bench: wrote {args.out}", file=sys.stderr)
    return rows


def _startup(args: argparse.Namespace) -> int:
    """topogen's start-up over its stack's floor (bench/startup.py): its section replaced."""
    _startup_rows(args)
    return 0


def _startup_rows(args: argparse.Namespace) -> list[tuple[str, str, bool | None]]:
    """The start-up measured, its section written; its Targets rows."""
    print("bench: start-up ...", file=sys.stderr, flush=True)
    subprocess.run([str(PYTHON), "-m", "compileall", "-q", str(ROOT / "generator")], check=True)
    with tempfile.TemporaryDirectory(prefix="topogen-startup-", dir=scratch()) as tmp:
        section, rows = startup_bench.run(args.startup_runs, Path(tmp), args.startup_baseline)
    old = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
    text = update_targets(startup_bench.splice(old, section), rows)
    args.out.write_text(text, encoding="utf-8")
    print(f"bench: wrote {args.out}", file=sys.stderr)
    return list(rows)


def update_targets(text: str, rows: Sequence[tuple[str, str, bool | None]]) -> str:
    """The top Targets table with these targets' rows measured again (a row found by its
    target, replaced in place); a target not in it yet is left to a full run."""
    lines = text.split("\n")
    if "## Targets" not in lines:
        return text
    start = lines.index("## Targets")
    end = next(
        (i for i in range(start + 3, len(lines)) if not lines[i].startswith("|")), len(lines)
    )
    for target, measured, ok in rows:
        for i in range(start + 4, end):
            if lines[i].startswith(f"| {target} |"):
                holds = "yes" if ok else "n/a" if ok is None else "**no**"
                lines[i] = f"| {target} | {measured} | {holds} |"
    return "\n".join(lines)


def _compare(args: argparse.Namespace) -> int:
    """The large fleet, this code against git revision args.compare (bench/compare.py)."""
    print(f"bench: the large fleet against {args.compare} ...", file=sys.stderr, flush=True)
    config = fleet_dir(fleetgen.SIZES["large"]) / "snapshot" / "topogen.yaml"
    subprocess.run([str(PYTHON), "-m", "compileall", "-q", str(ROOT / "generator")], check=True)
    with tempfile.TemporaryDirectory(prefix="topogen-compare-", dir=scratch()) as tmp:
        section = compare.run(config, args.compare, args.runs, Path(tmp))
    old = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
    args.out.write_text(compare.splice(old, section), encoding="utf-8")
    print(f"bench: wrote {args.out}", file=sys.stderr)
    return 0


def _fleet(out: Path, quick: bool) -> int:
    """The fleet measure under the real kube-scheduler (bench/schedbench.py)."""
    print("bench: fleet under the real kube-scheduler ...", file=sys.stderr, flush=True)
    section = schedbench.run(quick)
    old = out.read_text(encoding="utf-8") if out.exists() else ""
    out.write_text(schedbench.splice(old, section), encoding="utf-8")
    print(f"bench: wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
