"""Run one engine's generated policies over a suite's pods with the engine's real tool.

Every engine goes through the same two steps:
1. mutation: the admission pods through the engine's mutating policies (`kyverno apply
   -o` for kyverno, kyverno-legacy and native; `gator expand` for gatekeeper);
2. validation: the engine's own mutated pods and the validation-only pods through its
   validating policies, one verdict and message per check (`kyverno apply
   --policy-report`, each check its own policy because the CLI reports the first failing
   validation of a policy only; `gator test -o json`, one violation per check).

Shims, each forced by a tool and each leaving what is evaluated unchanged:
- native: Kyverno CLI v1.19.1 validates documents against Kubernetes 1.32's OpenAPI,
  which knows MutatingAdmissionPolicy only as v1alpha1; the policies are loaded with
  that apiVersion (the fields topogen writes are the same in v1alpha1, v1beta1 and v1).
- gatekeeper: gator reads the pods' YAML as written, a mutator at admission the Pod the
  API server decoded, without empty fields: gator gets the pods in that form (`stored`).
  gator mutates only what an ExpansionTemplate generates, so each pod rides
  in a carrier object (spec.pod) expanded into a Pod; the carrier's name comes back as
  the pod's, and the ownerReferences gator adds are dropped. gator has no admission
  operation, and applies a mutator with `applyTo.operations` only when it lists every
  operation: the operations field (CREATE) is dropped for the run.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from engines.cases import Suite
from engines.differences import Pod
from topogen.render.base import RenderedFile
from topogen.render.gatekeeper import gatekeeper_policies
from topogen.render.intent import AdmissionIntent
from topogen.render.kyverno import kyverno_policies
from topogen.render.native import native_policies

Checks = tuple[tuple[str, str], ...]  # sorted (check id, message)


@dataclass(frozen=True)
class Outcome:
    mutated: dict[str, Pod]  # admission case -> the pod as the engine mutated it
    checks: dict[str, Checks]  # every case -> the checks it fails (admission: after mutation)


def stored(pod: Pod) -> Pod:
    """The pod as the API server keeps it: its typed Pod drops a toleration's empty
    fields (an empty effect or key means every one either way)."""
    out = copy.deepcopy(pod)
    spec = out.get("spec") or {}
    if spec.get("tolerations"):
        spec["tolerations"] = [{k: v for k, v in t.items() if v != ""} for t in spec["tolerations"]]
    return out


def check_ids(intent: AdmissionIntent) -> list[str]:
    """The checks in the order of cel.validations (and the legacy validate rules)."""
    ids = ["coordinator-pinned", "worker-affinity"]
    if intent.identity_label:
        ids.append("identity")
    ids += [f"denied:{a}:{b}" for a, b, _ in intent.denied_zone_pairs]
    return ids


def _dump(path: Path, docs: Sequence[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(list(docs), sort_keys=False), encoding="utf-8")
    return path


def _run(args: Sequence[str], ok: Sequence[int] = (0,)) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(args), capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode not in ok:
        raise AssertionError(
            f"{' '.join(args[:2])} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n"
            f"{proc.stderr[-3000:]}"
        )
    return proc


# --- kyverno apply -----------------------------------------------------------------------


def _kyverno_mutate(
    kyverno: Path, policies: Sequence[Path], pods: Path, out: Path, values: Path | None
) -> dict[str, Pod]:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    args = [str(kyverno), "apply", *map(str, policies), "-r", str(pods), "-o", f"{out}/"]
    args += ["--remove-color", "-v", "1", *(["--values-file", str(values)] if values else [])]
    proc = _run(args)
    logged = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    # some engine errors are only logged (e.g. a MAP whose patch fails): fail on them too
    if "error: 0" not in proc.stdout or re.search(r"\sERR\s", logged):
        raise AssertionError(
            f"kyverno apply reported errors:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    mutated = {}
    for file in sorted(out.glob("*-mutated.yaml")):
        # -o appends each pass of the policies: the last document is the result
        docs = [d for d in yaml.safe_load_all(file.read_text(encoding="utf-8")) if d]
        mutated[docs[-1]["metadata"]["name"]] = docs[-1]
    return mutated


def _kyverno_report(
    kyverno: Path,
    policies: Sequence[Path],
    pods: Path,
    values: Path | None,
    extra: Sequence[str] = (),
) -> list[dict[str, Any]]:
    args = [str(kyverno), "apply", *map(str, policies), "-r", str(pods), "--remove-color"]
    args += extra
    args += ["--policy-report", "--output-format", "json", "--audit-warn"]
    args += ["--values-file", str(values)] if values else []
    proc = _run(args, ok=(0, 1))
    start = proc.stdout.find('{"kind":')
    if start < 0:
        raise AssertionError(f"no policy report:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    report, _ = json.JSONDecoder().raw_decode(proc.stdout[start:])
    if report["summary"].get("error"):
        raise AssertionError(f"kyverno reported errors: {json.dumps(report)[:4000]}")
    return list(report.get("results") or ())


def _failures(
    results: Sequence[dict[str, Any]], check_of: dict[tuple[str, str], str]
) -> dict[str, Checks]:
    """pod name -> (check, message) of every failing result; check_of: (policy, rule)."""
    out: dict[str, list[tuple[str, str]]] = {}
    for r in results:
        if r["result"] not in ("fail", "warn"):
            continue
        check = check_of.get((r["policy"], r.get("rule") or ""), check_of.get((r["policy"], "")))
        assert check is not None, f"a result of no known check: {r}"
        for res in r["resources"]:
            out.setdefault(res["name"], []).append((check, str(r["message"])))
    return {name: tuple(sorted(c)) for name, c in out.items()}


def _write(
    folder: Path, files: Sequence[RenderedFile], api: dict[str, str] | None = None
) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for f in files:
        text = f.text
        for old, new in (api or {}).items():
            text = text.replace(f'apiVersion: "{old}"', f'apiVersion: "{new}"')
        path = folder / f.path
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def _split(
    policy: dict[str, Any], binding: dict[str, Any] | None, ids: list[str], folder: Path
) -> tuple[list[Path], dict[tuple[str, str], str]]:
    """One policy per validation (and its binding): the CLI reports a policy's first
    failing validation only."""
    paths, check_of = [], {}
    assert len(policy["spec"]["validations"]) == len(ids)
    for n, (v, check) in enumerate(zip(policy["spec"]["validations"], ids, strict=True)):
        one = copy.deepcopy(policy)
        name = f"{policy['metadata']['name']}-check-{n}"
        one["metadata"]["name"] = name
        one["spec"]["validations"] = [v]
        docs = [one]
        if binding is not None:
            b = copy.deepcopy(binding)
            b["metadata"]["name"] = name
            b["spec"]["policyName"] = name
            docs.append(b)
        paths.append(_dump(folder / f"check-{n}.yaml", docs))
        check_of[(name, name)] = check
        check_of[(name, "")] = check
    return paths, check_of


def _values(pods: Sequence[Pod], folder: Path) -> Path:
    namespaces = sorted({p["metadata"]["namespace"] for p in pods})
    return _dump(
        folder / "values.yaml",
        [
            {
                "apiVersion": "cli.kyverno.io/v1alpha1",
                "kind": "Value",
                "metadata": {"name": "ns"},
                "namespaceSelector": [
                    {"name": n, "labels": {"kubernetes.io/metadata.name": n}} for n in namespaces
                ],
            }
        ],
    )


def run_kyverno_family(engine: str, kyverno: Path, suite: Suite, tmp: Path) -> Outcome:
    intent = suite.intent
    admission = [c.pod for c in suite.cases if c.admission]
    only = [c.pod for c in suite.cases if not c.admission]
    ids = check_ids(intent)
    values = _values([*admission, *only], tmp) if engine == "native" else None
    if engine == "kyverno":
        files = kyverno_policies(intent)
        paths = _write(tmp / "policies", files)
        mutating = [
            p for p, f in zip(paths, files, strict=True) if f.objects[0]["kind"] == "MutatingPolicy"
        ]
        # the group's ValidatingPolicy, and one per detached selector (its own webhook)
        checks, check_of = [], {}
        for n, f in enumerate(f for f in files if f.objects[0]["kind"] == "ValidatingPolicy"):
            more, of = _split(f.objects[0], None, ids, tmp / f"checks-{n}")
            checks += more
            check_of.update(of)
    elif engine == "native":
        files = native_policies(intent)
        api = {
            "admissionregistration.k8s.io/v1beta1": "admissionregistration.k8s.io/v1alpha1",
            "admissionregistration.k8s.io/v1": "admissionregistration.k8s.io/v1alpha1",
        }
        paths = _write(tmp / "policies", files[:2], api)
        mutating = paths
        vap, binding = files[2].objects
        checks, check_of = _split(vap, binding, ids, tmp / "checks")
    else:
        from topogen.render.kyverno_legacy import kyverno_legacy_policies

        files = kyverno_legacy_policies(intent)
        paths = _write(tmp / "policies", files)
        mutating = [p for p in paths if p.name.endswith("-mutate.yaml")]
        checks = [p for p in paths if p.name.endswith("-validate.yaml")]
        policy = yaml.safe_load(checks[0].read_text(encoding="utf-8"))
        rules = [r["name"] for r in policy["spec"]["rules"]]
        assert len(rules) == len(ids), (rules, ids)
        check_of = {(policy["metadata"]["name"], r): c for r, c in zip(rules, ids, strict=True)}
    raw = _dump(tmp / "admission.yaml", admission)
    mutated = _kyverno_mutate(kyverno, mutating, raw, tmp / "out", values)
    assert set(mutated) == {p["metadata"]["name"] for p in admission}
    judged = _dump(tmp / "judged.yaml", [*mutated.values(), *only])
    results = _kyverno_report(kyverno, checks, judged, values)
    return Outcome(mutated, _failures(results, check_of))


# --- gator -------------------------------------------------------------------------------

CARRIER = {"group": "test.topogen.io", "version": "v1", "kind": "AdmissionCase"}


def _carrier(pod: Pod) -> dict[str, Any]:
    meta = pod["metadata"]
    return {
        "apiVersion": f"{CARRIER['group']}/{CARRIER['version']}",
        "kind": CARRIER["kind"],
        "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
        "spec": {"pod": {k: v for k, v in pod.items() if k not in ("apiVersion", "kind")}},
    }


def _json_stream(text: str) -> list[dict[str, Any]]:
    decoder, pos = json.JSONDecoder(), 0
    out: list[dict[str, Any]] = []
    while True:
        pos = text.find("{", pos)
        if pos < 0:
            return out
        doc, pos = decoder.raw_decode(text, pos)
        out.append(doc)


def gator_expand(
    gator: Path, mutators: Sequence[dict[str, Any]], pods: Sequence[Pod], tmp: Path
) -> dict[str, Pod]:
    stripped = copy.deepcopy(list(mutators))
    for m in stripped:
        for a in m["spec"].get("applyTo", []):
            a.pop("operations", None)
    template = {
        "apiVersion": "expansion.gatekeeper.sh/v1alpha1",
        "kind": "ExpansionTemplate",
        "metadata": {"name": "admission-case"},
        "spec": {
            "applyTo": [
                {
                    "groups": [CARRIER["group"]],
                    "kinds": [CARRIER["kind"]],
                    "versions": [CARRIER["version"]],
                }
            ],
            "templateSource": "spec.pod",
            "generatedGVK": {"group": "", "version": "v1", "kind": "Pod"},
        },
    }
    path = _dump(tmp / "expand.yaml", [*stripped, template, *map(_carrier, pods)])
    proc = _run([str(gator), "expand", "--filename", str(path), "--format", "json"])
    out = {}
    for doc in _json_stream(proc.stdout):
        owner = doc["metadata"].pop("ownerReferences")
        assert [o["name"] for o in owner] == [doc["metadata"]["name"].removesuffix("-pod")]
        doc["metadata"]["name"] = owner[0]["name"]
        out[doc["metadata"]["name"]] = doc
    return out


def cel_check(intent: AdmissionIntent, msg: str) -> str:
    """The check a K8sNativeValidation violation's message is of (CEL carries no details):
    its message's distinct words, as cel.validations writes them, each of one check only."""
    marks = {
        "coordinator-pinned": f": the coordinator of group {intent.group} must be pinned to ",
        "worker-affinity": f": a worker of group {intent.group} must require pod affinity ",
        "identity": f": identity label {intent.identity_label}=",
    }
    found = [check for check, mark in marks.items() if mark in msg]
    found += [
        f"denied:{a}:{b}"
        for a, b, _ in intent.denied_zone_pairs
        if f": node affinity spans {a} and {b}, whose traffic is denied by " in msg
    ]
    assert len(found) == 1, f"a violation of no one known check: {msg}"
    return found[0]


