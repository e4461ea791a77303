"""`topogen render`: the analysis and plan (analyze.py), then every backend's files for
every cluster: each group's policies and CLI tests, the signals, the workload patches and
the Kustomize tree, shared out among the cores on a fleet (parallel.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from topogen.config import TopogenConfig
from topogen.errors import Refusal
from topogen.pipeline.analyze import AnalysisReport, ClusterAnalysis, analyze, largest_first
from topogen.pipeline.inputs import Reading
from topogen.pipeline.parallel import (
    MIN_PLANS,
    Shared,
    map_groups,
    no_cycle_collection,
    workers,
)
from topogen.plan.group_plan import GroupPlan
from topogen.render.base import RenderedFile
from topogen.render.intent import AdmissionIntent, intent_for
from topogen.render.kueue_intent import KueueIntent, kueue_intents
from topogen.render.kustomize import kustomize_files, workload_patch_files
from topogen.render.kyverno import kyverno_policies
from topogen.render.kyverno_tests import kyverno_test_files
from topogen.render.limits import check_limits
from topogen.render.monitoring import render_monitoring
from topogen.render.placements import placement_files

__all__ = ["RenderResult", "render"]

Backend = Callable[[AdmissionIntent], list[RenderedFile]]


@dataclass(frozen=True)
class RenderResult:
    files: tuple[RenderedFile, ...]
    refused: tuple[Refusal, ...]  # groups no domain can hold, with the reason
    report: AnalysisReport


# The other engines' modules are imported when a config uses the engine (start-up: a
# render loads only the backends it runs; Kyverno's, the default, every render loads).


def _gatekeeper(intent: AdmissionIntent, kubernetes_version: str) -> list[RenderedFile]:
    from topogen.render.gatekeeper import gatekeeper_policies

    return gatekeeper_policies(intent, kubernetes_version=kubernetes_version)


def _gatekeeper_tests(intent: AdmissionIntent) -> list[RenderedFile]:
    from topogen.render.gatekeeper_tests import gatekeeper_test_files

    return gatekeeper_test_files(intent)


def _native(intent: AdmissionIntent, kubernetes_version: str) -> list[RenderedFile]:
    from topogen.render.native import native_policies

    return native_policies(intent, kubernetes_version=kubernetes_version)


def _kyverno_legacy(intent: AdmissionIntent) -> list[RenderedFile]:
    from topogen.render.kyverno_legacy import kyverno_legacy_policies

    return kyverno_legacy_policies(intent)


def _engines(kubernetes_version: str = "1.36") -> dict[str, tuple[Backend, Backend | None]]:
    """engine name -> (policies, CLI tests) for a cluster of that Kubernetes version."""
    return {
        "kyverno": (kyverno_policies, kyverno_test_files),
        "gatekeeper": (
            partial(_gatekeeper, kubernetes_version=kubernetes_version),
            _gatekeeper_tests,
        ),
        "native": (partial(_native, kubernetes_version=kubernetes_version), None),
        "kyverno-legacy": (_kyverno_legacy, None),
    }


def _under(prefix: str, files: list[RenderedFile]) -> list[RenderedFile]:
    return [replace(f, path=f"{prefix}/{f.path}") for f in files]


def render(
    cfg: TopogenConfig,
    clusters: list[str] | None = None,
    out: Path | None = None,
    *,
    findings: bool = True,
    reading: Reading | None = None,
) -> RenderResult:
    """Every file of the output tree; `out`: where the last render's tree is (default: the
    config's folder), whose placements the known jobs keep. `findings`: whether the
    report carries each job's findings (`topogen diff` shows them; the files are the
    same without). `reading`: the inputs' read, already begun (analyze)."""
    with no_cycle_collection():  # see pipeline/parallel.py
        return _render(cfg, clusters, out, findings, reading)


def _render(
    cfg: TopogenConfig,
    clusters: list[str] | None,
    out: Path | None,
    findings: bool,
    reading: Reading | None,
) -> RenderResult:
    report = analyze(cfg, clusters, out=out, findings=findings, reading=reading)
    files: list[RenderedFile] = []
    refused: list[Refusal] = []
    group_files, done = _rendered(cfg, report)
    for ca, rendered_groups in zip(report.clusters, group_files, strict=True):
        cluster = cfg.cluster(ca.cluster)
        engines = _engines(cluster.kubernetes_version)
        for plan, rendered in zip(ca.plans, rendered_groups, strict=True):
            if plan.refused:
                refused.append(Refusal(ca.cluster, plan.group.name, plan.refused))
                continue
            if not plan.renders:
                continue
            refused += [
                Refusal(
                    ca.cluster, None, f"engine {engine} is not available in this topogen version"
                )
                for engine in cfg.engines_for(cluster)
                if engine not in engines
            ]
            files += rendered
    patches = {ca.cluster: done[2 * k + 1] for k, ca in enumerate(report.clusters)}
    for k in range(len(report.clusters)):
        files += done[2 * k]
    files += kustomize_files(files, report, cfg, patches)
    files += placement_files([(ca.cluster, ca.plans) for ca in report.clusters])
    check_limits(files, cfg.path)
    return RenderResult(tuple(sorted(files, key=lambda f: f.path)), tuple(refused), report)


