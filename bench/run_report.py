"""The Markdown `make bench` writes (bench/RESULTS.md): the machine, a row per fleet, the
scaling exponents, and each target's verdict; bench/run.py measures what it reports."""

from __future__ import annotations

import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import admission_bench  # noqa: E402
from measure import DEV_PYTHON, PYTHON, interpreter  # noqa: E402

KYVERNO = ROOT / ".tools" / "bin" / "kyverno"

FLOORS: dict[str, str] = {
    # PyYAML's C loader, as most Python tools read YAML
    "libyaml": "import yaml\nfor t in texts: list(yaml.load_all(t, Loader=yaml.CSafeLoader))\n",
    # the fastest loader that gives the same data (YAML 1.1 as Kubernetes reads it):
    # topogen's own construction over libyaml's events (yamlfast.py)
    "same data": (
        "import yaml\nfrom topogen.yamlfast import load_all_fast\n"
        "for t in texts:\n"
        "    if load_all_fast(t) is None: list(yaml.load_all(t, Loader=yaml.CSafeLoader))\n"
    ),
    # the fastest YAML loader on PyPI we found (Rust); YAML 1.2, so it reads `yes`, `on`,
    # `012` or `0o17` otherwise than Kubernetes does: a floor, not a usable loader
    "yaml-rs": "import yaml_rs\nfor t in texts: yaml_rs.loads(t, parse_datetime=False)\n",
}
FLOOR_TARGET = "same data"  # the floor the 2x target is judged against
LARGE_WALL_S = 1.5  # the large snapshot fleet: render and analyze, median wall time
LARGE_PEAK_MB = 300  # ... and the peak RSS of either


def scratch() -> str | None:
    """Where output trees go: tmpfs when there is one. The large fleet renders ~2,000
    files; on this machine's disk creating them took anywhere from 0.05 to 1.8 s between
    runs, which measures the disk, not topogen."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def machine() -> list[str]:
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    kyverno = "not built"
    if KYVERNO.exists():
        out = subprocess.run([str(KYVERNO), "version"], capture_output=True, text=True).stdout
        kyverno = next((ln.split(":", 1)[1].strip() for ln in out.splitlines()
                        if ln.startswith("Version")), "?")  # fmt: skip
    return [
        f"- CPU: {cpu}, {os.cpu_count()} cores (nproc)",
        f"- memory: {mem}",
        f"- topogen timed on {interpreter(PYTHON)}, "
        f"PyYAML {yaml.__version__} with libyaml: {getattr(yaml, '__with_libyaml__', False)}",
        f"- OS: {platform.system()} {platform.release()}",
        f"- Kyverno CLI: {kyverno}",
        f"- output trees written under {scratch() or tempfile.gettempdir()}",
        f"- load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
    ]


def exponent(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of log(time) against log(size)."""
    xs = [math.log(x) for x, _ in points]
    ys = [math.log(max(y, 1e-3)) for _, y in points]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def _row(r: dict[str, Any], start: float) -> str:
    c = r["case"]  # a run.Case
    s = c.spec
    a, rd, fl = r["analyze"], r["render"], r["floors"][FLOOR_TARGET]
    same = "yes" if len(a.digests) == 1 and len(rd.digests) == 1 else "**no**"
    return (
        f"| {c.label} | {s.nodes} | {s.zones} | {s.policies} | {s.jobs} | {c.variant} "
        f"| {r['input_mb']:.1f} | {a.wall_med:.2f} | {a.cpu_med:.2f} | {rd.wall_med:.2f} "
        f"| {rd.cpu_med:.2f} | {max(a.rss_mb, rd.rss_mb):.0f} | {fl.wall_med:.2f} "
        f"| {a.wall_med / fl.wall_med:.2f} | {rd.wall_med / fl.wall_med:.2f} | {same} |"
    )


# n log n over the nodes sweep (1,250 to 5,000) is an exponent of 1.13; linear is 1.0.
# Exponents are fitted to noisy times: 0.1 of slack before a sweep counts as worse.
NLOGN, LINEAR, SLACK = 1.13, 1.0, 0.1


def _is_large_snapshot(r: dict[str, Any]) -> bool:
    return bool(r["case"].label == "large" and r["case"].variant == "snapshot")


