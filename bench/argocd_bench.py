"""The plugin through Argo CD v3.6.2's own code, timed: each fleet's render as the
repo-server asks for it (GenerateManifests on a plugin Application: discovery's tarball,
the generate tarball, topogen-cmp in the CMP server as the sidecar runs it), against Argo
CD's default request deadline of 60 s and the plugin's budget of 45 s.

    .venv/bin/python bench/argocd_bench.py [--runs 5] [--quick] [--out bench/RESULTS.md]

`make bench` runs it after the other measures (bench/run.py); its section of RESULTS.md
is replaced. Needs tools/argocd-cmp (`make tools`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT / "tests")]

import fleet as fleetgen  # noqa: E402
import yaml  # noqa: E402

from gitops.argocd_kit import DEADLINE, generate, plugin_application, sidecar  # noqa: E402

__all__ = ["BEGIN", "END", "MARGIN", "run", "splice"]

BEGIN, END = "<!-- argocd: begin -->", "<!-- argocd: end -->"
ARGOCD_CMP = ROOT / ".tools" / "bin" / "argocd-cmp"
BUDGET = 45.0  # TOPOGEN_CMP_TIMEOUT in argocd/repo-server-sidecar.yaml
MARGIN = 2.0  # the target: the medium fleet's slowest run at most half the deadline


def _mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def run(
    sizes: Sequence[str], runs: int, fleet_dir: Callable[[fleetgen.FleetSpec], Path]
) -> tuple[str, dict[str, list[float]]]:
    """The section (Markdown) and each fleet's times; `fleet_dir` generates a fleet once
    (bench/run.py's): its `kubectl get -o yaml` input, the larger of its two, is used."""
    times: dict[str, list[float]] = {}
    rows = []
    load = [os.getloadavg()[0]]
    with sidecar() as side:
        for name in sizes:
            repo = fleet_dir(fleetgen.SIZES[name]) / "kubectl"
            (cluster,) = yaml.safe_load((repo / "topogen.yaml").read_text())["clusters"]
            app = plugin_application(env={"TOPOGEN_CLUSTER": cluster["name"]})
            seconds = []
            for _ in range(runs):
                rendered = generate(side, app, repo)
                if rendered.error:
                    raise SystemExit(f"bench: {name} fleet through Argo CD: {rendered.error}")
                seconds.append(rendered.seconds)
                print(f"bench: argocd {name}: {seconds[-1]:.2f} s", file=sys.stderr, flush=True)
            times[name] = seconds
            rows.append(
                f"| {name} | {_mb(repo):.1f} | {len(rendered.objects)} | {runs} "
                f"| {statistics.median(seconds):.2f} | {max(seconds):.2f} "
                f"| {DEADLINE / max(seconds):.1f}x | {BUDGET / max(seconds):.1f}x |"
            )
    load.append(os.getloadavg()[0])
    medium = times.get("medium")
    verdict = (
        "not run"
        if medium is None
        else f"{max(medium):.2f} s slowest of {len(medium)}: "
        + ("holds" if DEADLINE / max(medium) >= MARGIN else "**does not hold**")
    )
    section = "\n".join(
        [
            "## Argo CD: the plugin inside the request deadline",
            "",
            "GenerateManifests for a plugin Application, through Argo CD v3.6.2's own "
            "repo-server and CMP server code (tools/argocd-cmp; the sidecar as "
            "tests/gitops runs it: uid 999, read-only root, no network), `kubectl get -o "
            "yaml` input: the two tarballs of the repository, the unpacking and "
            "topogen-cmp. The git fetch a real repo-server makes first is not in it.",
            "",
            "| fleet | input MB | objects | runs | median s | slowest s "
            f"| margin to the {DEADLINE:.0f} s deadline | margin to the {BUDGET:.0f} s budget |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
            f"Target: the medium fleet at least {MARGIN:.0f}x inside the default deadline: "
            f"{verdict}. Load average (1 min) at the start and the end: "
            f"{load[0]:.1f}, {load[1]:.1f}.",
            "",
        ]
    )
    return section, times


def splice(text: str, section: str) -> str:
    """RESULTS.md with this section replaced (or appended)."""
    block = f"{BEGIN}\n{section}{END}\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        return head + block + rest.split(END, 1)[1].lstrip("\n")
    return text.rstrip("\n") + "\n\n" + block if text.strip() else block


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="the medium fleet only")
    ap.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    args = ap.parse_args(list(argv) if argv is not None else None)
    if not ARGOCD_CMP.exists():
        print(f"bench: no Argo CD timing: {ARGOCD_CMP} is not built (make tools)", file=sys.stderr)
        return 2
    # not the large fleet: it holds groups no domain can hold, and the plugin renders fail
    # closed (never --partial), so Argo CD gets topogen's refusal for it
    sizes = ["medium"] if args.quick else ["small", "medium"]
    from run import fleet_dir  # bench/run.py imports this module

    section, _ = run(sizes, args.runs, fleet_dir)
    old = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
    args.out.write_text(splice(old, section), encoding="utf-8")
    print(f"bench: wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