def gator_checks(
    gator: Path,
    policies: Sequence[Path],
    pods: Sequence[Pod],
    tmp: Path,
    intent: AdmissionIntent,
    rego: bool = False,
) -> dict[str, Checks]:
    """`rego`: gator's native validation off, so the template's Rego judges (else its
    K8sNativeValidation CEL, as Gatekeeper's webhook runs it by default)."""
    path = _dump(tmp / "judged.yaml", pods)
    args = [str(gator), "test", *(f"--filename={p}" for p in [*policies, path]), "--output=json"]
    if rego:
        args.append("--enable-k8s-native-validation=false")
    proc = _run(args, ok=(0, 1))
    out: dict[str, list[tuple[str, str]]] = {}
    for v in json.loads(proc.stdout or "[]") or []:
        name = v["violatingObject"]["metadata"]["name"]
        details = (v.get("metadata") or {}).get("details")
        assert (details is not None) == rego, v  # the Rego's violations alone carry details
        check = (
            str(details["check"]) if rego and details is not None else cel_check(intent, v["msg"])
        )
        out.setdefault(name, []).append((check, v["msg"]))
    return {n: tuple(sorted(c)) for n, c in out.items()}


def run_gatekeeper(gator: Path, suite: Suite, tmp: Path, rego: bool = False) -> Outcome:
    """`rego`: the template's checks judged by its Rego instead of its CEL."""
    files = gatekeeper_policies(suite.intent)
    paths = _write(tmp / "policies", files)
    template, constraint, _ = paths
    admission = [stored(c.pod) for c in suite.cases if c.admission]
    only = [stored(c.pod) for c in suite.cases if not c.admission]
    mutated = gator_expand(gator, files[2].objects, admission, tmp)
    assert set(mutated) == {p["metadata"]["name"] for p in admission}
    judged = [*mutated.values(), *only]
    checks = gator_checks(gator, [template, constraint], judged, tmp, suite.intent, rego)
    return Outcome(mutated, checks)