def _sweep(results: list[dict[str, Any]], sweep: str, step: str, start: float) -> float | None:
    rows = [r for r in results if r["case"].sweep == sweep or _is_large_snapshot(r)]
    if len(rows) < 2:
        return None
    dim = {"nodes": "nodes", "policies": "policies", "jobs": "jobs"}[sweep]
    return exponent([(getattr(r["case"].spec, dim), r[step].wall_med - start) for r in rows])


def targets(
    results: list[dict[str, Any]],
    kyv: dict[str, Any] | None,
    start: float,
    adm: dict[str, Any] | None = None,
    more: Sequence[tuple[str, str, bool | None]] = (),
) -> list[str]:
    """The issue's targets, each with what was measured and whether it holds; `more`: the
    rows of the measures with sections of their own (start-up, the race), same run."""
    out = ["| target | measured | holds |", "|---|---|---|"]

    def row(target: str, measured: str, ok: bool | None) -> None:
        out.append(
            f"| {target} | {measured} | {'yes' if ok else 'n/a' if ok is None else '**no**'} |"
        )

    large = next((r for r in results if _is_large_snapshot(r)), None)
    if large is None:
        row("5,000 nodes / 2,000 policies / 1,000 jobs from snapshots", "not run (--quick)", None)
    else:
        a, rd = large["analyze"], large["render"]
        for name, m in (("render", rd), ("analyze", a)):
            row(f"large snapshot: `{name}` median under {LARGE_WALL_S} s",
                f"{m.wall_med:.2f} s (every input parsed)", m.wall_med < LARGE_WALL_S)  # fmt: skip
        for name, m in sorted(large.get("kept", {}).items(), reverse=True):
            row(f"large snapshot, inputs unchanged since the last run (parses kept): "
                f"`{name}` median under {LARGE_WALL_S} s",
                f"{m.wall_med:.2f} s", m.wall_med < LARGE_WALL_S)  # fmt: skip
        rss = max(a.rss_mb, rd.rss_mb)
        row(f"large snapshot: peak memory under {LARGE_PEAK_MB} MB", f"{rss:.0f} MB",
            rss < LARGE_PEAK_MB)  # fmt: skip
    sizes = [r for r in results if not r["case"].sweep]
    for name in (FLOOR_TARGET, "yaml-rs"):
        have = [r for r in sizes if name in r["floors"]]
        if not have:
            continue
        worst = max(have, key=lambda r: r["render"].wall_med / r["floors"][name].wall_med)
        w = max(worst["render"].wall_med, worst["analyze"].wall_med)
        ratio = w / worst["floors"][name].wall_med
        row(f"within 2x of the `{name}` parse floor, every fleet",
            f"worst {ratio:.2f}x ({worst['case'].label}, {worst['case'].variant})",
            ratio <= 2)  # fmt: skip
    for sweep, limit, what in (("nodes", NLOGN, "n log n"), ("policies", LINEAR, "linear"),
                               ("jobs", LINEAR, "linear")):  # fmt: skip
        ea, er = _sweep(results, sweep, "analyze", start), _sweep(results, sweep, "render", start)
        if ea is None or er is None:
            row(f"scaling in {sweep} no worse than {what}", "not run (--quick)", None)
            continue
        steepest = max(ea, er)
        row(f"scaling in {sweep} no worse than {what} (exponent {limit:.2f})",
            f"analyze {ea:.2f}, render {er:.2f}", steepest <= limit + SLACK)  # fmt: skip
    if kyv is None:
        row("Kyverno cost at most 1.5x the reference per pod", "not measured", None)
    else:
        row("Kyverno cost at most 1.5x the reference per pod",
            f"{kyv['ratio']:.2f}x whole runs, {kyv['net_ratio']:.2f}x net of the CLI's own cost "
            f"({kyv['fleet']} fleet, {kyv['pods']} pods)", kyv["ratio"] <= 1.5)  # fmt: skip
    for target, measured, ok in admission_bench.target_rows(adm or {}):
        row(target, measured, ok)
    for target, measured, ok in more:
        row(target, measured, ok)
    same = all(
        len(r["analyze"].digests) == 1
        and len(r["render"].digests) == 1
        and all(m.digests == r[step].digests for step, m in r.get("kept", {}).items())
        for r in results
    )
    row("output byte-identical across runs, every size", "yes" if same else "differs", same)
    return out


