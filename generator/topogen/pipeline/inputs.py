"""The inputs of a run, read on two cores when they are large: the workloads in a forked
copy of the process (parallel.in_background) while this one reads the first cluster's
nodes and policy objects, which do not need them; its policies and the rest of its inputs
(toServices rules read the workloads' Services, Kueue objects may lie beside them) once
the workloads are back. Errors come out as when everything is read in turn: a workload
error first (the copy's failure is read again here, which raises it), then the cluster's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from topogen.config import ClusterConfig, TopogenConfig
from topogen.model import PolicySet
from topogen.pipeline.parallel import in_background, workers
from topogen.sources.loader import (
    ClusterSources,
    WorkloadInputs,
    load_workload_inputs,
    read_cluster_policies,
    read_cluster_sources,
)
from topogen.sources.yamlio import new_run

__all__ = ["MIN_INPUT_BYTES", "EarlyCluster", "Reading", "start_reading"]

MIN_INPUT_BYTES = 1 << 20  # below this much input a second process costs more than it saves


@dataclass(frozen=True)
class EarlyCluster:
    """What read_inputs read of the first cluster: its sources, and its policies when
    they hold for the workloads' Services (else None: read them with those)."""

    sources: ClusterSources
    policies: PolicySet | None


Reading = Callable[[], tuple[WorkloadInputs, EarlyCluster | None]]


def start_reading(cfg: TopogenConfig, clusters: Sequence[str] | None) -> Reading:
    """The reading of the inputs, begun. Called (once), the function returned gives the
    workloads, and what the first of the clusters named (default: all) reads before its
    Namespaces, when every name is the config's (None: it is read later, in turn, after
    the error about a name). On a large input the workloads' copy is forked now: the
    caller imports the stages it runs meanwhile (a command's start-up)."""
    new_run()  # the files as they are now (yamlio: a file read twice in a run is read once)
    known = {c.name: c for c in cfg.clusters}
    names = list(clusters) if clusters else list(known)
    first = known[names[0]] if names and all(n in known for n in names) else None
    paths = [*cfg.workloads, *(first.nodes if first is not None else ())]
    procs = workers(_size(cfg.base_dir, paths), minimum=MIN_INPUT_BYTES)
    if first is None or procs < 2:
        return lambda: (load_workload_inputs(cfg), None)
    return partial(
        _read_beside, cfg, first, in_background(partial(load_workload_inputs, cfg), procs)
    )


def _read_beside(
    cfg: TopogenConfig, first: ClusterConfig, workloads: Callable[[], WorkloadInputs]
) -> tuple[WorkloadInputs, EarlyCluster]:
    """The first cluster's sources and policies, read while the copy reads the workloads."""
    try:
        sources = read_cluster_sources(cfg, first)
    except Exception:
        workloads()  # raises the workloads' error, which comes first
        raise
    try:  # meanwhile: the policies as they are without Services beside the workloads
        policies: PolicySet | None = read_cluster_policies(sources)
    except Exception:  # said, if still true, when read with the workloads' Services
        policies = None
    loaded = workloads()
    return loaded, EarlyCluster(sources, None if loaded.services else policies)


def _size(base: Path, paths: Sequence[str]) -> int:
    """The bytes of these files and folders (those that exist: the readers say what not)."""
    total = 0
    for p in paths:
        for f in _files(base / p):
            try:
                total += f.stat().st_size
            except OSError:
                continue
    return total


def _files(path: Path) -> Iterator[Path]:
    if path.is_file():
        yield path
    elif path.is_dir():
        for root, _, names in os.walk(path):
            for n in names:
                yield Path(root, n)
