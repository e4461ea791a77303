"""`topogen connectivity` against Cyclonus on the same generated NetworkPolicy clusters.

    .venv/bin/python bench/race.py --workloads 100 [--seed 1]    # compare once, print

Both engines read the files bench/netpolgen.py writes: topogen its YAML (`connectivity
--policies --workloads --namespaces -o csv`), Cyclonus the same policy files and the
probe file made from the same workloads (`cyclonus truth-table`, Cyclonus's engine on
every pod pair and served port: tools/cyclonus/main.go). Answers are compared for every
ordered pair topogen lists (a one-pod workload is not paired with itself) and every port
the destination serves: topogen's allowed ports must hold exactly the served ports
Cyclonus allows.

A disagreement is explained only by a named rule, and only when the rule accounts for
that very answer (RULES). `cyclonus-notin-absent-key`: Cyclonus's label selectors treat
`NotIn` as false on an object without the key (pkg/kube/labelselector.go), where
Kubernetes selects it (k8s.io/apimachinery labels.Requirement.Matches: "NotIn ... the
key is not present" matches; the labels concept page: "... and all resources without a
label with the environment key"). The rule re-runs topogen on a copy of the policies in
which every NotIn requirement also requires its key to exist (Cyclonus's reading); an
answer is excluded when that run gives Cyclonus's answer and the plain run does not.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import netpolgen  # noqa: E402
from measure import Measured, measure  # noqa: E402

TOPOGEN = ROOT / ".venv" / "bin" / "topogen"
CYCLONUS = ROOT / ".tools" / "bin" / "cyclonus"
NOTIN_RULE = "cyclonus-notin-absent-key"
RULES = {
    NOTIN_RULE: "Cyclonus: a NotIn requirement never selects an object without the key "
    "(Kubernetes: it does)",
}
Cell = tuple[str, int]  # (protocol, port)
Pairs = dict[tuple[str, str], Any]


def topogen_cmd(root: Path, policies: str = "policies") -> list[str]:
    return [str(TOPOGEN), "connectivity", "--policies", str(root / policies),
            "--workloads", str(root / "workloads"), "--namespaces",
            str(root / "namespaces.yaml"), "-o", "csv"]  # fmt: skip


def cyclonus_cmd(root: Path) -> list[str]:
    return [str(CYCLONUS), "truth-table", "--policy-path", str(root / "policies"),
            "--probe-path", str(root / "probe.json")]  # fmt: skip


# --- reading the answers ----------------------------------------------------------------


class Ports:
    """topogen's allowed column: "all" or PROTO/N, PROTO/A-B, PROTO/* separated by spaces."""

    def __init__(self, text: str) -> None:
        self.all = text == "all"
        self.ranges: dict[str, list[tuple[int, int]]] = {}
        for item in [] if self.all else text.split():
            proto, _, span = item.partition("/")
            lo, _, hi = span.partition("-")
            bounds = (1, 65535) if span == "*" else (int(lo), int(hi or lo))
            self.ranges.setdefault(proto, []).append(bounds)

    def __contains__(self, cell: Cell) -> bool:
        proto, port = cell
        return self.all or any(lo <= port <= hi for lo, hi in self.ranges.get(proto, ()))


def read_topogen(path: Path) -> dict[tuple[str, str], Ports]:
    with path.open(encoding="utf-8", newline="") as f:
        rows = csv.reader(f)
        if next(rows, None) != ["from", "to", "allowed"]:
            raise ValueError(f"{path}: not `topogen connectivity -o csv` output")
        return {(r[0], r[1]): Ports(r[2]) for r in rows}


