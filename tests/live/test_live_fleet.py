"""A small fleet under the real kube-scheduler (the measure of bench/schedbench.py).

A generated four-zone cluster with static-label, stamped-label and open groups; each
plan's native admission policies on a real kube-apiserver, pods created as their
controllers would, bound by the real kube-scheduler:
- spread keeps at least 90% of the best packing's GPUs busy with whole jobs, pin fewer;
- where the jobs need more GPUs than the cluster has, the jobs the packing queues wait
  whole (anti-affinity to the packed jobs they would take GPUs from): none is partly bound;
- pin and spread never leave a job split across zones, bound outside its allowed zones
  or topogen's, with an identity label naming another zone, or denied between its pods;
- over time (jobs arriving and leaving, some unknown to the render), every job runs, no
  sooner than the exact minimum makespan allows, and what held the waiting jobs back
  accounts for every job's wait.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tooling import REPO, require_tool

sys.path.insert(0, str(REPO / "bench"))
import schedfleet as sf
import schedrun as sr
from fleet_kit import Client, PodWatch
from live_harness import ControlPlane

STATIC = sf.SchedSpec(1, 4, load=1.0)  # the jobs about fill the GPUs
QUEUED = sf.SchedSpec(21, 4, load=1.5)  # half as many GPUs again: some jobs queue
TIMED = sf.SchedSpec(11, 4, load=1.0, known=0.7, max_jobs=10)


@pytest.fixture(scope="module")
def fleet_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    for tool in ("etcd", "kube-apiserver", "kube-scheduler"):
        require_tool(tool)
    cp = sr.start(tmp_path_factory.mktemp("fleet-plane"))
    try:
        yield cp
    finally:
        cp.stop()


@pytest.mark.slow
@pytest.mark.tools
def test_spread_keeps_the_gpus_busy_and_never_splits_a_job(
    fleet_plane: ControlPlane, tmp_path: Path
) -> None:
    sc = sf.generate(STATIC)
    bound = sr.static_bound(sc)
    assert bound.exact and bound.gpus > 0
    sr.prepare(fleet_plane, sc)
    client = Client(fleet_plane)
    with PodWatch(fleet_plane) as watch:
        runs = {p: sr.static_run(fleet_plane, client, watch, sc, p, tmp_path) for p in sr.PLANS}
    for plan in ("pin", "spread"):
        assert runs[plan].violations == [], (plan, runs[plan].violations[:5])
        assert runs[plan].refused == ()
        assert runs[plan].count("split") == 0
    useful = {p: r.gpus("useful") for p, r in runs.items()}
    assert runs["spread"].count("partial") == 0
    assert useful["spread"] >= 0.9 * bound.gpus, (useful, bound.gpus)
    assert useful["spread"] > useful["pin"], useful
    assert useful["spread"] > useful["none"], useful
    # unconstrained, the scheduler splits jobs across zones or puts them where traffic is denied
    assert runs["none"].count("split") > 0
    assert sum(r.pods for r in runs.values()) == 3 * sum(len(sf.pods_of(j)) for j in sc.jobs)


@pytest.mark.slow
@pytest.mark.tools
def test_queued_jobs_wait_whole_and_the_packed_jobs_run(
    fleet_plane: ControlPlane, tmp_path: Path
) -> None:
    sc = sf.generate(QUEUED)
    bound = sr.static_bound(sc)
    rendered = sr.render(sc, "spread", sc.jobs, tmp_path / "look")
    assert "podAntiAffinity" in json.dumps(rendered.objects)  # the queued jobs' exclusions
    sr.prepare(fleet_plane, sc)
    client = Client(fleet_plane)
    with PodWatch(fleet_plane) as watch:
        run = sr.static_run(fleet_plane, client, watch, sc, "spread", tmp_path)
    assert run.violations == [] and run.count("split") == 0, run.violations[:5]
    assert run.count("partial") == 0, [o.job.key for o in run.outcomes if o.state == "partial"]
    assert run.count("pending") > 0  # the queued jobs wait
    assert run.gpus("useful") >= 0.9 * bound.gpus, (run.gpus("useful"), bound.gpus)


@pytest.mark.slow
@pytest.mark.tools
def test_over_time_every_job_runs_known_or_not(fleet_plane: ControlPlane, tmp_path: Path) -> None:
    sc = sf.generate(TIMED)
    assert any(not j.known for j in sc.jobs) and any(j.known for j in sc.jobs)
    sr.prepare(fleet_plane, sc)
    client = Client(fleet_plane)
    with PodWatch(fleet_plane) as watch:
        run = sr.timed_run(fleet_plane, client, watch, sc, "spread", tmp_path)
    assert run.violations == [], run.violations[:5]
    assert run.stuck == 0
    assert {o.state for o in run.outcomes} == {"useful"}
    work = sum(j.gpus * j.duration for j in sc.jobs)
    assert run.useful_work == pytest.approx(work)
    assert run.makespan >= sr.min_makespan(sc).bound >= sr.makespan_bound(sc)
    # what held the waiting jobs back covers every job's wait, GPUs x time, once
    waited = sum(j.gpus * (run.starts[j.key] - j.arrival) for j in sc.jobs)
    reasons = sum(run.waits.get(k, 0.0) for k in ("home", "elsewhere", "none"))
    assert reasons == pytest.approx(waited, abs=1e-6)
    assert set(run.waits) <= set(sr.WAIT_REASONS)