def _rendered(
    cfg: TopogenConfig, report: AnalysisReport
) -> tuple[list[list[list[RenderedFile]]], list[list[RenderedFile]]]:
    """Per cluster, each group's policy files (in plan order); then per cluster its
    signals and its workload patches. All of it in one share-out among the cores on a
    fleet (parallel.py): the signals and the patches (a few tenths of a second each
    there) claimed first, then the groups with the most jobs; the items in the order one
    process computes them (so an error is the one it would raise)."""
    work: list[Callable[[], list[RenderedFile]]] = []
    jobs: list[int] = []  # per group: its jobs
    for ca in report.clusters:
        count = Counter(ja.job.config_group for ja in ca.jobs)
        for plan in ca.plans:
            work.append(partial(_plan_files, cfg, ca.cluster, plan))
            jobs.append(count[plan.group.name])
    groups = len(work)
    for ca in report.clusters:
        work += [partial(_monitoring, ca, cfg), partial(workload_patch_files, ca, report, cfg)]
    # each cluster's patches, then its signals, then the groups, the most jobs first
    order = [i for k in range(groups, len(work), 2) for i in (k + 1, k)] + largest_first(jobs)
    procs = max(workers(sum(jobs)), workers(groups, minimum=MIN_PLANS))
    done = map_groups(lambda i: work[i](), len(work), procs, Shared(), order)
    per_cluster: list[list[list[RenderedFile]]] = []
    at = 0
    for ca in report.clusters:
        per_cluster.append(done[at : at + len(ca.plans)])
        at += len(ca.plans)
    return per_cluster, done[groups:]


def _plan_files(cfg: TopogenConfig, cluster_name: str, plan: GroupPlan) -> list[RenderedFile]:
    """One group's policies and CLI tests for every engine of its cluster: its pods', and
    its Kueue jobs' (kueue_files)."""
    if not plan.renders:
        return []
    out = kueue_files(cfg, cluster_name, plan)
    if not plan.enforceable:
        return out
    cluster = cfg.cluster(cluster_name)
    engines = _engines(cluster.kubernetes_version)
    intent = intent_for(
        plan,
        cfg.validation_action_for(cluster),
        api_server_validation=cfg.kyverno.generate_validating_admission_policy,
        audit_at_admission=cfg.kyverno.audit_at_admission,
    )
    for engine in cfg.engines_for(cluster):
        engine_intent = replace(intent, audit_at_admission=cfg.audit_at_admission_for(engine))
        for backend in engines.get(engine, ()):
            if backend is not None:
                out += _under(f"policies/{cluster_name}/{engine}", backend(engine_intent))
    return out


# engine -> its policies for a group's Kueue jobs on a cluster of that Kubernetes version
# (an engine not listed renders none: see the README's Kueue section)
def _kyverno_kueue(ki: KueueIntent, _version: str) -> list[RenderedFile]:
    from topogen.render.kyverno_kueue import kyverno_kueue_policies

    return kyverno_kueue_policies(ki)


def _native_kueue(ki: KueueIntent, kubernetes_version: str) -> list[RenderedFile]:
    from topogen.render.native_kueue import native_kueue_policies

    return native_kueue_policies(ki, kubernetes_version)


KUEUE_ENGINES: dict[str, Callable[[KueueIntent, str], list[RenderedFile]]] = {
    "kyverno": _kyverno_kueue,
    "native": _native_kueue,
}


def kueue_files(cfg: TopogenConfig, cluster_name: str, plan: GroupPlan) -> list[RenderedFile]:
    """The job policies of the group's jobs that Kueue's TAS places, per engine."""
    cluster = cfg.cluster(cluster_name)
    intents = kueue_intents(
        plan,
        cfg.validation_action_for(cluster),
        audit_at_admission=cfg.kyverno.audit_at_admission,
    )
    out: list[RenderedFile] = []
    for engine in cfg.engines_for(cluster):
        backend = KUEUE_ENGINES.get(engine)
        if backend is not None:
            for ki in intents:
                out += _under(
                    f"policies/{cluster_name}/{engine}", backend(ki, cluster.kubernetes_version)
                )
    return out


def _monitoring(ca: ClusterAnalysis, cfg: TopogenConfig) -> list[RenderedFile]:
    return list(render_monitoring(ca, cfg))