def read_cyclonus(path: Path) -> dict[tuple[str, str], set[Cell]]:
    out: dict[tuple[str, str], set[Cell]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        src, dst, allowed = line.split("\t")
        out[(src, dst)] = {(p, int(n)) for p, _, n in (c.partition("/") for c in allowed.split())}
    return out


def served_ports(root: Path) -> dict[str, list[Cell]]:
    """Workload id -> the (protocol, port) its containers serve (from probe.json)."""
    probe = json.loads((root / "probe.json").read_text(encoding="utf-8"))
    return {
        f"{p['Namespace']}/{p['Name']}": [(c["Protocol"], c["Port"]) for c in p["Containers"]]
        for p in probe["Resources"]["Pods"]
    }


def multi_pod(root: Path) -> set[str]:
    """Workloads topogen pairs with themselves: more than one replica, or a DaemonSet."""
    out = set()
    for path in sorted((root / "workloads").glob("*.yaml")):
        for w in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if w["kind"] == "DaemonSet" or w["spec"].get("replicas", 1) > 1:
                out.add(f"{w['metadata']['namespace']}/{w['metadata']['name']}")
    return out


# --- the NotIn rule -------------------------------------------------------------------


def _notin_as_cyclonus(selector: Any) -> None:
    if not isinstance(selector, dict):
        return
    exprs = selector.get("matchExpressions") or []
    for e in list(exprs):
        if e.get("operator") == "NotIn":
            exprs.append({"key": e["key"], "operator": "Exists"})


def _selectors(policy: dict[str, Any]) -> Iterator[Any]:
    spec = policy["spec"]
    yield spec.get("podSelector")
    for section, side in (("ingress", "from"), ("egress", "to")):
        for rule in spec.get(section) or []:
            for peer in rule.get(side) or []:
                yield peer.get("podSelector")
                yield peer.get("namespaceSelector")


def write_notin_variant(root: Path) -> str | None:
    """policies-notin/: the policies with Cyclonus's NotIn reading; None without NotIn."""
    out = root / "policies-notin"
    found = False
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    for path in sorted((root / "policies").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for policy in doc["items"]:
            for sel in _selectors(policy):
                if isinstance(sel, dict) and any(
                    e.get("operator") == "NotIn" for e in sel.get("matchExpressions") or []
                ):
                    found = True
                    _notin_as_cyclonus(sel)
        (out / path.name).write_text(yaml.safe_dump(doc, sort_keys=True), encoding="utf-8")
    return out.name if found else None


# --- comparing --------------------------------------------------------------------------


@dataclass
class Agreement:
    workloads: int
    pairs: int  # ordered pairs compared
    cells: int  # (pair, served port) answers compared
    allowed_cells: int  # of those, allowed by both
    excluded: dict[str, int] = field(default_factory=dict)  # rule -> answers excluded
    disagreements: list[str] = field(default_factory=list)  # "src -> dst proto/port: ..."

    @property
    def agreed(self) -> int:
        return self.cells - sum(self.excluded.values()) - len(self.disagreements)


def compare(
    root: Path,
    topogen: dict[tuple[str, str], Ports],
    cyclonus: dict[tuple[str, str], set[Cell]],
    notin: dict[tuple[str, str], Ports] | None = None,
) -> Agreement:
    served, multi = served_ports(root), multi_pod(root)
    ids = sorted(served)
    pairs = len(ids) ** 2 - sum(1 for w in ids if w not in multi)
    cells = sum(len(served[d]) for d in ids) * len(ids) - sum(
        len(served[w]) for w in ids if w not in multi
    )
    result = Agreement(len(ids), pairs, cells, 0)
    none = Ports("")
    for src, dst in sorted(topogen.keys() | cyclonus.keys()):
        if src == dst and src not in multi:
            if (src, dst) in topogen:
                result.disagreements.append(f"{src} -> itself: topogen pairs a one-pod workload")
            continue
        t_ports, c_cells = topogen.get((src, dst), none), cyclonus.get((src, dst), set())
        for cell in served[dst]:
            t, c = cell in t_ports, cell in c_cells
            if t and c:
                result.allowed_cells += 1
            if t == c:
                continue
            if notin is not None and (cell in notin.get((src, dst), none)) == c:
                result.excluded[NOTIN_RULE] = result.excluded.get(NOTIN_RULE, 0) + 1
                continue
            result.disagreements.append(
                f"{src} -> {dst} {cell[0]}/{cell[1]}: topogen "
                f"{'allows' if t else 'denies'}, Cyclonus {'allows' if c else 'denies'}"
            )
    return result


def run_both(
    root: Path,
    work: Path,
    run: Callable[[list[str], Path], None] | None = None,
) -> Agreement:
    """Run both engines once on the cluster under `root` and compare their answers."""
    run = run or run_to
    work.mkdir(parents=True, exist_ok=True)
    run(topogen_cmd(root), work / "topogen.csv")
    run(cyclonus_cmd(root), work / "cyclonus.tsv")
    notin = None
    variant = write_notin_variant(root)
    if variant is not None:
        run(topogen_cmd(root, variant), work / "topogen-notin.csv")
        notin = read_topogen(work / "topogen-notin.csv")
    return compare(
        root, read_topogen(work / "topogen.csv"), read_cyclonus(work / "cyclonus.tsv"), notin
    )


def run_to(cmd: list[str], stdout: Path) -> None:
    with stdout.open("wb") as out:
        p = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, check=False)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.decode()[-2000:]}")


