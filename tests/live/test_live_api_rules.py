"""tests/hostile/api_rules.py against the real kube-apiserver (v1.36.3, `make tools`): each
rule topogen refuses by the API server's rule, the API server refuses too (a dry-run create:
422 Invalid naming the field, or 400 where the object does not decode), and the unedited
objects and the accepted edits it creates. So topogen's refusals are the API server's,
not a reading of its source."""

from __future__ import annotations

import copy
import json
import urllib.error
import urllib.request
from typing import Any

import pytest
import yaml
from live_harness import ControlPlane, collection_path

from hostile.api_rules import ACCEPTED, BASE_FILES, RULES, Rule, edited, target
from tooling import REPO

pytestmark = [pytest.mark.tools, pytest.mark.slow]

EXAMPLE = REPO / "examples" / "zone-split"
JUDGED = [r for r in RULES if r.judge == "kube-apiserver"]
ACCEPTED_HERE = [r for r in ACCEPTED if r.judge == "kube-apiserver"]


def _original(rule: Rule) -> dict[str, Any]:
    if rule.file in BASE_FILES:
        return copy.deepcopy(BASE_FILES[rule.file])
    docs = [d for d in yaml.safe_load_all((EXAMPLE / rule.file).read_text()) if d]
    obj = target(rule, docs)
    return {"apiVersion": "v1", "kind": "Node", **obj} if rule.file.endswith("nodes.yaml") else obj


def _dry_run(cp: ControlPlane, obj: dict[str, Any], name: str) -> tuple[int, str]:
    """(HTTP status, message) of creating `obj` renamed `name` with dryRun=All."""
    obj = copy.deepcopy(obj)
    obj["metadata"]["name"] = name
    namespace = obj["metadata"].get("namespace")
    if namespace:
        cp.ensure_namespace(namespace)
    kube = cp.kube()
    req = urllib.request.Request(
        f"{kube.server}{collection_path(obj)}?dryRun=All",
        data=json.dumps(obj).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {kube.token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, context=kube.ctx, timeout=60) as resp:
            return resp.status, ""
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read().decode(errors="replace")
    try:
        return status, str(json.loads(body).get("message", body))
    except ValueError:
        return status, body


@pytest.mark.parametrize("rule", JUDGED, ids=[r.id for r in JUDGED])
def test_the_api_server_refuses_what_topogen_refuses(
    control_plane: ControlPlane, rule: Rule
) -> None:
    status, message = _dry_run(control_plane, edited(rule, _original(rule)), f"r-{rule.id}")
    assert status == rule.status, (status, message)
    assert rule.field in message, message


@pytest.mark.parametrize("rule", ACCEPTED_HERE, ids=[r.id for r in ACCEPTED_HERE])
def test_the_api_server_accepts_what_topogen_reads(control_plane: ControlPlane, rule: Rule) -> None:
    status, message = _dry_run(control_plane, edited(rule, _original(rule)), f"a-{rule.id}")
    assert status == 201, message


def test_the_api_server_accepts_the_unedited_objects(control_plane: ControlPlane) -> None:
    files = sorted({r.file for r in JUDGED})
    for file in files:
        rule = next(r for r in JUDGED if r.file == file)
        status, message = _dry_run(control_plane, _original(rule), "unedited")
        assert status == 201, (file, message)
