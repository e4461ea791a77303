"""Fixtures for the monitoring backend: the zone-split example, its rendered files, promtool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tooling import require_tool
from topogen.config import TopogenConfig, load_config
from topogen.pipeline.analyze import ClusterAnalysis, analyze
from topogen.render.base import RenderedFile
from topogen.render.monitoring import render_monitoring

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "zone-split" / "topogen.yaml"


@pytest.fixture(scope="session")
def promtool() -> Path:
    """The promtool `make tools` built. Missing: skip locally, fail under CI."""
    return require_tool("promtool")


@pytest.fixture(scope="session")
def cfg() -> TopogenConfig:
    return load_config(EXAMPLE)


@pytest.fixture(scope="session")
def cluster(cfg: TopogenConfig) -> ClusterAnalysis:
    (only,) = analyze(cfg).clusters
    return only


@pytest.fixture(scope="session")
def files(cluster: ClusterAnalysis, cfg: TopogenConfig) -> dict[str, RenderedFile]:
    return {f.path: f for f in render_monitoring(cluster, cfg)}


@pytest.fixture(scope="session")
def rules(files: dict[str, RenderedFile]) -> dict[str, Any]:
    data = yaml.safe_load(files["monitoring/lab/rules.yaml"].text)
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="session")
def rules_file(files: dict[str, RenderedFile], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rules") / "rules.yaml"
    path.write_text(files["monitoring/lab/rules.yaml"].text, encoding="utf-8")
    return path
