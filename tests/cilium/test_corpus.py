"""Every policy YAML the pinned cilium/cilium module ships (examples/ and Documentation/).

topogen reads each file without a traceback; each policy object in it is accepted by
topogen exactly when Cilium's agent code accepts it, and a rejected one is rejected
with one clear line naming the object.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import oracle
import pytest
from click.testing import CliRunner

from topogen.cli import main
from topogen.errors import InputError
from topogen.manifest import KubeObject
from topogen.sources.loader import read_objects
from topogen.sources.policies import POLICY_KINDS, read_policies
from topogen.sources.scope import namespace_of

pytestmark = pytest.mark.tools

_POLICY_KIND = re.compile(
    r"kind\"?\s*:\s*\"?(CiliumNetworkPolicy|CiliumClusterwideNetworkPolicy|NetworkPolicy)\b"
)
_NAMESPACED = {"CiliumNetworkPolicy", "NetworkPolicy"}


@cache
def corpus() -> tuple[Path, ...]:
    root = oracle.cilium_source()
    files = []
    for sub in ("examples", "Documentation"):
        for path in sorted((root / sub).rglob("*")):
            if (
                path.suffix in (".yaml", ".yml", ".json")
                and path.is_file()
                and _POLICY_KIND.search(path.read_text(encoding="utf-8", errors="replace"))
            ):
                files.append(path)
    return tuple(files)


def _as_stored(obj: KubeObject) -> dict[str, Any]:
    """The object as the API server would store it: namespaced kinds in the namespace
    kubectl applies them to (topogen's own rule, sources.objects.namespace_of)."""
    body = json.loads(json.dumps(obj.body, default=str))
    if obj.kind in _NAMESPACED:
        body.setdefault("metadata", {})["namespace"] = namespace_of(obj)
    return body


def test_corpus_is_the_module_s() -> None:
    files = corpus()
    assert len(files) >= 80, files  # v1.20.2 ships 84 such files
    assert any("examples/policies/l3" in str(f) for f in files)


def test_every_file_reads_without_a_traceback(tmp_path: Path) -> None:
    runner = CliRunner()
    for path in corpus():
        result = runner.invoke(
            main, ["connectivity", "--policies", str(path), "--workloads", str(path)]
        )
        assert result.exit_code in (0, 2), (path, result.output, result.exception)
        if result.exit_code == 2:
            lines = [ln for ln in result.output.splitlines() if ln.strip()]
            assert len(lines) == 1 and str(path.name) in lines[0], (path, result.output)


def test_each_policy_accepted_exactly_when_cilium_accepts_it() -> None:
    objects: list[tuple[Path, KubeObject]] = []
    for path in corpus():
        try:
            objs = read_objects([str(path)], Path("/"), "corpus")
        except InputError as exc:
            # not Kubernetes YAML topogen (or kubectl) can read: one line, naming the file
            assert "\n" not in str(exc) and path.name in str(exc), exc
            continue
        objects += [(path, o) for o in objs if (o.group, o.kind) in POLICY_KINDS]
    assert len(objects) >= 90
    answers = oracle.run(
        [
            {"name": f"{i}", "policies": [_as_stored(o)], "endpoints": [], "probes": []}
            for i, (_, o) in enumerate(objects)
        ]
    )
    disagreements = []
    rejected = 0
    for (path, obj), answer in zip(objects, answers, strict=True):
        cilium_error = next(iter(answer.rejected().values()), None)
        try:
            read_policies([obj])
            topogen_error = None
        except InputError as exc:
            topogen_error = str(exc)
        if (cilium_error is None) != (topogen_error is None):
            disagreements.append(
                f"{path}: {obj.where()}: cilium {cilium_error!r}, topogen {topogen_error!r}"
            )
        elif topogen_error is not None:
            rejected += 1
            assert "\n" not in topogen_error and obj.name in topogen_error, topogen_error
    assert not disagreements, "\n".join(disagreements)
    assert rejected >= 1  # the corpus holds policies a default agent refuses (fromNodes ...)