def interpreter_section(results: list[dict[str, Any]]) -> list[str]:
    """The large snapshot fleet on the bench's interpreter and on the development venv's,
    in the same rounds ([] when they are one: bench/run.py measures it only then)."""
    large = next((r for r in results if _is_large_snapshot(r)), None)
    if large is None or not large.get("dev"):
        return []
    dev = large["dev"]
    return [
        "## Interpreter",
        "",
        "The large snapshot fleet (every input parsed) in the same rounds on the interpreter "
        "the bench times topogen on and on the development venv's (`make test`, "
        "`make demo`). `make bench` makes its own venv (.venv-bench) from BENCH_PYTHON "
        "(Makefile): a CPython built with profile-guided and link-time optimization, as "
        "the Argo CD plugin image's is (python:3.11-slim, built with `--enable-optimizations "
        "--with-lto`); the distribution's python3.11 where it can make a venv (Debian builds "
        "it so). A CPython that pyenv builds without those options runs the same code slower.",
        "",
        "| interpreter | analyze s | analyze CPU s | render s | render CPU s |",
        "|---|---:|---:|---:|---:|",
        f"| {interpreter(PYTHON)}: the bench's | {large['analyze'].wall_med:.2f} "
        f"| {large['analyze'].cpu_med:.2f} | {large['render'].wall_med:.2f} "
        f"| {large['render'].cpu_med:.2f} |",
        f"| {interpreter(DEV_PYTHON)}: the development venv's "
        f"| {dev['analyze'].wall_med:.2f} | {dev['analyze'].cpu_med:.2f} "
        f"| {dev['render'].wall_med:.2f} | {dev['render'].cpu_med:.2f} |",
        "",
    ]


