"""`topogen connectivity` and the real Cyclonus agree, pair by pair and port by port.

Small seeded clusters (bench/netpolgen.py, 100 workloads) through both engines
(bench/race.py); every answer must agree except those the named rules explain. The
comparison is shown to catch a wrong answer, each rule is shown on a case of its own
and shown needed and narrow, and `cyclonus truth-table` is held to upstream's own
`analyze --mode probe` tables.
The timed race at 100, 1,000 and 5,000 workloads is `make bench` only.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tooling import require_tool

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import netpolgen  # noqa: E402
import race  # noqa: E402

pytestmark = pytest.mark.tools


@pytest.fixture(scope="module")
def cyclonus() -> Path:
    return require_tool("cyclonus")


def _cluster(tmp_path: Path, seed: int, workloads: int = 100) -> Path:
    root = tmp_path / f"cluster-{seed}"
    netpolgen.write_cluster(netpolgen.RaceSpec(workloads, seed), root)
    return root


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_answers(cyclonus: Path, tmp_path: Path, seed: int) -> None:
    root = _cluster(tmp_path, seed)
    a = race.run_both(root, tmp_path / "out")
    assert a.disagreements == []
    assert a.workloads == 100
    singles = 100 - len(race.multi_pod(root))
    assert a.pairs == 100 * 100 - singles
    assert a.cells > 2 * a.pairs * 0.9  # about two served ports per workload
    assert 0 < a.allowed_cells < a.cells  # both answers occur
    assert a.agreed + sum(a.excluded.values()) == a.cells
    assert set(a.excluded) <= {*race.RULES, f"{race.NOTIN_RULE} + {race.POLICYTYPES_RULE}"}


def test_each_rule_is_needed_and_narrow(cyclonus: Path, tmp_path: Path) -> None:
    """Seed 1 has answers for both rules. Without the rules it disagrees exactly on the
    answers they exclude, each rule's in the direction its reading predicts; with only
    one rule the other's answers are disagreements again."""
    root = _cluster(tmp_path, 1)
    out = tmp_path / "out"
    with_rules = race.run_both(root, out)
    assert with_rules.disagreements == []
    notin, types = with_rules.excluded[race.NOTIN_RULE], with_rules.excluded[race.POLICYTYPES_RULE]
    assert notin >= 5 and types > 100
    topogen, peer = race.read_topogen(out / "topogen.csv"), race.read_cyclonus(out / "cyclonus.tsv")
    plain = race.compare(root, topogen, peer)
    assert len(plain.disagreements) == sum(with_rules.excluded.values())
    variants = race.run_variants(root, out)
    for rule, count, verdict in (
        (race.NOTIN_RULE, notin, "topogen allows, Cyclonus denies"),  # Cyclonus selects less
        (race.POLICYTYPES_RULE, types, "topogen denies, Cyclonus allows"),  # Cilium isolates more
    ):
        only = race.compare(root, topogen, peer, {rule: variants[rule]})
        assert only.excluded == {rule: count}
        assert len(only.disagreements) == len(plain.disagreements) - count
        wrong = set(plain.disagreements) - set(only.disagreements)
        assert len(wrong) == count and all(verdict in d for d in wrong), rule


def test_a_wrong_answer_is_caught(cyclonus: Path, tmp_path: Path) -> None:
    root = _cluster(tmp_path, 1)
    out = tmp_path / "out"
    race.run_both(root, out)
    topogen = race.read_topogen(out / "topogen.csv")
    cyclonus_answers = race.read_cyclonus(out / "cyclonus.tsv")
    (src, dst), cells = next(iter(sorted(cyclonus_answers.items())))
    cyclonus_answers[(src, dst)] = cells - {min(cells)}
    got = race.compare(root, topogen, cyclonus_answers)
    proto, port = min(cells)
    assert f"{src} -> {dst} {proto}/{port}: topogen allows, Cyclonus denies" in got.disagreements


def _write(path: Path, doc: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc), encoding="utf-8")