# --- make bench --------------------------------------------------------------------------

FLEETS = HERE / ".fleets"
PEER_CACHE_AFTER = 600.0  # s: a Cyclonus run longer than this is measured once (see below)


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


def _peer(root: Path, runs: int, work: Path, fresh: bool) -> tuple[Measured, Path, bool]:
    """Cyclonus's runs: (measured, its answers, whether they come from an earlier run).

    A run longer than PEER_CACHE_AFTER is kept in bench/.fleets, keyed by the Cyclonus
    binary (version and source hash in its name) and the digest of the files it reads,
    and reused unless `fresh`: the same binary on the same files on this machine,
    measured once.
    """
    key = FLEETS / f"peer-{CYCLONUS.resolve().name}-{inputs_digest(root)}"
    cached, answers = key.with_suffix(".json"), key.with_suffix(".tsv")
    if cached.exists() and answers.exists() and not fresh:
        data = json.loads(cached.read_text(encoding="utf-8"))
        return Measured(data["wall"], data["cpu"], data["rss_kb"], set(data["digests"]),
                        {0}), answers, True  # fmt: skip
    out = work / "cyclonus.tsv"
    m = _timed(cyclonus_cmd(root), out, 1, "cyclonus")
    if m.wall[0] <= PEER_CACHE_AFTER:
        for _ in range(runs - 1):
            r = measure(cyclonus_cmd(root), out)
            m.add(r)
            m.digests.add(hashlib.sha256(out.read_bytes()).hexdigest())
        return m, out, False
    FLEETS.mkdir(exist_ok=True)
    shutil.copy(out, answers)
    record = {"wall": m.wall, "cpu": m.cpu, "rss_kb": m.rss_kb, "digests": sorted(m.digests)}
    cached.write_text(json.dumps(record), encoding="utf-8")
    return m, answers, False


def bench(
    workloads: Sequence[int], seed: int, runs: int, work: Path, fresh_peer: bool = False
) -> list[dict[str, Any]]:
    """Per size: the cluster's counts, both engines' runs, and the answers compared."""
    results = []
    for n in workloads:
        spec = netpolgen.RaceSpec(n, seed)
        root = cluster_dir(spec)
        print(f"bench: race {n} workloads ...", file=sys.stderr, flush=True)
        case = work / f"race-{n}"
        case.mkdir(parents=True, exist_ok=True)
        topo = _timed(topogen_cmd(root), case / "topogen.csv", runs, "topogen connectivity")
        peer, answers, cached = _peer(root, runs, case, fresh_peer)
        notin = None
        variant = write_notin_variant(root)
        if variant is not None:
            run_to(topogen_cmd(root, variant), case / "topogen-notin.csv")
            notin = read_topogen(case / "topogen-notin.csv")
        agreement = compare(root, read_topogen(case / "topogen.csv"), read_cyclonus(answers), notin)
        results.append({"spec": spec, **_sizes(root), "topogen": topo, "cyclonus": peer,
                        "peer_cached": cached, "agreement": agreement})  # fmt: skip
        print(f"bench:   topogen {topo.wall_med:.2f}s cyclonus {peer.wall_med:.2f}s, "
              f"{len(agreement.disagreements)} disagreements", file=sys.stderr, flush=True)  # fmt: skip
    return results


def faster(r: dict[str, Any]) -> bool:
    """topogen no slower than Cyclonus: median wall time, and median CPU time."""
    t, c = r["topogen"], r["cyclonus"]
    return bool(t.wall_med <= c.wall_med and t.cpu_med <= c.cpu_med)


def target_rows(results: list[dict[str, Any]]) -> list[tuple[str, str, bool | None]]:
    """(target, measured, holds) rows for the report's Targets table."""
    if not results:
        return [("race: `topogen connectivity` no slower than Cyclonus, every size",
                 "not run", None),
                ("race: the same answers as Cyclonus, every pair and port", "not run", None)]  # fmt: skip
    sizes = ", ".join(
        f"{r['spec'].workloads}: {r['cyclonus'].wall_med / r['topogen'].wall_med:.1f}x"
        for r in results
    )
    wrong = sum(len(r["agreement"].disagreements) for r in results)
    excluded = sum(sum(r["agreement"].excluded.values()) for r in results)
    answers = sum(r["agreement"].cells for r in results)
    return [
        ("race: `topogen connectivity` no slower than Cyclonus, every size",
         f"Cyclonus / topogen wall time, by workloads: {sizes}", all(faster(r) for r in results)),
        ("race: the same answers as Cyclonus, every pair and port",
         f"{answers:,} answers, {wrong} disagreements, {excluded:,} excluded by {NOTIN_RULE}",
         wrong == 0),
    ]  # fmt: skip