def report(
    results: list[dict[str, Any]],
    start: float,
    kyv: dict[str, Any] | None,
    runs: int,
    env: list[str],
    seconds: float,
    adm: dict[str, Any] | None = None,
    more: Sequence[tuple[str, str, bool | None]] = (),
) -> str:
    head = (
        "| fleet | nodes | zones | policies | jobs | input | input MB | analyze s "
        "| analyze CPU s | render s | render CPU s | peak RSS MB | parse floor s "
        "| analyze / floor | render / floor | identical runs |\n"
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n"
    )
    sizes = [r for r in results if not r["case"].sweep]
    names = [n for n in FLOORS if all(n in r["floors"] for r in sizes)]
    floor_head = (
        "| fleet | input | input MB | "
        + " | ".join(f"{n} s" for n in names)
        + " | "
        + " | ".join(f"analyze / {n} | render / {n}" for n in names)
        + " |\n|---|---|"
        + "---:|" * (1 + 3 * len(names))
        + "\n"
    )
    floor_rows = []
    for r in sizes:
        c, fl = r["case"], r["floors"]
        cells = [f"{fl[n].wall_med:.2f}" for n in names]
        for n in names:
            cells += [
                f"{r['analyze'].wall_med / fl[n].wall_med:.2f}",
                f"{r['render'].wall_med / fl[n].wall_med:.2f}",
            ]
        floor_rows.append(
            f"| {c.label} | {c.variant} | {r['input_mb']:.1f} | {' | '.join(cells)} |"
        )
    lines = [
        "# topogen benchmark",
        "",
        "Generated by `make bench` (bench/run.py); do not edit. Times are the median of "
        f"{runs} whole-process runs (wall clock, and user+system CPU of the process and its "
        "children); peak RSS is the largest of any one process in any run. The parse floor "
        f"(`{FLOOR_TARGET}`) is a process that only parses the same input files with the "
        "fastest loader that gives the data topogen reads (see Parse floors). "
        "Every run parses every input (`TOPOGEN_PARSE_CACHE=0`: no parse kept by a run "
        "before), except the large snapshot fleet's rows that say the parses are kept: "
        "measured in the same rounds after one run that kept them, as when its inputs did "
        "not change since the last run. "
        "Every fleet is generated by bench/fleet.py (seed 1).",
        "",
        "## Machine",
        "",
        *env,
        f"- `topogen render --help` (interpreter and imports): {start:.2f} s",
        f"- benchmark took {seconds / 60:.1f} min",
        "",
        "## Targets",
        "",
        *targets(results, kyv, start, adm, more),
        "",
        "## Fleets",
        "",
        head + "\n".join(_row(r, start) for r in sizes),
        "",
        *interpreter_section(results),
        "## Parse floors",
        "",
        "Processes that only read and parse the input files (interpreter start included): "
        "`libyaml` is PyYAML's C loader (`yaml.CSafeLoader`), as most Python tools read "
        "YAML; `same data` is topogen's own construction over libyaml's parse events "
        "(generator/topogen/yamlfast.py), the fastest loader we have that gives "
        "the same data as PyYAML's safe loader, that is YAML 1.1 as Kubernetes reads it; "
        "`yaml-rs` is the fastest YAML loader on PyPI we measured (Rust, installed by "
        "`make bench`), a YAML 1.2 reader: it reads `yes`, `on`, `012` or `0o17` "
        "otherwise than Kubernetes does, so it is a floor, not a loader topogen could use.",
        "",
        floor_head + "\n".join(floor_rows),
        "",
        "## Scaling",
        "",
        "Each sweep varies one dimension around the large fleet (snapshot input) and holds "
        "the others. The exponent is the least-squares slope of log(time) over log(size), "
        "on the median wall time less the interpreter start-up; n log n over the nodes "
        "sweep's range is an exponent of about 1.1, linear is 1.0. Holding the others "
        "changes the workload's mix along a sweep: the nodes sweep keeps the 1,000 jobs on "
        "fewer GPUs, so more groups are refused and more jobs packed with the nodes "
        "autoscalers can add (the most costly packing), and its smaller fleets can take "
        "longer than the large one; its exponent bounds the cost of more nodes, not of a "
        "larger fleet of the same shape.",
        "",
        "| sweep | sizes | analyze s | render s | analyze exponent | render exponent |",
        "|---|---|---|---|---:|---:|",
    ]
    for sweep, dim in (("nodes", "nodes"), ("policies", "policies"), ("jobs", "jobs")):
        rows = sorted(
            (r for r in results if r["case"].sweep == sweep or _is_large_snapshot(r)),
            key=lambda r: getattr(r["case"].spec, dim),
        )
        ea, er = _sweep(results, sweep, "analyze", start), _sweep(results, sweep, "render", start)
        if ea is None or er is None:
            continue
        sizes_ = [getattr(r["case"].spec, dim) for r in rows]
        a_times = ", ".join(f"{r['analyze'].wall_med:.2f}" for r in rows)
        r_times = ", ".join(f"{r['render'].wall_med:.2f}" for r in rows)
        lines.append(
            f"| {sweep} | {', '.join(map(str, sizes_))} | {a_times} | {r_times} "
            f"| {ea:.2f} | {er:.2f} |"
        )
    lines += ["", "## Kyverno", ""]
    if kyv is None:
        lines.append("Not measured (`--skip-kyverno`, or the Kyverno CLI is not built).")
    else:
        lines += [
            f"The policies of group `{kyv['group']}` of the {kyv['fleet']} fleet (its largest: "
            f"{', '.join(kyv['policies'])}, {kyv['policy_bytes'] / 1024:.0f} KiB) against "
            f"{len(kyv['policies'])} copies of a minimal MutatingPolicy that adds one "
            f"toleration, each set through `kyverno apply` over the same {kyv['pods']} pods "
            f"of the group (coordinators and workers, {kyv['shards']} runs of 500, two at a "
            "time). The CLI compiles every policy for every resource, so this is compile and "
            "evaluation cost per pod.",
            "",
            "| policies | CPU s | per pod ms | net of the CLI's own cost, per pod ms "
            "| result of the first shard |",
            "|---|---:|---:|---:|---|",
            *(
                f"| {label} | {cpu:.1f} | {cpu / kyv['pods'] * 1000:.1f} "
                f"| {(cpu - kyv['floor_cpu']) / kyv['pods'] * 1000:.1f} | {summary} |"
                for label, cpu, summary in (
                    (
                        f"generated ({len(kyv['policies'])})",
                        kyv["generated_cpu"],
                        kyv["generated_summary"],
                    ),
                    (
                        f"reference ({len(kyv['policies'])})",
                        kyv["reference_cpu"],
                        kyv["reference_summary"],
                    ),
                    ("none (a policy that matches no pod)", kyv["floor_cpu"], ""),
                )
            ),
            "",
            f"Ratio, generated / reference per pod: **{kyv['ratio']:.2f}** for the whole "
            f"`kyverno apply` runs, **{kyv['net_ratio']:.2f}** net of the CLI's own cost "
            "(start-up and reading the pods: the runs with the policy that matches no pod). "
            "Run together, the CLI validates the pods as the mutating policies left them, "
            "as admission does: the generated set's validations pass.",
        ]
    lines += ["", admission_bench.section(adm or {}).rstrip("\n")]
    return "\n".join(lines) + "\n"
