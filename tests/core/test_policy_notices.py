"""The policies' warnings and notes, made by the parent while the workers analyse the
groups, are listed where one process lists them: after the inputs' warnings, before the
groups'."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from topogen.config import load_config
from topogen.pipeline.analyze import analyze

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import fleet

UNCARRIED = "example.com/no-pod-carries-this"

_POLICY = {
    "apiVersion": "cilium.io/v2",
    "kind": "CiliumClusterwideNetworkPolicy",
    "metadata": {"name": "selects-on-an-uncarried-label"},
    "spec": {
        "endpointSelector": {"matchLabels": {UNCARRIED: "yes"}},
        "ingress": [{"fromEndpoints": [{}]}],
    },
}


def test_policy_warnings_keep_their_place_with_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet.write_fleet(fleet.FleetSpec("pw", 120, 6, 40, 20, seed=5), tmp_path)
    snapshot = tmp_path / "snapshot"
    (snapshot / "extra-policy.yaml").write_text(yaml.safe_dump(_POLICY), encoding="utf-8")
    config = snapshot / "topogen.yaml"
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    doc["clusters"][0]["networkPolicies"] = ["extra-policy.yaml"]
    # warnings listed after the policies': a custom group's pods it leaves out (listed
    # before the groups are analysed) and a group's in a system namespace (after)
    custom = next(g for g in doc["groups"] if g.get("profile") == "custom")
    custom["coordinatorRoles"] = ["chief"]
    doc["groups"].append({**custom, "name": "in-kube-system",
                          "namespaces": ["kube-system"], "allowEmpty": True})  # fmt: skip
    config.write_text(yaml.safe_dump(doc), encoding="utf-8")

    def notices(jobs: str) -> tuple[list[str], list[str]]:
        monkeypatch.setenv("TOPOGEN_JOBS", jobs)
        report = analyze(load_config(config))
        assert len(report.plans) > 2  # the groups were shared out (where fork exists)
        return [str(w) for w in report.warnings], [str(n) for n in report.notes]

    serial, shared = notices("1"), notices("2")
    assert shared == serial
    warnings = serial[0]
    policy = next(i for i, w in enumerate(warnings) if UNCARRIED in w)
    left_out = next(i for i, w in enumerate(warnings) if "it is no member of the group" in w)
    system = next(i for i, w in enumerate(warnings) if "system namespace kube-system" in w)
    assert policy < left_out < system
