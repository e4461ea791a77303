"""`topogen render`: analysis -> plan -> every backend's files for every cluster."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import partial

from topogen.config import TopogenConfig
from topogen.parallel import Shared, map_groups, workers
from topogen.pipeline import AnalysisReport, analyze, no_cycle_collection
from topogen.render.base import RenderedFile
from topogen.render.gatekeeper import gatekeeper_policies
from topogen.render.gatekeeper_tests import gatekeeper_test_files
from topogen.render.intent import AdmissionIntent, intent_for
from topogen.render.kustomize import kustomize_files
from topogen.render.kyverno import kyverno_policies
from topogen.render.kyverno_tests import kyverno_test_files
from topogen.render.native import native_policies

__all__ = ["RenderResult", "render"]

Backend = Callable[[AdmissionIntent], list[RenderedFile]]
MIN_RENDER_UNITS = 40  # below this many (group, engine) renders one process is faster


@dataclass(frozen=True)
class RenderResult:
    files: tuple[RenderedFile, ...]
    refused: tuple[str, ...]  # groups no domain can hold, with the reason
    report: AnalysisReport


def _engines(kubernetes_version: str = "1.35") -> dict[str, tuple[Backend, Backend | None]]:
    """engine name -> (policies, CLI tests) for a cluster of that Kubernetes version.
    Optional engines load when present."""
    engines: dict[str, tuple[Backend, Backend | None]] = {
        "kyverno": (kyverno_policies, kyverno_test_files),
        "gatekeeper": (
            partial(gatekeeper_policies, kubernetes_version=kubernetes_version),
            gatekeeper_test_files,
        ),
        "native": (partial(native_policies, kubernetes_version=kubernetes_version), None),
    }
    try:
        from topogen.render.kyverno_legacy import kyverno_legacy_policies
    except ImportError:
        pass
    else:
        engines["kyverno-legacy"] = (kyverno_legacy_policies, None)
    return engines


def _under(prefix: str, files: list[RenderedFile]) -> list[RenderedFile]:
    return [replace(f, path=f"{prefix}/{f.path}") for f in files]


def render(cfg: TopogenConfig, clusters: list[str] | None = None) -> RenderResult:
    with no_cycle_collection():  # see pipeline.no_cycle_collection
        return _render(cfg, clusters)


def _render(cfg: TopogenConfig, clusters: list[str] | None) -> RenderResult:
    report = analyze(cfg, clusters)
    files: list[RenderedFile] = []
    refused: list[str] = []
    # (folder, backend, intent): one group's files for one engine, rendered below
    work: list[tuple[str, Backend, AdmissionIntent]] = []
    for ca in report.clusters:
        cluster = cfg.cluster(ca.cluster)
        action = cfg.validation_action_for(cluster)
        engines = _engines(cluster.kubernetes_version)
        for plan in ca.plans:
            if plan.refused:
                refused.append(f"cluster {ca.cluster}: {plan.refused}")
                continue
            if not plan.enforceable:
                continue
            intent = intent_for(plan, action)
            for engine in cfg.engines_for(cluster):
                if engine not in engines:
                    refused.append(
                        f"cluster {ca.cluster}: engine {engine} is not available "
                        "in this topogen version"
                    )
                    continue
                prefix = f"policies/{ca.cluster}/{engine}"
                policies, tests = engines[engine]
                work.append((prefix, policies, intent))
                if tests is not None:
                    work.append((prefix, tests, intent))
        files += _monitoring(ca, cfg)

    def one(i: int) -> list[RenderedFile]:
        prefix, backend, intent = work[i]
        return _under(prefix, backend(intent))

    # independent of each other: shared out among the cores on a fleet (see parallel.py)
    procs = workers(len(work), minimum=MIN_RENDER_UNITS)
    for rendered in map_groups(one, len(work), procs, Shared([], [], _nothing_blocked)):
        files += rendered
    files += kustomize_files(files, report, cfg)
    return RenderResult(tuple(sorted(files, key=lambda f: f.path)), tuple(refused), report)


def _nothing_blocked(group: int, members: tuple[object, ...]) -> Callable[[], Iterator[object]]:
    raise AssertionError("rendered files hold no blocked paths")


def _monitoring(ca: object, cfg: TopogenConfig) -> list[RenderedFile]:
    try:
        from topogen.render.monitoring import render_monitoring
    except ImportError:
        return []
    return list(render_monitoring(ca, cfg))  # type: ignore[arg-type]
