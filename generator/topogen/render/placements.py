"""policies/<cluster>/placements.yaml: where this render put each group and known job.

The next render reads it back (sources/last_render.py) and keeps every job where it is
unless its domain no longer allows or holds it; `topogen diff` reads it for the placement
table (before -> after, GPUs left per domain). Not a Kubernetes object: no kustomization
lists it, and `render --stdout` does not print it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from topogen.model import LAST_PLACEMENTS_FILE
from topogen.nodepools import gpus_text
from topogen.plaindata import dump_yaml
from topogen.plan.group_plan import GroupPlan
from topogen.render.base import RenderedFile

__all__ = ["placement_files", "placements_doc"]

_COMMENT = (
    "# Where topogen placed each known training job (policies/<cluster>/placements.yaml).\n"
    "# The next render keeps every job in its domain unless the domain no longer allows or\n"
    "# holds it (then `topogen analyze` and `topogen diff` name the re-pin and why). Commit\n"
    "# it with the policies; delete it to place every job afresh. Not applied to the cluster.\n"
)


def placement_files(clusters: Sequence[tuple[str, Sequence[GroupPlan]]]) -> list[RenderedFile]:
    out = []
    for cluster, plans in clusters:
        doc = placements_doc(cluster, plans)
        if doc["groups"]:
            text = _COMMENT + dump_yaml(doc, width=10_000, allow_unicode=True)
            out.append(RenderedFile(f"policies/{cluster}/{LAST_PLACEMENTS_FILE}", text))
    return out


def placements_doc(cluster: str, plans: Sequence[GroupPlan]) -> dict[str, Any]:
    groups = []
    room: dict[str, tuple[int | str, int | str]] = {}
    for p in plans:
        if p.refused or not p.enforceable or p.domain is None:
            continue
        groups.append(
            {
                "name": p.group.name,
                "placement": p.placement,
                **({} if p.spread else {"domain": p.domain}),
                "jobs": _jobs(p),
            }
        )
        for name, free, left in p.room:
            if name not in room:  # the first plan's figures (the others are not formatted)
                room[name] = (_gpus(gpus_text(free)), _gpus(gpus_text(left)))
    return {
        "apiVersion": "topogen.io/v1alpha1",
        "kind": "Placements",
        "cluster": cluster,
        "groups": groups,
        "domains": [
            {"name": name, "gpus": free, "left": left}
            for name, (free, left) in sorted(room.items())
        ],
    }


def _jobs(p: GroupPlan) -> list[dict[str, Any]]:
    if p.job_domains:
        return [
            {
                "job": j.job,
                "domain": j.domain,
                "gpus": _gpus(j.gpus),
                **({"queued": True} if j.queued else {}),
            }
            for j in p.job_domains
        ]
    return [{"job": job, "domain": p.domain, "gpus": _gpus(gpus)} for job, gpus in p.job_gpus]


def _gpus(quantity: str) -> int | str:
    """A whole number of GPUs as a number, a fraction (a shared GPU) as its quantity."""
    return int(quantity) if quantity.isdigit() else quantity
