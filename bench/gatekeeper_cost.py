"""Gatekeeper's mutation CPU per pod, in process: the group's pods taken through Gatekeeper's
own mutation System (v3.23.1, tools/gatekeeper-mutation-cost, built by `make bench`) as
the mutation webhook's CREATE requests, with no policy, the reference ModifySet, and the
group's generated mutators, the sets taking turns. The webhook around it (decoding the
request, the JSON patch, the response) and the API server are left out: what remains is
what the rendering decides, measured in seconds and without the admission bench's
latency noise. Before it measures, the program's mutated pods are compared with
`gator expand` (Gatekeeper's CLI) on a sample of the pods: the measure is of Gatekeeper
doing what gator does.

    python bench/gatekeeper_cost.py [--fleet large] [--group G] [--pods 2000] [--rounds 6]
        [--extra SET.yaml ...]

`--extra`: more mutator sets (YAML streams) measured in the same rounds, to try a
rendering before changing the renderer. The admission bench runs it beside Gatekeeper's
admission rounds (bench/admission_bench.py) and reports it under Gatekeeper.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests"), str(HERE.parent / "tests" / "live")]

import admission_gatekeeper as agk  # noqa: E402
from admission import TOOLS_BIN  # noqa: E402
from gatekeeper_harness import mutators as gatekeeper_mutators  # noqa: E402
from kyverno_pods import group_pods  # noqa: E402

from engines.engines import gator_expand  # noqa: E402

__all__ = ["available", "measure", "report_lines"]

BINARY = TOOLS_BIN / "gatekeeper-mutation-cost"
GATOR = TOOLS_BIN / "gator"
SAMPLE = 40  # pods compared with gator expand (each distinct pod template at least once)


def available() -> bool:
    return BINARY.exists() and GATOR.exists()


def _stream(path: Path, docs: Sequence[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump_all(list(docs), sort_keys=False), encoding="utf-8")
    return path


def _sample(pods: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Up to SAMPLE pods, the first of each distinct labels and spec first."""
    seen: set[str] = set()
    first: list[dict[str, Any]] = []
    rest: list[dict[str, Any]] = []
    for p in pods:
        key = json.dumps([p["metadata"].get("labels"), p["spec"]], sort_keys=True)
        (rest if key in seen else first).append(p)
        seen.add(key)
    return (first + rest)[:SAMPLE]


def _run(
    pods: Path, rounds: int, sets: Sequence[Path], mutated: Path | None
) -> list[dict[str, Any]]:
    env = {**os.environ, **({"MUTATED": str(mutated)} if mutated else {})}
    done = subprocess.run(
        [str(BINARY), str(pods), str(rounds), *map(str, sets)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"bench: {BINARY.name}: exit {done.returncode}: {done.stderr[-400:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def check_with_gator(
    mutators: Sequence[dict[str, Any]], pods: Sequence[dict[str, Any]], work: Path
) -> int:
    """The program's mutated pods against gator expand's, on a sample; how many compared
    (SystemExit on a difference: the measure would not be of what Gatekeeper does)."""
    sample = _sample(pods)
    path = work / "sample.json"
    path.write_text(json.dumps(sample), encoding="utf-8")
    ours = work / "sample-mutated.json"
    _run(path, 2, [_stream(work / "sample-mutators.yaml", mutators)], ours)
    mine = {p["metadata"]["name"]: p for p in json.loads(ours.read_text(encoding="utf-8"))}
    theirs = gator_expand(GATOR, mutators, sample, work / "gator")
    for p in sample:
        name = p["metadata"]["name"]
        want, got = theirs.get(name), mine[name]
        if (
            want is None
            or want["spec"] != got["spec"]
            or want["metadata"].get("labels") != got["metadata"].get("labels")
        ):
            raise SystemExit(f"bench: {BINARY.name} mutates pod {name} otherwise than gator expand")
    return len(sample)


def measure(
    objects: Sequence[dict[str, Any]],
    config: Path,
    group: str,
    pods: int,
    work: Path,
    rounds: int = 6,
    extra: Sequence[Path] = (),
) -> dict[str, Any]:
    """CPU µs per pod of Gatekeeper's mutation System: none, reference, generated (the
    mutators among `objects`, the group's rendered Gatekeeper objects), then `extra`."""
    work.mkdir(parents=True, exist_ok=True)
    mutators = gatekeeper_mutators(objects)
    listed = group_pods(config, group, pods)
    checked = check_with_gator(mutators, listed, work)
    path = work / "pods.json"
    path.write_text(json.dumps(listed), encoding="utf-8")
    sets = {
        "none": _stream(work / "none.yaml", []),
        "reference": _stream(work / "reference.yaml", [agk.reference_mutator()]),
        "generated": _stream(work / "generated.yaml", mutators),
        **{p.name: p for p in extra},
    }
    got = _run(path, rounds, list(sets.values()), None)
    rows = {name: r for name, r in zip(sets, got, strict=True)}
    return {
        "group": group,
        "pods": len(listed),
        "rounds": rounds,
        "mutators": len(mutators),
        "checked": checked,
        "micros": {k: r["microsPerPod"] for k, r in rows.items()},
        "changed": {k: r["changed"] for k, r in rows.items()},
    }


def report_lines(cost: dict[str, Any]) -> list[str]:
    m = cost["micros"]
    over = {k: v - m["none"] for k, v in m.items() if k != "none"}
    ratio = over["generated"] / over["reference"] if over["reference"] > 0 else float("nan")
    extra = [k for k in m if k not in ("none", "reference", "generated")]
    return [
        "In process (bench/gatekeeper_cost.py: Gatekeeper's mutation System, no webhook "
        f"around it, {cost['pods']} pods, {cost['rounds'] - 1} rounds counted; its mutated "
        f"pods equal `gator expand`'s on {cost['checked']} of them): the generated "
        f"{cost['mutators']} mutators (changing {cost['changed']['generated']} of the pods) "
        f"**{over['generated']:.0f} µs** of CPU per pod over no "
        f"policy ({m['none']:.0f} µs), the reference's ModifySet {over['reference']:.0f} µs "
        f"({ratio:.2f}x)" + "".join(f"; {k} {over[k]:.0f} µs" for k in extra) + ".",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fleet", default="large", choices=("small", "medium", "large"))
    ap.add_argument("--group", help="default: the largest group of the fleet's render")
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--extra", type=Path, nargs="*", default=[])
    args = ap.parse_args(argv)
    if not available():
        raise SystemExit(
            "bench: gatekeeper-mutation-cost or gator is not built (make tools-bench tools)"
        )
    import fleet as fleetgen
    import run as bench_run
    from measure import TOPOGEN

    config = bench_run.fleet_dir(fleetgen.SIZES[args.fleet]) / "snapshot" / "topogen.yaml"
    with tempfile.TemporaryDirectory(prefix="topogen-gkcost-") as tmp:
        work = Path(tmp)
        group = args.group
        if group is None:
            bench_run._render(config, work / "kyverno-render")
            group, _ = bench_run.largest_group(work / "kyverno-render")
        folder = agk.render_gatekeeper(TOPOGEN, config, work / "gatekeeper-render")
        objects = agk.gatekeeper_objects(folder, group)
        cost = measure(objects, config, group, args.pods, work / "cost", args.rounds, args.extra)
    print(json.dumps(cost, indent=2))
    print("\n".join(report_lines(cost)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
