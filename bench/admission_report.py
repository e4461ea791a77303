"""The admission measure's configurations and its report: the names of what bench/admission.py
(Kyverno) and bench/admission_gatekeeper.py measure, the statistics over the rounds, and
the Markdown of its section of bench/RESULTS.md."""

from __future__ import annotations

import math
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import admission_variants as av

CONFIGS = ("none", "reference", "generated")
# the same generated policies changed in one way each, to say where the time goes
ENFORCE = "generated, Enforce"
VARIANTS = {
    ENFORCE: (
        "as kustomize/components/enforce makes them: validationActions [Deny] and "
        "spec.autogen.validatingAdmissionPolicy.enabled (evaluation.admission.enabled), so "
        "Kyverno generates a "
        "ValidatingAdmissionPolicy the API server runs and registers no webhook for the "
        "ValidatingPolicy"
    ),
    "generated, Enforce on Kyverno's webhook": (
        "validationActions [Deny] with kyverno.generateValidatingAdmissionPolicy false "
        "(Kyverno writes no admission report for a Deny policy)"
    ),
    "generated, no admission reports": "label reports.kyverno.io/disabled on each policy",
    "generated, mutations only": (
        "the MutatingPolicy alone, no ValidatingPolicy: the mutation path Enforce keeps "
        "on Kyverno's webhook"
    ),
    "generated, Audit at admission": (
        "kyverno.auditAtAdmission true: the ValidatingPolicy's evaluation.admission.enabled, "
        "Audit on Kyverno's webhook and its admission report written before Kyverno answers"
    ),
}
MUTATIONS = "generated, mutations only"
REFERENCE_NO_REPORT = "reference, no admission report"
# the reference under Enforce: what any ValidatingAdmissionPolicy costs in the API server
REFERENCE_ENFORCE = "reference, Enforce"
# the table's rows: the configurations, then the generated variants, then the reference's
ORDER = (*CONFIGS, *VARIANTS, REFERENCE_NO_REPORT, REFERENCE_ENFORCE, av.STATIC)
SLOW = 1.0  # s: Gatekeeper's mutation webhook timeout (its validation's is 3 s)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest rank: the smallest value with at least q% of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def ratios(stats: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Generated over the reference; where measured, generated under Enforce over the
    reference and over the reference under Enforce (like for like: both with a
    ValidatingAdmissionPolicy in the API server)."""
    out: dict[str, Any] = {"stats": stats}
    for key, name, over in (
        ("", "generated", "reference"),
        ("enforce_", ENFORCE, "reference"),
        ("enforce_ref_", ENFORCE, REFERENCE_ENFORCE),
    ):
        if name in stats and over in stats:
            for q in ("p50", "p99"):
                out[f"{key}{q}_ratio"] = stats[name][q] / stats[over][q]
            per_round = round_ratios(stats[name], stats[over])
            if per_round:
                out[f"{key}round_p50_ratios"] = per_round
    return out


def round_ratios(got: dict[str, Any], ref: dict[str, Any]) -> list[float]:
    """Each round's p50 over the reference's in the same round."""
    return [g / r for g, r in zip(got.get("round_p50", []), ref.get("round_p50", []), strict=True)]


def spread(per_round: Sequence[float]) -> str:
    """`median M, rounds A to B` of per-round ratios: how far one round's verdict moves."""
    return (
        f"per round {statistics.median(per_round):.2f}x median, "
        f"{min(per_round):.2f}x to {max(per_round):.2f}x"
    )


def table(stats: dict[str, dict[str, Any]], names: Sequence[str]) -> list[str]:
    """Per configuration: timed pods, those admission changed, those that took SLOW s or
    more, webhook calls and admission reports per pod, the latencies and their ratios to
    no policy."""
    none = stats["none"]
    procs = list(none.get("cpu", {}))
    out = [
        f"| policies | pods | changed | >= {SLOW:g} s | webhook calls / pod | reports / pod "
        "| p50 ms | p99 ms | mean ms | p50 / none | p99 / none |"
        + "".join(f" {n} CPU ms / pod |" for n in procs),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * len(procs),
    ]
    for name in names:
        s = stats[name]
        out.append(
            f"| {name} | {s['count']} | {s['changed']} | {s['slow']} | {s.get('calls', 0):.2f} "
            f"| {s.get('reports', 0):.2f} | {s['p50']:.2f} "
            f"| {s['p99']:.2f} | {s['mean']:.2f} | {s['p50'] / none['p50']:.2f} "
            f"| {s['p99'] / none['p99']:.2f} |" + "".join(f" {s['cpu'][n]:.2f} |" for n in procs)
        )
    return out


def _paced(adm: dict[str, Any]) -> str:
    pace = adm.get("pace", 0)
    return f", at most one started every {pace * 1000:g} ms" if pace else ", back to back"


def _spreads(adm: dict[str, Any]) -> str:
    """The per-round p50 ratios behind the pooled ones, where measured."""
    parts = [
        f"{what}: {spread(adm[key])}"
        for key, what in (
            ("round_p50_ratios", "as rendered"),
            ("enforce_round_p50_ratios", "Enforce"),
        )
        if adm.get(key)
    ]
    return f" (p50 / reference, {'; '.join(parts)})" if parts else ""


