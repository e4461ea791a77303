"""Rules that depend on topogen.yaml alone are checked once, in config.py: `analyze` refuses
every config `render` refuses for them, with the same one line naming topogen.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from core.test_cli import good_tree
from helpers import config_doc
from topogen.cli import main


def _tree(tmp_path: Path, doc: dict[str, Any]) -> Path:
    return good_tree(tmp_path, **{"topogen.yaml": doc})


def _with(group: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    cluster = top.pop("cluster", None)
    doc = config_doc(group, cluster=cluster)
    doc.update(top)
    return doc


LONG = "g" * 47  # topogen-<47>-validate: 64 bytes, over the 63 Kyverno allows
REFUSED = {
    "gatekeeper-on-an-old-cluster": (
        _with(engines=["gatekeeper"], cluster={"kubernetesVersion": "1.30"}),
        "clusters.0.kubernetesVersion: engine gatekeeper needs Kubernetes 1.31 or later",
    ),
    "gatekeeper-of-the-cluster": (
        _with(cluster={"kubernetesVersion": "1.28", "engines": ["native", "gatekeeper"]}),
        "engine gatekeeper needs Kubernetes 1.31 or later (matchLabelKeys in pod affinity); "
        "the cluster is configured as 1.28",
    ),
    "kyverno-group-name": (
        _with({"name": LONG}),
        "groups.0.name: engine kyverno names a ValidatingPolicy",
    ),
    "kyverno-legacy-group-name": (
        _with({"name": LONG}, engines=["kyverno-legacy"]),
        "use a group name of at most 46 characters",
    ),
    "port": (_with({"ports": ["70000"]}), "groups.0.ports: '70000' is not a port range"),
    "label-key": (
        _with({"identityLabel": "a..b/zone"}),
        "groups.0.identityLabel: String should match pattern",
    ),
    "label-key-length": (
        _with({"identityLabel": "z" * 64}),
        "groups.0.identityLabel: label key 'zzz",
    ),
    "unknown-key": (_with({"colour": "blue"}), "unknown key groups.0.colour"),
}


def _run(command: str, config: Path) -> Result:
    out = ["--out", str(config.parent / "out")] if command == "render" else []
    return CliRunner().invoke(main, [command, "-c", str(config), *out])


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_analyze_refuses_what_render_refuses_with_the_same_line(tmp_path: Path, case: str) -> None:
    doc, says = REFUSED[case]
    config = _tree(tmp_path, doc)
    analyzed, rendered = _run("analyze", config), _run("render", config)
    assert (analyzed.exit_code, rendered.exit_code) == (2, 2), (analyzed.output, rendered.output)
    assert analyzed.stderr == rendered.stderr
    (line,) = analyzed.stderr.splitlines()
    assert line.startswith("topogen: error: ") and "topogen.yaml: " in line, line
    assert says in line, line
    assert not (tmp_path / "out").exists()  # nothing written


@pytest.mark.parametrize(
    "doc",
    [
        _with({"name": "g" * 46}, engines=["kyverno", "kyverno-legacy"]),
        _with(engines=["gatekeeper"], cluster={"kubernetesVersion": "1.31"}),
    ],
    ids=["46-character-group", "gatekeeper-on-1.31"],
)
def test_the_limits_themselves_are_accepted(tmp_path: Path, doc: dict[str, Any]) -> None:
    config = _tree(tmp_path, doc)
    for command in ("analyze", "render"):
        result = _run(command, config)
        assert result.exit_code in (0, 1), result.output
