"""Helpers for the connectivity/explain tests: inline YAML cases run through the real CLI."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from topogen.cli import main

Pair = tuple[str, str]


def pod(
    ns: str, name: str, labels: dict[str, str], ports: tuple[tuple[str, int, str], ...] = ()
) -> str:
    """A Pod as YAML (JSON is YAML): ports are (name, number, protocol)."""
    container: dict[str, Any] = {"name": "c", "image": "x"}
    if ports:
        container["ports"] = [
            {"name": n, "containerPort": p, "protocol": proto}
            if n
            else {"containerPort": p, "protocol": proto}
            for n, p, proto in ports
        ]
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"containers": [container]},
    }
    return json.dumps(body)


def namespace(name: str, labels: dict[str, str]) -> str:
    return json.dumps(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
    )


def docs(*parts: str) -> str:
    return "\n---\n".join(p.strip() for p in parts) + "\n"


@dataclass(frozen=True)
class Check:
    """An `explain` run: its exit, and text it must show.

    why: lines the verdict block must contain (the denials: end, reason, policy, rule)
    text: strings anywhere in the output; absent: strings not in the verdict block.
    """

    src: str
    dst: str
    port: str | None
    allowed: bool
    why: tuple[str, ...] = ()
    text: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()


@dataclass(frozen=True)
class Case:
    id: str
    source: str  # the documented rule this case is written from
    yaml: str
    expect: dict[Pair, str | None]  # "all", "TCP/80, UDP/*" ..., or None: no connection
    checks: tuple[Check, ...] = field(default=())


def run(args: list[str]) -> Result:
    return CliRunner().invoke(main, args, catch_exceptions=False)


def run_error(args: list[str]) -> Result:
    """A run expected to fail: exceptions become the result, stdout and stderr apart."""
    return CliRunner().invoke(main, args)


def write_case(tmp: Path, text: str) -> Path:
    path = tmp / "case.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def path_args(path: Path) -> list[str]:
    return ["--policies", str(path), "--workloads", str(path)]


def connectivity_map(args: list[str]) -> dict[Pair, str | None]:
    result = run(["connectivity", *args, "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    out: dict[Pair, str | None] = {}
    for p in data["pairs"]:
        assert p["connected"] == bool(p["allowed"])
        out[(p["from"], p["to"])] = ", ".join(p["allowed"]) if p["connected"] else None
    return out


def verdict_block(output: str) -> str:
    """From the `verdict:` line to the next blank line."""
    start = output.index("verdict:")
    end = output.find("\n\n", start)
    return output[start : end if end != -1 else None]
