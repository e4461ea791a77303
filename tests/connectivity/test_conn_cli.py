"""`topogen connectivity` and `topogen explain` on the command line: formats, exits, errors."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conn_kit import (
    connectivity_map,
    docs,
    path_args,
    pod,
    run,
    run_error,
    verdict_block,
    write_case,
)

from topogen.config import load_config
from topogen.connectivity.endpoints import HOST_NETWORK_RULE
from topogen.pipeline.analyze import analyze

ROOT = Path(__file__).resolve().parents[2]
ZONE_SPLIT = ROOT / "examples" / "zone-split"

SMALL = docs(
    pod("a", "web", {"app": "web"}),
    pod("a", "db", {"app": "db"}, (("pg", 5432, "TCP"),)),
    pod("b", "job", {"app": "job"}),
    """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db, namespace: a}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress:
    - from: [{podSelector: {matchLabels: {app: web}}}]
      ports: [{port: pg}, {port: 8000, endPort: 8010}]
""",
)


@pytest.fixture
def small(tmp_path: Path) -> list[str]:
    return path_args(write_case(tmp_path, SMALL))


def test_table(small: list[str]) -> None:
    result = run(["connectivity", *small])
    assert result.exit_code == 0
    assert result.output == (
        "FROM   TO     ALLOWED\n"
        "a/db   a/web  all\n"
        "a/db   b/job  all\n"
        "a/web  a/db   TCP/5432, TCP/8000-8010\n"
        "a/web  b/job  all\n"
        "b/job  a/web  all\n"
        "\n"
        "5 of 6 ordered pairs of 3 workloads have an allowed connection; 1 have none "
        "(not listed)\n"
    )


def test_csv(small: list[str]) -> None:
    result = run(["connectivity", *small, "-o", "csv"])
    assert result.exit_code == 0
    rows = list(csv.reader(io.StringIO(result.output)))
    assert rows[0] == ["from", "to", "allowed"]
    assert rows[1:] == [
        ["a/db", "a/web", "all"],
        ["a/db", "b/job", "all"],
        ["a/web", "a/db", "TCP/5432 TCP/8000-8010"],
        ["a/web", "b/job", "all"],
        ["b/job", "a/web", "all"],
    ]


def test_connectivity_over_files_imports_no_config_or_later_stage(small: list[str]) -> None:
    """Start-up: without -c, connectivity reads no topogen.yaml, so neither pydantic (the
    config's validation) nor the plan, render or emit stages are imported; only the check
    every command makes for an interrupted render (emit.leftovers: the journal itself only
    when there is one to finish); nor multiprocessing, ctypes or OpenSSL (hashlib), which
    only a large input, a render's swap or a JobSet's names need."""
    code = (
        "import sys\n"
        "from topogen.cli import main\n"
        "try:\n"
        f"    main(['connectivity', *{small!r}, '-o', 'csv'], prog_name='topogen')\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "stages = ('pydantic', 'jinja2', 'topogen.config', 'topogen.plan', 'topogen.render',\n"
        "          'topogen.emit', 'multiprocessing', 'ctypes', '_hashlib', 'hashlib')\n"
        "journal = ('topogen.emit', 'topogen.emit.leftovers')\n"
        "print(sorted(m for m in sys.modules if (m.split('.')[0] in stages or\n"
        "             m.startswith(stages[2:])) and m not in journal))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert "a/web,a/db," in out.stdout  # it ran
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_json_marks_unconnected_pairs(small: list[str]) -> None:
    result = run(["connectivity", *small, "-o", "json"])
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert sorted(data) == [
        "apiVersion",
        "excluded",
        "kind",
        "notes",
        "pairs",
        "policies",
        "workloads",
    ]
    assert (data["apiVersion"], data["kind"]) == ("topogen.io/v1alpha1", "ConnectivityReport")
    assert [w["id"] for w in data["workloads"]] == ["a/db", "a/web", "b/job"]
    assert data["workloads"][0]["namedPorts"] == ["pg=5432/TCP"]
    assert data["policies"] == ["netpol a/db"]
    assert {"from": "b/job", "to": "a/db", "connected": False, "allowed": []} in data["pairs"]
    assert [(p["from"], p["to"]) for p in data["pairs"]] == [
        ("a/db", "a/web"),
        ("a/db", "b/job"),
        ("a/web", "a/db"),
        ("a/web", "b/job"),
        ("b/job", "a/db"),
        ("b/job", "a/web"),
    ]


def test_output_is_deterministic_whatever_the_input_order(tmp_path: Path) -> None:
    parts = SMALL.split("\n---\n")
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    (tmp_path / "x" / "in.yaml").write_text("\n---\n".join(parts))
    (tmp_path / "y" / "in.yaml").write_text("\n---\n".join(reversed(parts)))
    outs = []
    for d in ("x", "y"):
        args = path_args(tmp_path / d / "in.yaml")
        outs.append(
            [run(["connectivity", *args, "-o", o]).output for o in ("table", "json", "csv")]
        )
    assert outs[0] == outs[1]


def test_explain_exit_codes(small: list[str]) -> None:
    allowed = run(["explain", "--from", "a/web", "--to", "a/db", *small])
    assert allowed.exit_code == 0
    assert allowed.output.splitlines()[3] == (
        "verdict: ALLOWED; the path allows TCP/5432, TCP/8000-8010"
    )
    port_ok = run(["explain", "--from", "a/web", "--to", "a/db", "--port", "pg/TCP", *small])
    assert port_ok.exit_code == 0
    port_no = run(["explain", "--from", "a/web", "--to", "a/db", "--port", "8011/TCP", *small])
    assert port_no.exit_code == 1
    assert "receiver ingress: default deny (isolated by netpol a/db)" in verdict_block(
        port_no.output
    )
    denied = run(["explain", "--from", "b/job", "--to", "a/db", *small])
    assert denied.exit_code == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["explain", "--from", "a/wbe", "--to", "a/db"],
            "--from: no workload a/wbe (did you mean a/web",
        ),
        (["explain", "--from", "a/web", "--to", "db"], "--to: no workload db (did you mean a/db?)"),
        (
            ["explain", "--from", "a/web", "--to", "a/db", "--port", "80/ICMP"],
            "is not PORT/PROTOCOL",
        ),
        (["explain", "--from", "a/web", "--to", "a/db", "--port", "70000"], "from 1 to 65535"),
        (
            ["explain", "--from", "a/web", "--to", "a/db", "--port", "http/TCP"],
            "a/db exposes no port named http/TCP (its named ports: pg/TCP)",
        ),
        (["connectivity", "--label", "a/web=zone"], "is not NS/NAME=KEY=VALUE"),
        (["connectivity", "--label", "a/nope=zone=a"], "--label: no workload a/nope"),
        (["connectivity", "--cluster", "x"], "--cluster needs -c/--config"),
    ],
)
def test_input_errors_exit_2_with_one_line(small: list[str], args: list[str], message: str) -> None:
    result = run_error([*args, *small])
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.stderr.count("\n") == 1
    assert result.stdout == ""


def test_paths_and_config_are_exclusive(small: list[str], tmp_path: Path) -> None:
    result = run_error(["connectivity", "-c", str(tmp_path / "t.yaml"), *small])
    assert result.exit_code == 2
    assert "not both" in result.stderr
    missing = run_error(["connectivity", "--policies", small[1]])
    assert missing.exit_code == 2
    assert "--workloads is missing" in missing.stderr


def test_bad_yaml_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [\n")
    result = run_error(["connectivity", *path_args(bad)])
    assert result.exit_code == 2
    assert "malformed YAML" in result.stderr and result.stderr.count("\n") == 1


KINDS = docs(
    """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: a}
