"""The workload patches (for clusters without an admission controller), built with the real
`kubectl kustomize` into each case's manifest: the patched manifest's pods are co-located
as the admission policies would co-locate them (analyze finds nothing left)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from gitops.gitops_kit import kustomize, write_kustomization
from topogen.config import load_config
from topogen.pipeline.analyze import analyze

from .kit import NAMES, load_case, render, write_config
from .test_chain import BAD


@pytest.mark.parametrize("name", NAMES)
def test_patched_manifest_is_co_located(name: str, tmp_path: Path) -> None:
    case = load_case(name)
    config = write_config(tmp_path, case.profile, [case.folder / "manifest.yaml"])
    out = tmp_path / "out"
    render(config, out)
    component = out / "kustomize" / "components" / "workload-patches" / "lab"
    listed = (component / "kustomization.yaml").read_text()
    if name == "trainjob-podspecoverrides":  # v2.0 overrides cannot say affinity: said so
        assert "uses podSpecOverrides (Trainer v2.0)" in listed
        return
    build = tmp_path / "build"
    build.mkdir()
    shutil.copy(case.folder / "manifest.yaml", build / "manifest.yaml")
    write_kustomization(
        build,
        resources=["manifest.yaml"],
        components=["../out/kustomize/components/workload-patches/lab"],
    )
    patched = tmp_path / "patched.yaml"
    patched.write_text(yaml.safe_dump_all(kustomize(build)))
    report = analyze(
        load_config(write_config(tmp_path, case.profile, [patched], name="after.yaml"))
    )
    assert not [f.message for f in report.findings if f.kind in BAD]
    jobs = {case.job(p) for p in case.members()}
    assert {j.job.job for c in report.clusters for j in c.jobs} == jobs