def report_lines(results: list[dict[str, Any]], runs: int) -> list[str]:
    lines = [
        "## Race: `topogen connectivity` and Cyclonus",
        "",
        "Cyclonus v0.5.6 (github.com/mattfenwick/cyclonus, built by `make tools`) computes "
        "the truth table of Kubernetes NetworkPolicies for every pod pair and port, as "
        "`cyclonus analyze --mode probe` does (tools/cyclonus/main.go: `truth-table` asks "
        "its engine one question per pair and served port, one at a time, as its simulated "
        "probe runner does, without rendering N x N tables per port). Both read the same "
        "files written by bench/netpolgen.py (seed "
        f"{results[0]['spec'].seed if results else 1}): topogen the namespaces, workload "
        "manifests and NetworkPolicyLists (`topogen connectivity --policies --workloads "
        "--namespaces -o csv`), Cyclonus the same policy files and the probe file made from "
        "the same manifests. Every ordered pair topogen lists (a one-pod workload is not "
        "paired with itself) is compared on every port its receiver serves. Times are "
        f"whole processes, the median of {runs} runs (Cyclonus: one run where a run takes "
        f"over {PEER_CACHE_AFTER / 60:.0f} minutes, kept in bench/.fleets and reused by later "
        "`make bench` runs with the same binary; marked *).",
        "",
        f"Excluded by rule `{NOTIN_RULE}`: {RULES[NOTIN_RULE]}. Cyclonus's label selector "
        "(pkg/kube/labelselector.go) returns false for `NotIn` on an object without the "
        "key; Kubernetes selects it (k8s.io/apimachinery labels.Requirement.Matches; the "
        'labels concept page: `environment notin (frontend)` selects "all resources without '
        'a label with the environment key" too). An answer is excluded only when topogen, '
        "run on a copy of the policies where each NotIn also requires its key, gives "
        "Cyclonus's answer.",
        "",
        "| workloads | namespaces | policies | ordered pairs | answers (pair, port) "
        "| allowed | excluded by rule | disagreements | topogen s | topogen CPU s "
        "| topogen MB | Cyclonus s | Cyclonus CPU s | Cyclonus MB | Cyclonus / topogen "
        "| topogen no slower |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        a, t, c = r["agreement"], r["topogen"], r["cyclonus"]
        star = "*" if len(c.wall) == 1 and runs > 1 else ""
        lines.append(
            f"| {r['spec'].workloads:,} | {r['namespaces']} | {r['policies']:,} | {a.pairs:,} "
            f"| {a.cells:,} | {a.allowed_cells:,} | {sum(a.excluded.values()):,} "
            f"| {len(a.disagreements)} | {t.wall_med:.2f} | {t.cpu_med:.2f} | {t.rss_mb:.0f} "
            f"| {c.wall_med:.2f}{star} | {c.cpu_med:.2f}{star} | {c.rss_mb:.0f} "
            f"| {c.wall_med / t.wall_med:.1f}x | {'yes' if faster(r) else '**no**'} |"
        )
    for r in results:
        for d in r["agreement"].disagreements[:20]:
            lines.append(f"- {r['spec'].workloads} workloads: {d}")
    same = all(len(r["topogen"].digests) == 1 for r in results)
    lines += ["", f"topogen's output byte-identical across runs: {'yes' if same else '**no**'}."]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", type=int, default=netpolgen.SIZES["small"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("race-out"))
    args = ap.parse_args(argv)
    root = args.out / "cluster"
    shutil.rmtree(root, ignore_errors=True)
    netpolgen.write_cluster(netpolgen.RaceSpec(args.workloads, args.seed), root)
    a = run_both(root, args.out)
    print(f"{a.workloads} workloads, {a.pairs} pairs, {a.cells} answers: {a.agreed} agree "
          f"({a.allowed_cells} allowed), excluded {a.excluded}, "
          f"{len(a.disagreements)} disagree")  # fmt: skip
    for d in a.disagreements[:50]:
        print("  " + d)
    return 1 if a.disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