spec:
  template: {metadata: {labels: {app: web}}, spec: {containers: [{name: c, image: x}]}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: a}
spec:
  template: {metadata: {labels: {app: db}}, spec: {containers: [{name: c, image: x}]}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: a}
spec:
  template: {metadata: {labels: {app: agent}}, spec: {containers: [{name: c, image: x}]}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: hostagent, namespace: a}
spec:
  template:
    metadata: {labels: {app: hostagent}}
    spec: {hostNetwork: true, containers: [{name: c, image: x}]}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs, namespace: a}
spec:
  template: {metadata: {labels: {app: rs}}, spec: {containers: [{name: c, image: x}]}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: job, namespace: a}
spec:
  template: {metadata: {labels: {app: job}}, spec: {containers: [{name: c, image: x}]}}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cron, namespace: a}
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template: {metadata: {labels: {app: cron}}, spec: {containers: [{name: c, image: x}]}}
---
apiVersion: v1
kind: Pod
metadata: {name: pod, namespace: a, labels: {app: pod}}
spec: {containers: [{name: c, image: x}]}
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: train, namespace: a}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: c, image: x}]}}}
    Worker: {replicas: 3, template: {spec: {containers: [{name: c, image: x}]}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: train, namespace: a}
spec:
  podSelector: {matchLabels: {training.kubeflow.org/job-name: train}}
  ingress:
    - from: [{podSelector: {matchLabels: {training.kubeflow.org/job-name: train}}}]
      ports: [{port: 29500}]
""",
)


def test_every_workload_kind_is_an_endpoint(tmp_path: Path) -> None:
    args = path_args(write_case(tmp_path, KINDS))
    data = json.loads(run(["connectivity", *args, "-o", "json"]).output)
    assert [w["id"] for w in data["workloads"]] == [
        "a/agent",
        "a/cron",
        "a/db",
        "a/hostagent",
        "a/job",
        "a/pod",
        "a/rs",
        "a/train[Master]",
        "a/train[Worker]",
        "a/web",
    ]
    assert data["excluded"] == []
    hosts = [w["id"] for w in data["workloads"] if w["hostNetwork"]]
    assert hosts == ["a/hostagent"]
    assert data["notes"] == [f"hostNetwork: {HOST_NETWORK_RULE}"]
    got = connectivity_map(args)
    assert got[("a/train[Master]", "a/train[Worker]")] == "TCP/29500"
    assert got[("a/train[Worker]", "a/train[Worker]")] == "TCP/29500"  # 3 replicas
    assert got[("a/agent", "a/agent")] == "all"  # a DaemonSet has many pods
    assert ("a/pod", "a/pod") not in got  # one pod: no pair with itself
    assert got[("a/web", "a/train[Master]")] is None
    assert got[("a/train[Master]", "a/web")] == "all"
    # the hostNetwork DaemonSet is its node: pods reach it where their egress is open, it
    # reaches pods whose ingress is open; the training pods' ingress admits only pods
    assert got[("a/web", "a/hostagent")] == "all"
    assert got[("a/hostagent", "a/web")] == "all"
    assert got[("a/hostagent", "a/train[Worker]")] is None
    assert got[("a/hostagent", "a/hostagent")] == "all"  # two nodes, no host firewall
    table = run(["connectivity", *args]).output
    assert table.endswith(
        f"note: hostNetwork workloads, listed as their node: a/hostagent: {HOST_NETWORK_RULE}\n"
    )
    assert "host-network traffic is the node's" in table


def test_explain_names_and_ambiguity(tmp_path: Path) -> None:
    args = path_args(write_case(tmp_path, KINDS))
    ok = run(["explain", "--from", "a/train[master]", "--to", "a/TRAIN[Worker]", *args])
    assert ok.exit_code == 0
    amb = run_error(["explain", "--from", "a/train", "--to", "a/web", *args])
    assert amb.exit_code == 2
    assert "--from a/train is ambiguous: it names a/train[Master], a/train[Worker]" in amb.stderr
    host = run(["explain", "--from", "a/hostagent", "--to", "a/train[Worker]", *args])
    assert host.exit_code == 1, host.output  # the job's ingress admits its own pods only
    assert "from a/hostagent" in host.output
    assert f"note: a/hostagent uses hostNetwork, listed as its node: {HOST_NETWORK_RULE}" in (
        host.output
    )


# --- -c topogen.yaml --------------------------------------------------------------------

ZS_ARGS = ["--from", "ml-demo/trainer-coordinator", "--to", "ml-demo/trainer-workers"]


def test_zone_split_hard_block_named_by_explain() -> None:
    """The HARD_BLOCK placement of examples/zone-split: coordinator in zone-b, workers in
    zone-a. `zone` is stamped at binding, so the placement is given with --label."""
    cfg = str(ZONE_SPLIT / "topogen.yaml")
    result = run(
        [
            "explain",
            "-c",
            cfg,
            *ZS_ARGS,
            "--port",
            "29500/TCP",
            "--label",
            "ml-demo/trainer-coordinator=zone=zone-b",
            "--label",
            "ml-demo/trainer-workers=zone=zone-a",
        ]
    )
    assert result.exit_code == 1
    block = verdict_block(result.output)
    assert block.splitlines()[1:] == [
        "  sender egress: default deny (isolated by cnp ml-demo/allow-intra-zone-b rule 0)",
        "  receiver ingress: default deny (isolated by cnp ml-demo/allow-intra-zone-a rule 0)",
    ]
    assert "zone=zone-b (--label)" in result.output


def test_zone_split_without_labels_notes_the_identity_label() -> None:
    result = run(["explain", "-c", str(ZONE_SPLIT / "topogen.yaml"), *ZS_ARGS])
    assert result.exit_code == 0  # template labels only: no zone policy selects them
    assert (
        "note: ml-demo/trainer-workers sets no zone label: topogen.yaml names it the identity label"
    ) in result.output


def test_zone_split_after_is_allowed() -> None:
    result = run(
        ["explain", "-c", str(ZONE_SPLIT / "topogen-after.yaml"), *ZS_ARGS, "--port", "29500/TCP"]
    )
    assert result.exit_code == 0
    assert "allowed by cnp ml-demo/allow-intra-zone-a rule 0 egress[0]" in result.output


def test_explain_names_every_policy_analyze_blames_for_a_hard_block() -> None:
    """For each path `analyze` reports blocked, explain (with the identity label set to the
    zones of that placement) denies it and names the same policies with their rule index."""
    cfg = load_config(ZONE_SPLIT / "topogen.yaml")
    report = analyze(cfg)
    jobs = [j for c in report.clusters for j in c.jobs if j.blocked]
    assert jobs, "zone-split must report HARD_BLOCK"
    checked = 0
    for job in jobs:
        label = next(g.identity_label for g in cfg.groups if g.name == job.job.config_group)
        by_role = {m.role: m.workload for m in job.members}
        for path in job.blocked:
            src, dst = by_role[path.src_role], by_role[path.dst_role]
            sid, did = f"{src.namespace}/{src.name}", f"{dst.namespace}/{dst.name}"
            result = run(
                [
                    "explain",
                    "-c",
                    str(ZONE_SPLIT / "topogen.yaml"),
                    "--from",
                    sid,
                    "--to",
                    did,
                    "--port",
                    "29500/TCP",
                    "--label",
                    f"{sid}={label}={path.src_zone}",
                    "--label",
                    f"{did}={label}={path.dst_zone}",
                ]
            )
            assert result.exit_code == 1
            block = verdict_block(result.output)
            for policy in path.policies:
                assert f"{policy} rule 0" in block, (policy, block)
            checked += 1
    assert checked == 2


def test_config_cluster_choice(tmp_path: Path) -> None:
    (tmp_path / "nodes.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: "
        "{topology.kubernetes.io/zone: z}}\n"
    )
    (tmp_path / "open").mkdir()
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "deny.yaml").write_text(
        "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
        "metadata: {name: deny, namespace: a}\nspec: {podSelector: {}}\n"
    )
    (tmp_path / "w.yaml").write_text(docs(pod("a", "x", {"app": "x"}), pod("a", "y", {"app": "y"})))
    (tmp_path / "topogen.yaml").write_text(
        "apiVersion: topogen.io/v1alpha1\nkind: TopogenConfig\n"
        "clusters:\n"
        "  - {name: first, nodes: [nodes.yaml], networkPolicies: [open/]}\n"
        "  - {name: second, nodes: [nodes.yaml], networkPolicies: [locked/]}\n"
        "workloads: [w.yaml]\n"
        "groups: [{name: g, profile: kubeflow-training-operator, namespaces: [a]}]\n"
    )
    cfg = str(tmp_path / "topogen.yaml")
    assert connectivity_map(["-c", cfg])[("a/x", "a/y")] == "all"
    assert connectivity_map(["-c", cfg, "--cluster", "second"])[("a/x", "a/y")] is None
    bad = run_error(["connectivity", "-c", cfg, "--cluster", "third"])
    assert bad.exit_code == 2 and "no cluster named 'third'" in bad.stderr


def test_explain_as_a_subprocess() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from topogen.cli import main; main()",
            "explain",
            "-c",
            str(ZONE_SPLIT / "topogen.yaml"),
            *ZS_ARGS,
            "--label",
            "ml-demo/trainer-coordinator=zone=zone-b",
            "--label",
            "ml-demo/trainer-workers=zone=zone-a",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert proc.returncode == 1, proc.stderr
    assert "verdict: DENIED" in proc.stdout and proc.stderr == ""
