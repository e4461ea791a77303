"""Which of topogen's engines render the job policies for Kueue's Topology Aware
Scheduling (pipeline/render.py KUEUE_ENGINES), and why the others render none."""

from __future__ import annotations

__all__ = ["KUEUE_ENGINE_GAPS", "KUEUE_JOB_ENGINES", "engine_gap"]

KUEUE_JOB_ENGINES = ("kyverno", "native")

KUEUE_ENGINE_GAPS = {
    # Gatekeeper v3.23.1 pkg/mutation/path/parser: a path's field is a literal name, a glob
    # only the value of a list's key field ([name: *])
    "gatekeeper": (
        "Gatekeeper's Assign writes one value at a path: its paths cannot name each entry "
        "of a job's replica map (pytorchReplicaSpecs) or each item of an unkeyed list "
        "(nodeSelectorTerms, a JobSet's replicatedJobs), so it cannot AND the zones into "
        "every template's existing terms nor count the PodSets to group them"
    ),
    "kyverno-legacy": (
        "topogen renders the Kueue job policies for Kyverno's CEL policies only, not as a "
        "legacy ClusterPolicy"
    ),
}


def engine_gap(engine: str, group: str) -> str:
    """The warning for a group whose Kueue jobs `engine` does not constrain."""
    return (
        f"engine {engine} renders no policy for the Kueue TAS jobs of group {group}: "
        f"{KUEUE_ENGINE_GAPS[engine]}; only engines {' and '.join(KUEUE_JOB_ENGINES)} "
        "constrain them"
    )
