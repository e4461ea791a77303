"""What `topogen init` names and writes besides topogen.yaml: folders for the files it
found, a kustomization for the workload folders, a group name from the workloads.

Pure functions over relative posix paths; scaffold.py does the reading and writing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath

__all__ = [
    "KUSTOMIZATION_HEADER",
    "covering_folders",
    "group_names",
    "workload_kustomization",
]

KUSTOMIZATION_HEADER = "# Written by `topogen init`"
_DNS = re.compile(r"[^a-z0-9-]+")


def _parents(path: str) -> list[str]:
    """`a/b/c.yaml` -> [`a`, `a/b`]."""
    parts = PurePosixPath(path).parts[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def covering_folders(files: Iterable[str], avoid: Iterable[str]) -> list[str]:
    """The fewest folders (`dir/`) that hold `files` and none of `avoid` (files init could not
    read, or that hold other things); a file at the top, or whose every folder holds an
    avoided file, is named itself. topogen reads a folder's YAML files recursively, so a
    policy file added there later is read too."""
    avoided = set(avoid)
    tainted = {p for a in avoided for p in _parents(a)}
    out: set[str] = set()
    for f in sorted(set(files)):
        clean = [p for p in _parents(f) if p not in tainted]
        out.add(f"{clean[0]}/" if clean else f)  # the outermost clean folder
    # a folder inside another one named: the outer one reads it already
    folders = {o for o in out if o.endswith("/")}
    return sorted(o for o in out if not any(o != d and o.startswith(d) for d in folders if d != o))


def workload_kustomization(folder: str, files: Iterable[str], kustomized: Iterable[str]) -> str:
    """A kustomization.yaml for a workload folder (`resources: [<folder>]` then builds),
    listing its manifests; a subfolder with a kustomization of its own is listed as one."""
    root = folder.rstrip("/")
    subs = sorted(k for k in kustomized if k != root and k.startswith(root + "/"))
    resources: list[str] = []
    for f in sorted(files):
        rel = f[len(root) + 1 :]
        owner = next((s for s in subs if f.startswith(s + "/")), None)
        if owner is None:
            resources.append(rel)
        elif (entry := owner[len(root) + 1 :] + "/") not in resources:
            resources.append(entry)
    lines = [
        f"{KUSTOMIZATION_HEADER}: the training manifests of this folder, so a kustomization",
        "# of yours can build them with topogen's workload patches:",
        f"#   resources: [<path>/{root}/]",
        "#   components: [<path>/kustomize/components/workload-patches/<cluster>]",
        "# Yours to edit: topogen never writes it again.",
        "apiVersion: kustomize.config.k8s.io/v1beta1",
        "kind: Kustomization",
        "resources:",
        *[f"  - {r}" for r in resources],
    ]
    return "\n".join(lines) + "\n"


def _dns(text: str) -> str:
    name = _DNS.sub("-", text.lower()).strip("-")
    return name[:63].rstrip("-") or "training"


def group_names(jobs: Mapping[str, Iterable[tuple[str, str]]]) -> dict[str, str]:
    """profile -> a group name from its workloads: the job's name when there is one, else
    the namespace they share, else `<first namespace>-training`; unique across profiles."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for profile in sorted(jobs):
        found = sorted(set(jobs[profile]))
        namespaces = sorted({ns for ns, _ in found})
        if len(found) == 1:
            base = _dns(found[0][1])
        elif len(namespaces) == 1:
            base = _dns(namespaces[0])
        else:
            base = _dns(f"{namespaces[0]}-training") if namespaces else "training"
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base[:60]}-{n}"
        taken.add(name)
        out[profile] = name
    return out
