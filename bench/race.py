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
that very answer (RULES). Each rule re-runs topogen on a copy of the policies rewritten
so that Kubernetes' reading and the other engine's coincide there (REWRITES); an answer
is excluded when that run gives Cyclonus's answer and the plain run does not (an answer
that needs both rewrites is tried on a copy with both, counted under both names joined).

- `cyclonus-notin-absent-key` (Cyclonus departs from Kubernetes): Cyclonus's label
  selectors treat `NotIn` as false on an object without the key
  (pkg/kube/labelselector.go), where Kubernetes selects it (k8s.io/apimachinery
  labels.Requirement.Matches returns true for NotIn when the key is absent; the labels
  concept page: `tier notin (frontend, backend)` selects "all resources with no labels
  with the tier key" too). Rewrite: every NotIn requirement also requires its key.
- `cilium-policytypes` (topogen, modelling Cilium, departs from Kubernetes): Cilium's
  agent translates every rule a NetworkPolicy writes whatever `policyTypes` says
  (pkg/k8s ParseNetworkPolicy; tests/cilium/test_mutations.py holds topogen to it with
  Cilium's own engine), where Kubernetes applies only the directions policyTypes names
  (NetworkPolicySpec.policyTypes) and Cyclonus follows Kubernetes. Rewrite: a section
  policyTypes leaves out is removed.
"""

from __future__ import annotations

import argparse
import copy
import csv
import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import measure  # noqa: E402
import netpolgen  # noqa: E402

TOPOGEN = measure.TOPOGEN  # the venv the bench runs in (measure.py)
CYCLONUS = ROOT / ".tools" / "bin" / "cyclonus"
NOTIN_RULE = "cyclonus-notin-absent-key"
POLICYTYPES_RULE = "cilium-policytypes"
RULES = {
    NOTIN_RULE: "Cyclonus: a NotIn requirement never selects an object without the key "
    "(Kubernetes: it does)",
    POLICYTYPES_RULE: "topogen, as Cilium: a NetworkPolicy's written rules apply whatever "
    "policyTypes says (Kubernetes and Cyclonus: a direction policyTypes leaves out does not "
    "apply)",
}
Cell = tuple[str, int]  # (protocol, port)
Pairs = dict[tuple[str, str], Any]


def topogen_cmd(root: Path, policies: str = "policies") -> list[str]:
    return [str(TOPOGEN), "connectivity", "--policies", str(root / policies),
            "--workloads", str(root / "workloads"), "--namespaces",
            str(root / "namespaces.yaml"), "-o", "csv"]  # fmt: skip


def cyclonus_cmd(root: Path, every: int = 1, offset: int = 0) -> list[str]:
    """Cyclonus on every sender, or on senders offset, offset + every, ... (sender order)."""
    return [str(CYCLONUS), "truth-table", "--policy-path", str(root / "policies"),
            "--probe-path", str(root / "probe.json"), "--every", str(every),
            "--offset", str(offset)]  # fmt: skip


def sample(ids: Sequence[str], every: int) -> set[str]:
    """The senders `cyclonus_cmd(root, every)` asks about (ids in sender order)."""
    return set(sorted(ids)[::every])


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


# --- the rules' rewrites ----------------------------------------------------------------


def _notin_as_cyclonus(selector: Any) -> bool:
    if not isinstance(selector, dict):
        return False
    exprs = selector.get("matchExpressions") or []
    notin = [e for e in exprs if e.get("operator") == "NotIn"]
    exprs += [{"key": e["key"], "operator": "Exists"} for e in notin]
    return bool(notin)


def _selectors(policy: dict[str, Any]) -> Iterator[Any]:
    spec = policy["spec"]
    yield spec.get("podSelector")
    for section, side in (("ingress", "from"), ("egress", "to")):
        for rule in spec.get(section) or []:
            for peer in rule.get(side) or []:
                yield peer.get("podSelector")
                yield peer.get("namespaceSelector")


def _rewrite_notin(policy: dict[str, Any]) -> bool:
    """Cyclonus's NotIn: each NotIn also requires its key (True: something changed)."""
    return any([_notin_as_cyclonus(sel) for sel in _selectors(policy)])


def _rewrite_policytypes(policy: dict[str, Any]) -> bool:
    """Kubernetes' policyTypes: a written section it leaves out is removed."""
    spec = policy["spec"]
    types = spec.get("policyTypes")
    if types is None:
        return False
    dropped = [d for d in ("ingress", "egress") if d.capitalize() not in types and spec.get(d)]
    for d in dropped:
        del spec[d]
    return bool(dropped)


REWRITES: dict[str, Callable[[dict[str, Any]], bool]] = {
    NOTIN_RULE: _rewrite_notin,
    POLICYTYPES_RULE: _rewrite_policytypes,
}


def write_variants(root: Path) -> dict[str, str]:
    """Per rule that changes some policy, a rewritten copy of the policies (the folder's
    name under root); and, when two or more do, one copy with all of them (named by
    the rules joined with " + ")."""
    docs = {p.name: yaml.safe_load(p.read_text(encoding="utf-8"))
            for p in sorted((root / "policies").glob("*.yaml"))}  # fmt: skip
    out: dict[str, str] = {}
    for rules in [[r] for r in REWRITES] + [list(REWRITES)]:
        name = " + ".join(rules)
        if name in out or (len(rules) > 1 and sum(r in out for r in rules) < 2):
            continue
        copies = {n: copy.deepcopy(d) for n, d in docs.items()}
        changed = [REWRITES[r](p) for r in rules for d in copies.values() for p in d["items"]]
        folder = root / ("policies-" + "-".join(rules))
        shutil.rmtree(folder, ignore_errors=True)
        if not any(changed):
            continue
        folder.mkdir()
        for n, d in copies.items():
            (folder / n).write_text(yaml.safe_dump(d, sort_keys=True), encoding="utf-8")
        out[name] = folder.name
    return out


def run_variants(
    root: Path, work: Path, run: Callable[[list[str], Path], None] | None = None
) -> dict[str, dict[tuple[str, str], Ports]]:
    """topogen on each rewritten copy: rule (or combination) -> its answers."""
    run = run or run_to
    out = {}
    for name, folder in write_variants(root).items():
        csv_path = work / f"topogen-{folder}.csv"
        run(topogen_cmd(root, folder), csv_path)
        out[name] = read_topogen(csv_path)
    return out


# --- comparing --------------------------------------------------------------------------


@dataclass
class Agreement:
    workloads: int
    pairs: int  # ordered pairs compared (from the sampled senders, when sampled)
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
    variants: Mapping[str, dict[tuple[str, str], Ports]] | None = None,
    senders: set[str] | None = None,
) -> Agreement:
    """Every answer of `senders` (default: all) to every receiver, port by port;
    `variants`: topogen's answers on each rule's rewritten policies (run_variants)."""
    served, multi = served_ports(root), multi_pod(root)
    ids = sorted(served)
    senders = set(ids) if senders is None else senders
    singles = [w for w in senders if w not in multi]
    pairs = len(senders) * len(ids) - len(singles)
    cells = len(senders) * sum(len(served[d]) for d in ids) - sum(len(served[w]) for w in singles)
    result = Agreement(len(ids), pairs, cells, 0)
    none = Ports("")
    for src, dst in sorted(topogen.keys() | cyclonus.keys()):
        if src not in senders:
            continue
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
            rule = next((name for name, answers in (variants or {}).items()
                         if (cell in answers.get((src, dst), none)) == c), None)  # fmt: skip
            if rule is not None:
                result.excluded[rule] = result.excluded.get(rule, 0) + 1
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
    variants = run_variants(root, work, run)
    return compare(
        root, read_topogen(work / "topogen.csv"), read_cyclonus(work / "cyclonus.tsv"), variants
    )


def run_to(cmd: list[str], stdout: Path) -> None:
    with stdout.open("wb") as out:
        p = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, check=False)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.decode()[-2000:]}")


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
