"""Admission latency of pod creation through kube-apiserver with Gatekeeper's
controller-manager (v3.23.1, mutation enabled, out of cluster: tests/live's harness,
tests/live/gatekeeper_harness.py), measured as bench/admission.py measures Kyverno's: the
same pods of the same group, one at a time, the configurations taking turns in rounds.

Five configurations: no policy (Gatekeeper running: its release registers its two
webhooks for every resource, so the API server still calls both), a reference ModifySet
that adds one toleration to every pod, the group's generated Gatekeeper policies as
rendered (its ConstraintTemplate, whose K8sNativeValidation CEL Gatekeeper runs, its
constraint with the rendered enforcementAction: under Audit scoped to Gatekeeper's audit
and gator, so the webhook skips it), its mutators alone, the generated policies as
gatekeeper.auditAtAdmission renders them (the constraint dryrun, judged on the webhook
too), and those with the template's Rego alone (what Gatekeeper runs with its native
validation off). Gatekeeper's CPU per pod then splits: the mutators', mutators alone over
no policy; the constraint's at admission, the generated policies at admission over their
mutators alone (the CEL, or the Rego, judges the pods as mutated, as in a cluster). Gatekeeper's
webhooks are as released: failurePolicy Ignore with 1 s (mutation) and 3 s (validation)
timeouts, so a slow answer admits the pod as sent; the report says how many pods
admission changed and how many took 1 s or more.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests" / "live"), str(HERE.parent / "tests")]

import admission  # noqa: E402
import admission_report  # noqa: E402
from gatekeeper_harness import MUTATOR_KINDS, Gatekeeper, mutators, start_gatekeeper  # noqa: E402
from kyverno_pods import group_pods  # noqa: E402
from live_harness import ControlPlane, start_control_plane  # noqa: E402
from webhook_harness import WEBHOOK_PLUGINS  # noqa: E402

__all__ = [
    "available",
    "cpu_split",
    "gatekeeper_objects",
    "reference_mutator",
    "render_gatekeeper",
    "report_lines",
    "run_gatekeeper_admission",
]

BINARY = admission.TOOLS_BIN / "gatekeeper-controller-manager"
REFERENCE = "reference"
MUTATORS = "generated, mutators only"
AT_ADMISSION = "generated, Audit at admission"
REGO = "generated, Audit at admission, Rego"
CONFIGS = (*admission_report.CONFIGS, MUTATORS, AT_ADMISSION, REGO)
TOLERATION = {"key": "example.com/reference", "operator": "Exists", "effect": "NoSchedule"}
POD = {"groups": [""], "kinds": ["Pod"], "versions": ["v1"], "operations": ["CREATE"]}


def available() -> bool:
    return all((admission.TOOLS_BIN / t).exists() for t in ("etcd", "kube-apiserver")) and (
        BINARY.exists()
    )


def reference_mutator(name: str = REFERENCE) -> dict[str, Any]:
    """The minimal Gatekeeper mutator: every Pod gets one toleration."""
    return {
        "apiVersion": "mutations.gatekeeper.sh/v1",
        "kind": "ModifySet",
        "metadata": {"name": name},
        "spec": {
            "applyTo": [POD],
            "match": {"scope": "Namespaced", "kinds": [{"apiGroups": [""], "kinds": ["Pod"]}]},
            "location": "spec.tolerations",
            "parameters": {"operation": "merge", "values": {"fromList": [TOLERATION]}},
        },
    }


def render_gatekeeper(topogen: Path, config: Path, out: Path) -> Path:
    """Render the fleet with the gatekeeper engine (a copy of its config, outside the
    fleet's folder, naming the fleet's inputs by absolute path; --partial, as run.py
    renders it); the cluster's gatekeeper policy folder."""
    raw = yaml.safe_load(config.read_text(encoding="utf-8"))
    base = config.parent
    for cluster in raw["clusters"]:
        for key in ("nodes", "networkPolicies"):
            cluster[key] = [str(base / p) for p in cluster.get(key) or []]
    raw["workloads"] = [str(base / p) for p in raw.get("workloads") or []]
    raw["engines"] = ["gatekeeper"]
    out.mkdir(parents=True, exist_ok=True)
    copy = out / "topogen.yaml"
    copy.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    tree = out / "render"
    argv = [str(topogen), "render", "-c", str(copy), "--out", str(tree), "--partial"]
    done = subprocess.run(
        [*argv, "--allow-outside-paths"],
        capture_output=True,
        text=True,
        check=False,
    )
    folders = sorted((tree / "policies").glob("*/gatekeeper"))
    if done.returncode not in (0, 1) or len(folders) != 1:
        raise SystemExit(f"bench: gatekeeper render: exit {done.returncode}: {done.stderr[-400:]}")
    return folders[0]


