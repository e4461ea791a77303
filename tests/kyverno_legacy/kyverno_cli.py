"""`kyverno apply` driven from the tests, with its v1.19.1 output quirks handled.

- `-o DIR/` appends one `<pod name>-mutated.yaml` per resource: the folder is cleared
  first and the last document of each file is the result (pod names are unique here).
- ClusterPolicy prints a deprecation warning on stdout before the policy report.
- The CLI evaluates resources as a background scan; a CEL ValidatingPolicy reports
  only its first failing validation per resource.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

Pod = dict[str, Any]


@dataclass(frozen=True)
class Applied:
    returncode: int
    stdout: str
    stderr: str
    mutated: dict[str, Pod]  # pod name -> the pod as written by -o
    results: tuple[dict[str, Any], ...]  # policy report results (with --policy-report)


def write_pods(path: Path, pods: Sequence[Pod]) -> Path:
    path.write_text(yaml.safe_dump_all(list(pods), sort_keys=False), encoding="utf-8")
    return path


def apply(
    kyverno: Path,
    policies: Sequence[Path],
    resources: Path,
    *,
    out: Path | None = None,
    report: bool = False,
    audit_warn: bool = False,
) -> Applied:
    args = [str(kyverno), "apply", *map(str, policies), "-r", str(resources), "--remove-color"]
    if out is not None:
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        args += ["-o", f"{out}/"]
    if report:
        args += ["--policy-report", "--output-format", "json"]
    if audit_warn:
        args.append("--audit-warn")
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False)
    if "error: 0" not in proc.stdout and not report:
        raise AssertionError(
            f"kyverno apply reported errors:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"
        )
    mutated = _read_out(out) if out is not None else {}
    results = _report(proc.stdout) if report else ()
    return Applied(proc.returncode, proc.stdout, proc.stderr, mutated, results)


def _read_out(out: Path) -> dict[str, Pod]:
    pods: dict[str, Pod] = {}
    for file in sorted(out.glob("*-mutated.yaml")):
        docs = [d for d in yaml.safe_load_all(file.read_text(encoding="utf-8")) if d]
        pod = docs[-1]
        pods[pod["metadata"]["name"]] = pod
    return pods


def _report(stdout: str) -> tuple[dict[str, Any], ...]:
    start = stdout.find('{"kind":')
    if start < 0:
        raise AssertionError(f"no policy report in kyverno output:\n{stdout[-3000:]}")
    report, _ = json.JSONDecoder().raw_decode(stdout[start:])
    if report["summary"].get("error"):
        raise AssertionError(f"kyverno reported errors: {json.dumps(report)[:4000]}")
    return tuple(report.get("results") or ())


def verdicts(results: Sequence[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(policy, pod name) -> its results."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in results:
        for res in r["resources"]:
            out.setdefault((r["policy"], res["name"]), []).append(r)
    return out
