"""topogen's pod model against the pods each operator's controller really creates.

For every case under cases/: the pods topogen synthesises from manifest.yaml (the
operator's object, and a TrainJob's runtime) are, pod for pod, the pods of pods.yaml
(labels the controllers draw at random left out), and each plays the role and belongs to
the job case.yaml says, under the profile the kind implies.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from topogen.config import load_config
from topogen.operators.registry import profile_for

from .kit import NAMES, comparable, expand, load_case, workloads_of, write_config


def _truth(case_name: str, tmp: Path) -> list[tuple[str, object]]:
    case = load_case(case_name)
    cfg = write_config(tmp, case.profile, [case.folder / "pods.yaml"], name="truth.yaml")
    return [(w.name, t) for w in workloads_of(cfg) for t in expand(w)]


@pytest.mark.parametrize("name", NAMES)
def test_synthesised_pods_are_the_controllers_pods(name: str, tmp_path: Path) -> None:
    case = load_case(name)
    cfg = write_config(tmp_path, case.profile, [case.folder / "manifest.yaml"])
    made = Counter(comparable(t) for w in workloads_of(cfg) for t in expand(w))
    real = Counter(comparable(t) for _, t in _truth(name, tmp_path))
    assert sum(made.values()) == len(case.pods)
    missing, extra = real - made, made - real
    assert not missing and not extra, f"missing {list(missing)}\nextra {list(extra)}"


@pytest.mark.parametrize("name", NAMES)
def test_each_real_pod_plays_its_role_in_its_job(name: str, tmp_path: Path) -> None:
    """The profile's label rules, applied to the real pods, give case.yaml's roles."""
    case = load_case(name)
    cfg = write_config(tmp_path, case.profile, [case.folder / "pods.yaml"], name="truth.yaml")
    profile = profile_for(load_config(cfg).groups[0])
    others = [p["metadata"]["labels"] for p in case.pods]
    for pod in case.pods:
        labels = pod["metadata"]["labels"]
        want = case.role(pod["metadata"]["name"])
        got = profile.role_of(labels) or "none"
        assert got == want, pod["metadata"]["name"]
        if want != "none":
            assert profile.job_of(labels, others) == case.job(pod["metadata"]["name"])


@pytest.mark.parametrize("name", NAMES)
def test_the_anchor_of_every_member_exists_when_it_is_scheduled(name: str, tmp_path: Path) -> None:
    """Each worker's co-location term matches some pod of its job that exists as early
    as the worker does (never a launcher created later, never a finished initializer)."""
    case = load_case(name)
    cfg = write_config(tmp_path, case.profile, [case.folder / "pods.yaml"], name="truth.yaml")
    profile = profile_for(load_config(cfg).groups[0])
    members = [p for p in case.pods if case.role(p["metadata"]["name"]) != "none"]
    late = set(case.meta.get("created_late", ()))
    for pod in members:
        labels = pod["metadata"]["labels"]
        if profile.role_of(labels) != "worker":
            continue
        term = profile.anchor_selector(labels)
        hits = [
            p["metadata"]["name"]
            for p in members
            if term.matches(p["metadata"]["labels"]) and p["metadata"]["name"] not in late
        ]
        assert hits, f"{pod['metadata']['name']}: {term} matches no pod that exists with it"