def test_notin_on_a_namespace_without_the_key(cyclonus: Path, tmp_path: Path) -> None:
    """The rule's case alone: `env NotIn [dev]` and a namespace with no env label.
    Kubernetes selects that namespace (topogen allows), Cyclonus does not."""
    root = tmp_path / "c"
    ns = [{"apiVersion": "v1", "kind": "Namespace",
           "metadata": {"name": n, "labels": {"kubernetes.io/metadata.name": n, **extra}}}
          for n, extra in (("a", {}), ("b", {"env": "prod"}), ("c", {"env": "dev"}))]  # fmt: skip
    _write(root / "namespaces.yaml", {"apiVersion": "v1", "kind": "List", "items": ns})
    for n in ("a", "b", "c"):
        ports = [{"name": "http", "containerPort": 80, "protocol": "TCP"}]
        _write(root / "workloads" / f"{n}.yaml", {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": n},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "x", "ports": ports}]}}},
        })  # fmt: skip
    policy = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
              "metadata": {"name": "not-dev", "namespace": "b"},
              "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [
                  {"namespaceSelector": {"matchExpressions": [
                      {"key": "env", "operator": "NotIn", "values": ["dev"]}]}}]}]}}  # fmt: skip
    _write(root / "policies" / "b.yaml",
           {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicyList", "items": [policy]})  # fmt: skip
    (root / "probe.json").write_text(json.dumps(netpolgen.probe_model(root)), encoding="utf-8")
    out = tmp_path / "out"
    a = race.run_both(root, out)
    assert a.disagreements == [] and a.excluded == {race.NOTIN_RULE: 1}
    topogen = race.read_topogen(out / "topogen.csv")
    assert ("TCP", 80) in topogen[("a/web", "b/web")]  # Kubernetes: a has no env: selected
    assert ("a/web", "b/web") not in race.read_cyclonus(out / "cyclonus.tsv")
    assert ("c/web", "b/web") not in topogen  # env=dev: not selected, by both
    assert ("b/web", "b/web") not in topogen  # one pod: not a pair
    plain = race.compare(root, topogen, race.read_cyclonus(out / "cyclonus.tsv"))
    assert plain.disagreements == ["a/web -> b/web TCP/80: topogen allows, Cyclonus denies"]


def _probe_tables(text: str) -> list[dict[tuple[str, str], str]]:
    """Each `Combined:` table of `analyze --mode probe`: (from, to) -> cell."""
    tables = []
    for block in text.split("Combined:\n")[1:]:
        rows = [ln for ln in block.split("\n\n")[0].splitlines() if ln.startswith("|")]
        head = [c.strip().lower() for c in rows[0].strip("|").split("|")][1:]
        table = {}
        for row in rows[1:]:
            cells = [c.strip() for c in row.strip("|").split("|")]
            table.update({(cells[0], to): v for to, v in zip(head, cells[1:], strict=True)})
        tables.append(table)
    return tables


def test_truth_table_is_what_analyze_probe_says(cyclonus: Path, tmp_path: Path) -> None:
    """upstream's CLI probes one port at a time; on every pair and probed port a receiver
    serves (and serves on no other protocol: the probe names a port by number only),
    its Combined table says what truth-table says; elsewhere it says N (not served)."""
    root = _cluster(tmp_path, 1, workloads=40)
    cli = subprocess.run(
        [str(cyclonus), "analyze", "--mode", "probe", "--policy-path", str(root / "policies"),
         "--probe-path", str(root / "probe.json")],
        capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    probe = json.loads((root / "probe.json").read_text(encoding="utf-8"))
    tables = _probe_tables(cli.stdout)
    assert len(tables) == len(probe["Probes"]) + 1  # and an empty one: no pods from a cluster
    served = race.served_ports(root)
    out = tmp_path / "truth.tsv"
    race.run_to(race.cyclonus_cmd(root), out)
    truth = race.read_cyclonus(out)
    checked = 0
    for p, table in zip(probe["Probes"], tables, strict=False):
        cell = (p["Protocol"], p["Port"])
        assert len(table) == len(served) ** 2
        for (src, dst), got in table.items():
            numbers = [n for _, n in served[dst]]
            if cell in served[dst] and numbers.count(p["Port"]) == 1:
                assert got == ("." if cell in truth.get((src, dst), ()) else "X"), (src, dst, p)
                checked += 1
            elif p["Port"] not in numbers:
                assert got == "N", (src, dst, p)
    assert checked == sum(len(c) for c in served.values()) * len(served) - sum(
        1 for d in served for proto, n in served[d] if [m for _, m in served[d]].count(n) > 1
    ) * len(served)


def test_a_sample_of_senders_is_the_full_run_cut(cyclonus: Path, tmp_path: Path) -> None:
    """`truth-table --every K` (what make bench runs above 1,000 workloads) answers for
    exactly the senders race.sample names, as the full run does; a run with no sender
    answers nothing."""
    root = _cluster(tmp_path, 1)
    race.run_to(race.cyclonus_cmd(root), tmp_path / "full.tsv")
    race.run_to(race.cyclonus_cmd(root, 7), tmp_path / "sample.tsv")
    race.run_to(race.cyclonus_cmd(root, 1, 100), tmp_path / "none.tsv")
    full, cut = (
        race.read_cyclonus(tmp_path / "full.tsv"),
        race.read_cyclonus(tmp_path / "sample.tsv"),
    )
    senders = race.sample(race.served_ports(root), 7)
    assert len(senders) == 15
    assert cut == {k: v for k, v in full.items() if k[0] in senders}
    assert {src for src, _ in cut} <= senders and len({src for src, _ in cut}) > 5
    assert (tmp_path / "none.tsv").read_text(encoding="utf-8") == ""


def test_a_section_policy_types_leaves_out(cyclonus: Path, tmp_path: Path) -> None:
    """The policyTypes rule's case alone: `policyTypes: [Ingress]` with a written egress
    rule to `tier=db` only. Kubernetes (and Cyclonus) ignore the egress rule; Cilium,
    and topogen with it, apply it: the worker reaches only the db."""
    root = tmp_path / "c"
    ns = [{"apiVersion": "v1", "kind": "Namespace",
           "metadata": {"name": "a", "labels": {"kubernetes.io/metadata.name": "a"}}}]  # fmt: skip
    _write(root / "namespaces.yaml", {"apiVersion": "v1", "kind": "List", "items": ns})
    for tier in ("worker", "db", "web"):
        ports = [{"name": "http", "containerPort": 80, "protocol": "TCP"}]
        _write(root / "workloads" / f"{tier}.yaml", {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": tier, "namespace": "a"},
            "spec": {"selector": {"matchLabels": {"tier": tier}}, "template": {
                "metadata": {"labels": {"tier": tier}},
                "spec": {"containers": [{"name": "c", "image": "x", "ports": ports}]}}},
        })  # fmt: skip
    policy = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
              "metadata": {"name": "ingress-only", "namespace": "a"},
              "spec": {"podSelector": {"matchLabels": {"tier": "worker"}},
                       "policyTypes": ["Ingress"], "ingress": [{}],
                       "egress": [{"to": [{"podSelector": {"matchLabels": {"tier": "db"}}}]}]}}  # fmt: skip
    _write(root / "policies" / "a.yaml",
           {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicyList", "items": [policy]})  # fmt: skip
    (root / "probe.json").write_text(json.dumps(netpolgen.probe_model(root)), encoding="utf-8")
    out = tmp_path / "out"
    a = race.run_both(root, out)
    assert a.disagreements == [] and a.excluded == {race.POLICYTYPES_RULE: 1}
    topogen, peer = race.read_topogen(out / "topogen.csv"), race.read_cyclonus(out / "cyclonus.tsv")
    assert ("TCP", 80) in topogen[("a/worker", "a/db")]
    assert ("a/worker", "a/web") not in topogen  # Cilium: the written egress rule applies
    assert ("TCP", 80) in peer[("a/worker", "a/web")]  # Kubernetes: it does not
    plain = race.compare(root, topogen, peer)
    assert plain.disagreements == ["a/worker -> a/web TCP/80: topogen denies, Cyclonus allows"]