def gatekeeper_objects(folder: Path, group: str) -> list[dict[str, Any]]:
    """The group's rendered Gatekeeper objects, its ConstraintTemplate first."""
    objs = [
        d
        for f in sorted(folder.glob("topogen-*.yaml"))
        for d in yaml.safe_load_all(f.read_text(encoding="utf-8"))
        if d and d["metadata"].get("labels", {}).get("topogen.io/group") == group
    ]
    if not any(o["kind"] == "ConstraintTemplate" for o in objs):
        raise SystemExit(f"bench: no Gatekeeper policies for group {group} in {folder}")
    return sorted(objs, key=lambda o: o["kind"] != "ConstraintTemplate")


def at_admission(objects: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects as gatekeeper.auditAtAdmission renders them: a constraint scoped off
    the webhook made dryrun everywhere (an Enforce one is left as it is)."""
    out = []
    for o in objects:
        scoped = o["spec"].get("enforcementAction") == "scoped"
        if scoped and o["apiVersion"].startswith("constraints."):
            o = copy.deepcopy(o)
            o["spec"]["enforcementAction"] = "dryrun"
            del o["spec"]["scopedEnforcementActions"]
        out.append(o)
    return out


def rego_only(objects: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects with the ConstraintTemplate's Rego alone (its K8sNativeValidation CEL
    dropped): what Gatekeeper's webhook runs with native validation disabled."""
    out = []
    for o in objects:
        if o["kind"] == "ConstraintTemplate":
            o = copy.deepcopy(o)
            for target in o["spec"]["targets"]:
                target["code"] = [c for c in target["code"] if c["engine"] == "Rego"]
        out.append(o)
    return out


def _has_reference(pod: dict[str, Any]) -> bool:
    return TOLERATION in (pod.get("spec", {}).get("tolerations") or [])


class GatekeeperPath:
    def __init__(self, cp: ControlPlane, g: Gatekeeper, client: admission.Client) -> None:
        self.cp, self.g, self.client = cp, g, client

    def switch(
        self, old: Sequence[dict[str, Any]], new: Sequence[dict[str, Any]], probe: dict[str, Any]
    ) -> None:
        """Remove `old`, install `new`, and wait until a dry run shows `new` alone: the
        probe unchanged (none), with the reference toleration (reference), or changed
        without it (generated)."""
        if old:
            self.g.clear()
        if new:
            self.g.apply(new)
            self.g.wait_enforced(new)
        self.settle(new, probe)

    def settle(self, current: Sequence[dict[str, Any]], probe: dict[str, Any]) -> None:
        plain = admission.fields(probe)
        reference = bool(current) and current[0]["metadata"]["name"] == REFERENCE

        def shows_new() -> bool:
            got = self.client.create(probe, True)[1]
            if not current:
                return admission.fields(got) == plain
            if reference:
                return _has_reference(got)
            return admission.fields(got) != plain and not _has_reference(got)

        admission.until("Gatekeeper's policies at admission", shows_new)

    def clean(self, namespaces: Sequence[str]) -> None:
        kube = self.cp.kube()
        for ns in namespaces:  # a loaded machine can take minutes over hundreds of pods
            path = f"/api/v1/namespaces/{ns}/pods"
            kube.request("DELETE", path, query={"gracePeriodSeconds": 0}, timeout=600)


def run_gatekeeper_admission(
    objects: Sequence[dict[str, Any]],
    config: Path,
    group: str,
    pods: int,
    work: Path,
    rounds: int = 8,
    pace: float = admission.PACE,
) -> dict[str, Any]:
    policies = {
        "none": [],
        "reference": [reference_mutator()],
        "generated": list(objects),
        MUTATORS: mutators(objects),
        AT_ADMISSION: at_admission(objects),
        REGO: rego_only(at_admission(objects)),
    }
    all_pods = group_pods(config, group, pods)
    namespaces = sorted({p["metadata"]["namespace"] for p in all_pods})
    cp = start_control_plane(admission.TOOLS_BIN, work / "plane", WEBHOOK_PLUGINS, scheduler=False)
    try:
        g = start_gatekeeper(cp, BINARY, work / "gatekeeper")
        try:
            client = admission.Client(cp)
            path = GatekeeperPath(cp, g, client)
            procs = {"API server": cp.apiserver, "Gatekeeper": g.proc, "etcd": cp.etcd}
            stats = admission.measure_configs(
                cp, path, client, policies, all_pods, namespaces, rounds, procs, pace
            )
        finally:
            g.stop()
    finally:
        cp.stop()
    kinds: dict[str, int] = {}
    for o in objects:
        kinds[o["kind"]] = kinds.get(o["kind"], 0) + 1
    return admission_report.ratios(stats) | {
        "group": group,
        "kinds": kinds,
        "enforcement": sorted(
            {
                o["spec"].get("enforcementAction", "deny")
                for o in objects
                if o["apiVersion"].startswith("constraints.")
            }
        ),
        "pods": len(all_pods),
        "rounds": rounds,
        "pace": pace,
    }


def cpu_split(stats: dict[str, dict[str, Any]]) -> dict[str, float] | None:
    """Gatekeeper's CPU ms per pod over no policy: the reference's ModifySet, the generated
    mutators, the constraint as rendered (the generated policies over their mutators
    alone) and at admission (AT_ADMISSION over the mutators alone, where measured); None
    where the mutators alone or the CPU were not measured."""
    if MUTATORS not in stats or "cpu" not in stats["none"]:
        return None
    cpu = {name: s["cpu"]["Gatekeeper"] for name, s in stats.items()}
    out = {
        "reference": cpu["reference"] - cpu["none"],
        "mutators": cpu[MUTATORS] - cpu["none"],
        "constraint": cpu["generated"] - cpu[MUTATORS],
    }
    if AT_ADMISSION in cpu:
        out["at_admission"] = cpu[AT_ADMISSION] - cpu[MUTATORS]
    if REGO in cpu:
        out["rego"] = cpu[REGO] - cpu[MUTATORS]
    return out


def _split_lines(gk: dict[str, Any]) -> list[str]:
    split = cpu_split(gk["stats"])
    if split is None:
        return []
    count = sum(n for k, n in gk["kinds"].items() if k in MUTATOR_KINDS)
    return [
        "",
        "Gatekeeper's CPU per pod over no policy: the generated policies' "
        f"{count} mutators **{split['mutators']:.2f} ms** (mutators only over none; the "
        f"reference's one ModifySet {split['reference']:.2f} ms), their constraint "
        f"**{split['constraint']:.2f} ms** as rendered (generated over mutators only)"
        + (
            f", **{split['at_admission']:.2f} ms** judged at admission ({AT_ADMISSION} over "
            "mutators only: its CEL judging the pods as mutated"
            + (f"; its Rego instead, {split['rego']:.2f} ms" if "rego" in split else "")
            + ")"
            if "at_admission" in split
            else ""
        )
        + ". "
        f"Mutators only / reference: {_ratio(gk['stats'], MUTATORS, 'p50')} at p50, "
        f"{_ratio(gk['stats'], MUTATORS, 'p99')} at p99"
        + "".join(
            f"; {name} / reference: {_ratio(gk['stats'], name, 'p50')} at p50, "
            f"{_ratio(gk['stats'], name, 'p99')} at p99"
            for name in (AT_ADMISSION, REGO)
            if name in gk["stats"]
        )
        + ".",
    ]


def _ratio(stats: dict[str, dict[str, Any]], name: str, q: str) -> str:
    return f"{stats[name][q] / stats[REFERENCE][q]:.2f}x"


def report_lines(gk: dict[str, Any]) -> list[str]:
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(gk["kinds"].items()))
    enforcement = ", ".join(gk["enforcement"]) or "none"
    return [
        "Pod creation through kube-apiserver with Gatekeeper's controller-manager (v3.23.1, "
        "out of cluster, mutation enabled; its webhooks as released: failurePolicy Ignore, "
        "timeouts 1 s for mutation and 3 s for validation) on the same "
        f"{gk['pods']} pods of group `{gk['group']}` of the {gk['fleet']} fleet, measured the "
        f"same way ({gk['rounds']} rounds"
        + (f", one pod started every {gk['pace'] * 1000:g} ms at most" if gk.get("pace") else "")
        + "). Generated: the group's rendered Gatekeeper "
        f"policies ({kinds}; constraint enforcementAction {enforcement}"
        + (
            " (dryrun at Gatekeeper's audit and gator only: its webhook skips the constraint)"
            if gk["enforcement"] == ["scoped"]
            else ", which Gatekeeper's webhook evaluates"
        )
        + "); reference: one ModifySet that adds one toleration to every "
        "pod; none: Gatekeeper running, no policy (its webhooks are registered for every "
        "resource, so the API server still calls both)"
        + (f"; {MUTATORS}: the generated mutators alone" if MUTATORS in gk["stats"] else "")
        + (
            f"; {AT_ADMISSION}: as gatekeeper.auditAtAdmission renders them (the constraint "
            "dryrun, judged on the webhook too, by its K8sNativeValidation CEL, which "
            "Gatekeeper prefers)"
            if AT_ADMISSION in gk["stats"]
            else ""
        )
        + (
            f"; {REGO}: those with the ConstraintTemplate's Rego alone (what Gatekeeper runs "
            "with its native validation off)"
            if REGO in gk["stats"]
            else ""
        )
        + ". A pod not `changed` by a mutating "
        "configuration, or one at 1 s or more, may have been admitted as sent (fail open).",
        "",
        *admission_report.table(gk["stats"], [c for c in CONFIGS if c in gk["stats"]]),
        "",
        f"Generated / reference: **{gk['p50_ratio']:.2f}x** at p50, "
        f"**{gk['p99_ratio']:.2f}x** at p99"
        + (
            f" (p50 / reference, {admission_report.spread(gk['round_p50_ratios'])})"
            if gk.get("round_p50_ratios")
            else ""
        )
        + ".",
        *_split_lines(gk),
    ]