def report_lines(adm: dict[str, Any]) -> list[str]:
    stats = adm["stats"]
    lines = [
        f"Pod creation through kube-apiserver with Kyverno's admission controller (v1.19.1, "
        f"out of cluster) on its webhook path: {adm['pods']} pods of group `{adm['group']}` "
        f"of the {adm['fleet']} fleet (coordinators and workers, as their operators create "
        "them) per configuration, one at a time over one keep-alive connection"
        + _paced(adm)
        + ", the "
        f"configurations taking turns in {adm['rounds']} rounds (their order rotated each "
        "round and reversed every other, a second's pause after each switch); the API server's "
        "ValidatingAdmissionPolicy plugin on, as in a cluster. Generated: "
        f"{', '.join(adm['policies'])}, as rendered (validationAction Audit, the default: "
        "the ValidatingPolicy in the background scans of Kyverno's reports controller only, "
        "off the pods' path; the reports controller does not run here, so its scans' CPU is "
        "not on this machine during the rounds); reference: one MutatingPolicy that adds one "
        "toleration to every pod; none: Kyverno running, no policy (Kyverno then registers "
        "no resource webhook, so the API server calls nothing). `changed`: pods admission "
        "returned with other labels, tolerations, affinity or nodeSelector than sent; "
        "`webhook calls / pod` and `reports / pod`: admission webhook calls on pod creation "
        "and Kyverno admission reports created, from the API server's metrics over the timed "
        "pods.",
        "",
        *table(stats, [n for n in ORDER if n in stats]),
    ]
    ref = stats["reference"]
    lines += [
        "",
        f"Generated / reference: **{adm['p50_ratio']:.2f}x** at p50, "
        f"**{adm['p99_ratio']:.2f}x** at p99"
        + (
            f"; as the enforce Component makes them (Kyverno's generated "
            f"ValidatingAdmissionPolicy validating): **{adm['enforce_p50_ratio']:.2f}x** at "
            f"p50, **{adm['enforce_p99_ratio']:.2f}x** at p99"
            if "enforce_p50_ratio" in adm
            else ""
        )
        + _spreads(adm)
        + ". The variants (each the generated policies changed in one way, measured in the "
        "same rounds) say where the time goes:",
        "",
        *(
            f"- {name} ({why}): {stats[name]['p50'] / ref['p50']:.2f}x the reference at p50, "
            f"{stats[name]['p99'] / ref['p99']:.2f}x at p99."
            for name, why in (*VARIANTS.items(), *av.DESCRIPTIONS.items())
            if name in stats
        ),
        *(
            [
                f"- {REFERENCE_NO_REPORT} (the reference labelled reports.kyverno.io/disabled: "
                "what its one admission report per pod costs): "
                f"{stats[REFERENCE_NO_REPORT]['p50'] / ref['p50']:.2f}x the reference at p50, "
                f"{stats[REFERENCE_NO_REPORT]['p99'] / ref['p99']:.2f}x at p99."
            ]
            if REFERENCE_NO_REPORT in stats
            else []
        ),
        *(
            [
                f"- {REFERENCE_ENFORCE} (the reference with a ValidatingPolicy of one "
                "expression, enforced as the enforce Component does it: what any "
                "ValidatingAdmissionPolicy costs in the API server): "
                f"{stats[REFERENCE_ENFORCE]['p50'] / ref['p50']:.2f}x the reference at p50, "
                f"{stats[REFERENCE_ENFORCE]['p99'] / ref['p99']:.2f}x at p99. Generated, "
                f"Enforce over it: **{adm['enforce_ref_p50_ratio']:.2f}x** at p50, "
                f"**{adm['enforce_ref_p99_ratio']:.2f}x** at p99"
                + (
                    f" ({spread(adm['enforce_ref_round_p50_ratios'])})"
                    if adm.get("enforce_ref_round_p50_ratios")
                    else ""
                )
                + "."
            ]
            if "enforce_ref_p50_ratio" in adm
            else []
        ),
        "",
        "Where the time goes: the API server calls Kyverno once per pod and policy kind (one "
        "MutatingPolicy webhook, and the ValidatingPolicy's under Audit at admission): Kyverno v1.19.1 "
        "registers a MutatingPolicy's webhook without the policy's reinvocationPolicy "
        "(pkg/controllers/webhook/controller.go builds it from the validating rules; the "
        "API server's default, Never), so nothing is called twice. Each admission report is "
        "one more write through the API server per pod; the ValidatingPolicy's is written "
        "before Kyverno answers (pkg/webhooks/resource/vpol/handler.go waits for it), the "
        "MutatingPolicy's after. Under Audit at admission the generated set writes two "
        "reports per pod, the reference one; as rendered, one. Within Kyverno, a "
        "MutatingPolicy's mutations cost one encode-patch-decode of the pod each "
        "(pkg/cel/policies/mpol/compiler/json.go): render/kyverno.py makes each role's "
        "patches one mutation (the affinity patches one list, after an add of an empty "
        "/spec/affinity where the pod has none). In the API server, each webhook with "
        "matchConditions converts the pod to unstructured and evaluates them for every pod "
        "its selectors let in (k8s.io/apiserver pkg/admission/plugin/cel): one "
        "MutatingPolicy for both roles is one such webhook per group pod, not two.",
        "",
        "Kyverno v1.19.1 loses the status write that takes a generated policy off its webhook "
        "when it conflicts with its status controller's (no retry): the bench then deletes "
        "the generated binding for Kyverno to reconcile again (tests/live/kyverno_harness.py "
        f"`generated`); it did so {adm.get('nudged', 0)} time(s) in this run.",
    ]
    return lines
