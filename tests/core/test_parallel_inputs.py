"""pipeline/inputs.py: the workloads read in a forked copy while the first cluster's nodes
are read here give the report one process gives, and the same error first."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from topogen.config import load_config
from topogen.errors import InputError
from topogen.pipeline import inputs
from topogen.pipeline.analyze import analyze
from topogen.pipeline.format import analysis_json
from topogen.pipeline.parallel import in_background

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import fleet


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fleet")
    fleet.write_fleet(fleet.FleetSpec("p", 60, 3, 40, 8, seed=3), out)
    return out / "snapshot"


def _analyze(config: Path, monkeypatch: pytest.MonkeyPatch, jobs: str) -> str:
    monkeypatch.setenv("TOPOGEN_JOBS", jobs)
    monkeypatch.setattr(inputs, "MIN_INPUT_BYTES", 0)  # a small fleet forks too
    return analysis_json(analyze(load_config(config)))


def _error(config: Path, monkeypatch: pytest.MonkeyPatch, jobs: str) -> str:
    with pytest.raises(InputError) as err:
        _analyze(config, monkeypatch, jobs)
    return str(err.value)


def test_inputs_read_on_two_cores_give_the_same_report(
    fleet_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = fleet_dir / "topogen.yaml"
    assert _analyze(config, monkeypatch, "2") == _analyze(config, monkeypatch, "1")


@pytest.mark.parametrize("broken", [("workloads.yaml",), ("cluster.yaml",), ("workloads.yaml", "cluster.yaml")])  # fmt: skip
def test_the_first_error_is_the_one_reading_in_turn_gives(
    fleet_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: tuple[str, ...]
) -> None:
    copy = tmp_path / "fleet"
    shutil.copytree(fleet_dir, copy)
    for name in broken:
        (copy / name).write_text("kind: [unclosed\n", encoding="utf-8")
    config = copy / "topogen.yaml"
    serial = _error(config, monkeypatch, "1")
    assert broken[0] in serial
    assert _error(config, monkeypatch, "2") == serial


BAD_POLICY = """apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: bad, namespace: default}
spec:
  podSelector: {matchLabels: {app: "not a label value"}}
"""


@pytest.mark.parametrize("workloads_broken", [False, True])
def test_a_policy_error_comes_after_a_workload_error(
    fleet_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workloads_broken: bool
) -> None:
    """The policies are read while the workloads are: their error still comes second."""
    copy = tmp_path / "fleet"
    shutil.copytree(fleet_dir, copy)
    (copy / "bad-policy.yaml").write_text(BAD_POLICY, encoding="utf-8")
    config = copy / "topogen.yaml"
    text = config.read_text(encoding="utf-8").replace(
        "networkPolicies: []", "networkPolicies: [bad-policy.yaml]"
    )
    assert "bad-policy.yaml" in text
    config.write_text(text, encoding="utf-8")
    if workloads_broken:
        (copy / "workloads.yaml").write_text("kind: [unclosed\n", encoding="utf-8")
    serial = _error(config, monkeypatch, "1")
    assert ("workloads.yaml" in serial) == workloads_broken
    assert workloads_broken or "bad-policy.yaml" in serial
    assert _error(config, monkeypatch, "2") == serial


def test_a_copy_that_fails_leaves_the_work_to_the_caller() -> None:
    calls: list[int] = []

    def unpicklable() -> object:
        calls.append(1)
        return lambda: None  # a lambda does not pickle: the copy hands back nothing

    got = in_background(unpicklable, 2)()
    assert callable(got) and calls == [1]  # run here: the copy's call was in the copy

    def fails() -> None:
        raise ValueError("no such input")

    with pytest.raises(ValueError, match="no such input"):
        in_background(fails, 2)()
    assert in_background(lambda: {"a": [1, 2]}, 2)() == {"a": [1, 2]}
