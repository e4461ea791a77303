"""The hostile inputs: one Case per bad input, each run against a copy of examples/zone-split
whose output tree (out/) was rendered from the good inputs before.

A case edits files of the copy (replacing text at an anchor, or writing a whole file),
may prepare the file system (symlinks, FIFOs, permissions), and names the command, the
exit code and a fragment of the one line topogen must print on stderr.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CASES", "Case"]

NODES = "cluster/nodes.yaml"
POLICIES = "cilium/zone-policies.yaml"
COORD = "workloads/before/coordinator.yaml"
WORKERS = "workloads/before/workers.yaml"
CONFIG = "topogen.yaml"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "zone-split"
RENDER = ("render", "-c", "{root}/topogen.yaml", "--out", "{out}")
ANALYZE = ("analyze", "-c", "{root}/topogen.yaml")

# anchors in the example's files (tests/hostile/test_hostile.py checks each is there once)
GPU_ALLOC = 'nvidia.com/gpu: "2"}'  # first GPU node's allocatable
NODE_NAME = "name: gpu-a1"
NODE_LABELS = "labels: {topology.kubernetes.io/zone: zone-a, kubernetes.io/hostname: gpu-a1,"
TAINT = "taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]"
COORD_NAME = "name: trainer-coordinator"
COORD_LABELS = "labels: {app: ml-training, role: coordinator}\n    spec:"
COORD_REQUESTS = 'requests: {cpu: "2", memory: 4Gi}'
CNP_NAME = "name: allow-intra-zone-a"
CNP_INGRESS = "  ingress:\n    - fromEndpoints:\n        - matchLabels: {zone: zone-a}\n"
GROUP = "  - name: ml-training\n"
CLUSTER_NODES = "nodes: [cluster/nodes.yaml]"


@dataclass(frozen=True)
class Case:
    id: str
    says: str  # a fragment of the one stderr line
    replace: tuple[tuple[str, str, str], ...] = ()  # (file, anchor, replacement)
    write: dict[str, str | bytes] = field(default_factory=dict)  # file -> whole content
    argv: tuple[str, ...] = RENDER
    code: int = 2
    prepare: Callable[[Path], None] | None = None  # given the copy's root
    as_user: bool = False  # run as uid 999 in a subprocess (permission cases)


def _r(file: str, anchor: str, new: str) -> tuple[tuple[str, str, str], ...]:
    return ((file, anchor, new),)


def _cfg(anchor: str, new: str) -> tuple[tuple[str, str, str], ...]:
    return _r(CONFIG, anchor, new)


def _symlink(link: str, target: str) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        path = root / link
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(target)

    return make


def _fifo(rel: str) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        os.mkfifo(root / rel)

    return make


def _both(a: Callable[[Path], None], b: Callable[[Path], None], root: Path) -> None:
    a(root)
    b(root)


def _secret(rel: str) -> Callable[[Path], None]:
    """A YAML file in a folder only its owner (root) may enter."""

    def make(root: Path) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("apiVersion: v1\nkind: List\nitems: []\n")
        path.parent.chmod(0o700)

    return make


def _unreadable(rel: str) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        (root / rel).chmod(0)

    return make


# --- malformed YAML, in each kind of file ---------------------------------------------------

MALFORMED: list[tuple[str, str | bytes, str]] = [
    ("unclosed-flow", "a: [1, 2\n", "malformed YAML"),
    ("bad-indent", "a:\n  b: 1\n c: 2\n", "malformed YAML"),
    ("tab-indent", "a:\n\tb: 1\n", "malformed YAML"),
    ("unknown-alias", "a: *nowhere\n", "malformed YAML"),
    ("two-colons", "a: b: c\n", "malformed YAML"),
    ("unterminated-quote", 'a: "open\n', "malformed YAML"),
    ("bad-escape", 'a: "\\q"\n', "malformed YAML"),
    ("control-char", "a: b\x01c\n", "malformed YAML"),
    ("nul-byte", "a: b\x00c\n", "malformed YAML"),
    ("latin-1", b"a: caf\xe9\n", "not UTF-8"),
    ("python-tag", "a: !!python/object/apply:os.system [ls]\n", "malformed YAML"),
    ("bad-binary", "a: !!binary '%%%'\n", "apiVersion"),
    ("deep-nesting", "a: " + "[" * 20000 + "\n", "malformed YAML"),
    ("huge-int", "a: " + "7" * 5000 + "\n", "malformed YAML"),
    ("yaml-2", "%YAML 2.0\n---\na: 1\n", "malformed YAML"),
    ("alias-bomb", "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
     + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n"
               for i in range(8)), "alias bomb"),
    ("json-surrogate", '{"a": "\\ud800"}\n', "malformed YAML"),
    ("json-trailing", '{"a": 1,}\n', "apiVersion"),  # YAML reads it, no object
]  # fmt: skip


def _malformed() -> list[Case]:
    out = []
    for file, short in ((CONFIG, "config"), (NODES, "nodes"), (POLICIES, "policies"),
                        (COORD, "workloads")):  # fmt: skip
        for name, text, says in MALFORMED:
            if file == CONFIG and name in ("alias-bomb",):
                says = "alias"
            out.append(Case(f"malformed-{short}-{name}", says, write={file: text}))
    return out


# --- duplicate keys ----------------------------------------------------------------------------

DUPLICATES = [
    Case("dup-config-action", "duplicate key 'validationAction' (also on line",
         write={CONFIG: (EXAMPLE / CONFIG).read_text()
                + "validationAction: Enforce\nvalidationAction: Audit\n"}),
    Case("dup-cnp-ingress", "duplicate key 'ingress' (also on line",
         replace=_r(POLICIES, CNP_INGRESS, CNP_INGRESS + CNP_INGRESS)),
    Case("dup-node-label", "duplicate key 'gpu'",
         replace=_r(NODES, NODE_LABELS, NODE_LABELS + " gpu: x,")),
    Case("dup-flow-keys", "duplicate key 'cpu' (also at column",
         replace=_r(COORD, COORD_REQUESTS, 'requests: {cpu: "2", cpu: "3", memory: 4Gi}')),
    Case("dup-json", "duplicate key 'kind'",
         write={NODES: '{"apiVersion": "v1", "kind": "List", "kind": "x", "items": []}\n'}),
    Case("dup-int-and-bool", "duplicate key",
         replace=_r(COORD, COORD_NAME, COORD_NAME + "\n  1: a\n  true: b")),
    Case("dup-quoted-and-plain", "duplicate key 'namespace'",
         replace=_r(COORD, "namespace: ml-demo", 'namespace: ml-demo\n  "namespace": other')),
    Case("dup-group-key", "duplicate key 'profile'",
         replace=_cfg("    profile: custom\n", "    profile: custom\n    profile: jobset\n")),
    Case("dup-object", "duplicate object Deployment ml-demo/trainer-coordinator",
         write={"workloads/before/again.yaml": (EXAMPLE / COORD).read_text()}),
]  # fmt: skip


# --- quantities --------------------------------------------------------------------------------

BAD_QUANTITIES = ["16000K", "1e999999999", "1e2147483648", "abc", "1.2.3", "0x10", "1_000",
                  "+-1", "1e", "inf", "nan", "1 000", "1,5", "--1", "1Kb", "\u0661", "1e1000000",
                  "Pi", "e-10", "9" * 201]  # fmt: skip


def _quantities() -> list[Case]:
    out = []
    for i, q in enumerate(BAD_QUANTITIES):
        shown = q if len(q) < 40 else q[:40]
        out.append(
            Case(f"quantity-node-{i:02d}", "is not a quantity",
                 replace=_r(NODES, GPU_ALLOC, f'nvidia.com/gpu: "{q}"}}'))
        )  # fmt: skip
        assert shown
    for i, q in enumerate(BAD_QUANTITIES[:6]):
        out.append(
            Case(f"quantity-pod-{i:02d}", "is not a quantity",
                 replace=_r(COORD, COORD_REQUESTS, f'requests: {{cpu: "{q}", memory: 4Gi}}'))
        )  # fmt: skip
    # valid, if odd, quantities Kubernetes accepts: handled, never an internal error (huge
    # ones are capped at 2^63-1; the zero ones leave the group refused: no GPUs)
    for i, q in enumerate(["1e400", "1E", "9Ei", ".", "+", "-0"]):
        out.append(
            Case(f"quantity-valid-{i:02d}", "no domain can hold it", code=0 if i < 3 else 1,
                 replace=_r(NODES, GPU_ALLOC, f'nvidia.com/gpu: "{q}"}}'))
        )  # fmt: skip
    # a GPU is an extended resource, counted whole: the API server refuses a fraction
    # (ValidateResourceQuantityValue), however small
    for i, q in enumerate(["1e-999", "0.1n", "1500m"]):
        out.append(
            Case(f"quantity-gpu-fraction-{i:02d}", "nvidia.com/gpu: must be an integer",
                 replace=_r(NODES, GPU_ALLOC, f'nvidia.com/gpu: "{q}"}}'))
        )  # fmt: skip
    # ... and a negative quantity anywhere
    for i, q in enumerate(["-1", "-0.5", "-1e3", "-1Ki"]):
        out.append(
            Case(f"quantity-negative-{i:02d}", "must be greater than or equal to 0",
                 replace=_r(NODES, GPU_ALLOC, f'nvidia.com/gpu: "2", ephemeral-storage: "{q}"}}'))
        )  # fmt: skip
    return out


# --- paths -------------------------------------------------------------------------------------

PATHS = [
    Case("path-absolute", "is outside the folder of the config",
         replace=_cfg(CLUSTER_NODES, "nodes: [/etc/hostname]")),
    Case("path-root", "is outside the folder of the config",
         replace=_cfg(CLUSTER_NODES, "nodes: [/]")),
    Case("path-dotdot", "is outside the folder of the config",
         replace=_cfg(CLUSTER_NODES, "nodes: [../../../etc/hostname]")),
    Case("path-symlink-file-out", "is outside the folder of the config (it resolves to",
         replace=_cfg(CLUSTER_NODES, "nodes: [cluster/link.yaml]"),
         prepare=_symlink("cluster/link.yaml", "/etc/hostname")),
    Case("path-symlink-in-folder", "resolves to",
         prepare=_symlink("cilium/evil.yaml", "/etc/hostname")),
    Case("path-symlink-dir-out", "is outside the folder of the config",
         replace=_cfg("networkPolicies: [cilium/]", "networkPolicies: [elsewhere/]"),
         prepare=_symlink("elsewhere", "/etc")),
    # a scanned folder's YAML file that cannot be read is refused, never skipped
    Case("path-symlink-dangling-in-folder", "cilium/gone.yaml: a symlink to no readable file",
         prepare=_symlink("cilium/gone.yaml", "nowhere.yaml")),
    Case("path-symlink-loop-in-folder", "cilium/loop.yaml: a symlink to no readable file",
         prepare=_symlink("cilium/loop.yaml", "loop.yaml")),
    Case("path-fifo-in-folder", "cilium/pipe.yaml: not a file", prepare=_fifo("cilium/pipe.yaml")),
    Case("path-symlink-into-unreadable", "Permission denied", as_user=True,
         prepare=lambda r: _both(_secret("secret/x.yaml"), _symlink("cilium/s.yaml", "../secret/x.yaml"), r)),
    Case("path-missing", "path does not exist",
         replace=_cfg(CLUSTER_NODES, "nodes: [cluster/nope.yaml]")),
    Case("path-fifo", "is neither a file nor a folder",
         replace=_cfg(CLUSTER_NODES, "nodes: [cluster/pipe.yaml]"), prepare=_fifo("cluster/pipe.yaml")),
    Case("path-loop", "cannot resolve",
         replace=_cfg(CLUSTER_NODES, "nodes: [loop1]"),
         prepare=lambda r: _both(_symlink("loop1", "loop2"), _symlink("loop2", "loop1"), r)),
    Case("path-nul", "clusters.lab.nodes[0]",
         replace=_cfg(CLUSTER_NODES, 'nodes: ["cluster/\\x00nodes.yaml"]')),
    Case("path-tilde", "path does not exist",
         replace=_cfg(CLUSTER_NODES, "nodes: [~/nodes.yaml]")),
    Case("path-workloads-out", "workloads: /etc is outside",
         replace=_cfg("workloads: [workloads/before/]", "workloads: [/etc]")),
    # -c DIR reads DIR/topogen.yaml: a folder without one is a missing config, named
    Case("path-config-is-dir", "cluster/topogen.yaml: config file not found",
         argv=("render", "-c", "{root}/cluster")),
    Case("path-config-missing", "config file not found",
         argv=("render", "-c", "{root}/nope.yaml", "--out", "{out}")),
    Case("path-unreadable-file", "cannot read file", as_user=True,
         prepare=_unreadable(POLICIES)),
    Case("path-unreadable-dir", "cannot read", as_user=True, prepare=_unreadable("cilium")),
    Case("path-unreadable-config", "is not readable", as_user=True,
         prepare=_unreadable(CONFIG)),
    Case("path-out-under-a-file", "cannot write the output tree",
         argv=("render", "-c", "{root}/topogen.yaml", "--out", "{root}/topogen.yaml/out")),
    Case("path-out-read-only", "cannot write the output tree", as_user=True,
         argv=("render", "-c", "{root}/topogen.yaml", "--out", "{root}/ro/out"),
         prepare=lambda r: (r / "ro").mkdir(mode=0o555)),
]  # fmt: skip


# --- names, labels and every engine's limits ---------------------------------------------------

NAMES = [
    Case("name-nul", "is no Kubernetes name", replace=_r(COORD, COORD_NAME, 'name: "trainer\\0x"')),
    Case("name-slash", "is no Kubernetes name", replace=_r(COORD, COORD_NAME, "name: a/b")),
    Case("name-dotdot", "is no Kubernetes name", replace=_r(COORD, COORD_NAME, 'name: ".."')),
    Case("name-percent", "is no Kubernetes name", replace=_r(COORD, COORD_NAME, "name: a%2f")),
    Case("name-upper", "is not a DNS subdomain", replace=_r(COORD, COORD_NAME, "name: Trainer")),
    Case("name-space", "is not a DNS subdomain", replace=_r(COORD, COORD_NAME, "name: a b")),
    Case("name-254", "is not 1 to 253 characters",
         replace=_r(COORD, COORD_NAME, "name: " + "a" * 254)),
    Case("name-node-upper", "is not a DNS subdomain", replace=_r(NODES, NODE_NAME, "name: GPU-A1")),
    Case("name-cnp-regex", "is not a DNS subdomain",
         replace=_r(POLICIES, CNP_NAME, "name: allow$(x)|{y}")),
    Case("name-namespace", "metadata.namespace",
         replace=_r(COORD, "namespace: ml-demo", "namespace: ML_Demo")),
    Case("label-value-colon", "label value 'zone:a'",
         replace=_r(NODES, NODE_LABELS, NODE_LABELS.replace("zone-a", '"zone:a"'))),
    Case("label-value-64", "label value",
         replace=_r(NODES, NODE_LABELS, NODE_LABELS.replace("zone-a", "z" * 64))),
    Case("label-value-nel", "label value",
         replace=_r(COORD, COORD_LABELS, COORD_LABELS.replace("coordinator}", '"coord\\Ninator"}'))),
    Case("label-key-space", "label key", replace=_r(COORD, COORD_LABELS,
         COORD_LABELS.replace("{app:", '{"bad key": x, app:'))),
    Case("label-key-prefix", "prefix is not a DNS subdomain", replace=_r(COORD, COORD_LABELS,
         COORD_LABELS.replace("{app:", '{"Ex.com/k": x, app:'))),
    Case("taint-key", "spec.taints[0].key", replace=_r(NODES, TAINT,
         "taints: [{key: 'nvidia gpu', value: present, effect: NoSchedule}]")),
    Case("taint-value", "spec.taints[0].value", replace=_r(NODES, TAINT,
         "taints: [{key: nvidia.com/gpu, value: 'a\\u2028b', effect: NoSchedule}]")),
    Case("toleration-value", "tolerations[0].value", replace=_r(COORD, COORD_LABELS,
         COORD_LABELS + "\n      tolerations: [{key: k, value: 'x y', effect: NoSchedule}]")),
    Case("node-selector-value", "nodeSelector", replace=_r(COORD, COORD_LABELS,
         COORD_LABELS + "\n      nodeSelector: {zone: 'a|b'}")),
    Case("group-name-kyverno-63", "use a group name of at most 46 characters",
         replace=_cfg(GROUP, "  - name: " + "g" * 47 + "\n")),
    Case("group-name-legacy-63", "use a group name of at most 46 characters",
         replace=_cfg(GROUP, "  - name: " + "g" * 47 + "\n") + _cfg("groups:\n",
                      "engines: [kyverno-legacy]\ngroups:\n")),
    Case("group-name-syntax", "groups.Bad_Name.name: 'Bad_Name' is not a DNS label", replace=_cfg(GROUP, "  - name: Bad_Name\n")),
    Case("group-name-64", ".name: must be at most 63 characters", replace=_cfg(GROUP, "  - name: " + "g" * 64 + "\n")),
    Case("identity-label-syntax", "groups.ml-training.identityLabel",
         replace=_cfg("identityLabel: zone", "identityLabel: 'zone id'")),
    Case("prefer-zone-nel", "groups.ml-training.preferZones[0]",
         replace=_cfg("ports: [29500]", 'ports: [29500]\n    preferZones: ["zone\\Na"]')),
    Case("gpu-resource-syntax", "clusters.lab.gpuResources[0]",
         replace=_cfg(CLUSTER_NODES, CLUSTER_NODES + "\n    gpuResources: ['nvidia gpu']")),
    Case("drop-reason-regex", "monitoring.policyDropReasons[0]",
         replace=_cfg("groups:\n", "monitoring: {policyDropReasons: ['A|.*']}\ngroups:\n")),
    Case("cluster-name-syntax", "clusters.Lab/x.name",
         replace=_cfg("  - name: lab\n", "  - name: Lab/x\n")),
    Case("unknown-key", "unknown key groups.ml-training.colour",
         replace=_cfg("ports: [29500]", "ports: [29500]\n    colour: blue")),
    Case("port-range", "is not a port range", replace=_cfg("ports: [29500]", "ports: [70000]")),
]  # fmt: skip


# --- overlapping groups --------------------------------------------------------------------------

_SECOND = (
    "  - name: other\n    profile: custom\n    namespaces: [ml-demo]\n    groupLabel: app\n"
    "    roleLabel: role\n    coordinatorRoles: [coordinator]\n    workerRoles: [gpu-worker]\n"
)
OVERLAPS = [
    Case("overlap-same-pods", "groups ml-training and other both select the pods of",
         replace=_cfg("    ports: [29500]\n", "    ports: [29500]\n" + _SECOND)),
    Case("overlap-same-profile", "select the same pods in namespace ml-demo",
         replace=_cfg("    ports: [29500]\n", "    ports: [29500]\n"
                      "  - {name: a, profile: jobset, namespaces: [ml-demo]}\n"
                      "  - {name: b, profile: jobset, namespaces: [ml-demo]}\n")),
    Case("overlap-duplicate-name", "duplicate groups name",
         replace=_cfg("    ports: [29500]\n", "    ports: [29500]\n" + _SECOND.replace(
             "name: other", "name: ml-training"))),
    Case("overlap-analyze-too", "both select the pods of", argv=ANALYZE,
         replace=_cfg("    ports: [29500]\n", "    ports: [29500]\n" + _SECOND)),
]  # fmt: skip


# --- the output tree -----------------------------------------------------------------------------


def _put(rel: str, text: str = "mine: true\n") -> Callable[[Path], None]:
    def make(root: Path) -> None:
        path = root / "out" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    return make


def _replace_top(top: str, kind: str) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        shutil.rmtree(root / "out" / top)
        if kind == "file":
            (root / "out" / top).write_text("x\n")
        else:
            (root / "out" / top).symlink_to(root / "cluster")

    return make


def _manifest_link(root: Path) -> None:
    manifest = root / "out" / ".topogen" / "MANIFEST"
    manifest.unlink()
    manifest.symlink_to("/etc/hostname")


def _old_layout_with(entry: str) -> Callable[[Path], None]:
    """The layout of the topogen before plain folders (tops symlinked into .topogen/tree),
    with a stray file in that tree."""

    def make(root: Path) -> None:
        out = root / "out"
        tree = out / ".topogen" / "tree"
        tree.mkdir()
        (out / ".topogen" / "MANIFEST").rename(tree / "MANIFEST")
        for top in ("kustomize", "monitoring", "policies"):
            (out / top).rename(tree / top)
            (out / top).symlink_to(f".topogen/tree/{top}")
        (tree / entry).write_text("x")

    return make


TREE = [
    Case("tree-custom-policy", "policies/custom/mine.yaml is not one of the files topogen wrote",
         prepare=_put("policies/custom/mine.yaml")),
    Case("tree-notes", "policies/lab/kyverno/NOTES.md", prepare=_put("policies/lab/kyverno/NOTES.md")),
    Case("tree-prod-overlay", "kustomize/overlays/prod/kustomization.yaml",
         prepare=_put("kustomize/overlays/prod/kustomization.yaml")),
    Case("tree-json", "monitoring/lab/extra.json", prepare=_put("monitoring/lab/extra.json", "{}")),
    Case("tree-edited", "no longer carries topogen's generated header",
         prepare=_put("policies/lab/kyverno/topogen-ml-training-mutate.yaml", "kind: Mine\n")),
    Case("tree-top-file", "kustomize is a file", prepare=_replace_top("kustomize", "file")),
    Case("tree-top-symlink", "kustomize is a symlink topogen did not make",
         prepare=_replace_top("kustomize", "link")),
    Case("tree-manifest-link", ".topogen/MANIFEST is not a regular file",
         prepare=_manifest_link),
    Case("tree-old-layout-entry", ".topogen/tree/extra is not one of topogen's folders",
         prepare=_old_layout_with("extra")),
    Case("tree-symlink-inside", "is not a regular file",
         prepare=lambda r: (r / "out/policies/lab/link.yaml").symlink_to("/etc/hostname")),
    Case("tree-fifo-inside", "is not a regular file",
         prepare=lambda r: os.mkfifo(r / "out/policies/lab/pipe.yaml")),
    Case("tree-locked", "another topogen render is writing", prepare=None),  # see the test
]  # fmt: skip


# --- refused groups: fail closed -------------------------------------------------------------

REFUSED = [
    Case("refused-render", "keeps its policies", code=1,
         replace=_r(NODES, GPU_ALLOC, 'nvidia.com/gpu: "1"}') + _r(
             NODES, 'nvidia.com/gpu: "2"}', 'nvidia.com/gpu: "1"}')),
    Case("refused-stdout", "nothing printed", code=1,
         argv=("render", "-c", "{root}/topogen.yaml", "--stdout"),
         replace=_r(NODES, GPU_ALLOC, 'nvidia.com/gpu: "1"}') + _r(
             NODES, 'nvidia.com/gpu: "2"}', 'nvidia.com/gpu: "1"}')),
]  # fmt: skip


# --- usage ---------------------------------------------------------------------------------------

USAGE = [
    Case("usage-unknown-option", "No such option '--bogus'", argv=("render", "--bogus")),
    Case("usage-missing-value", "Option '-c' requires an argument", argv=("render", "-c")),
    Case("usage-unknown-command", "No such command 'rendr'", argv=("rendr",)),
    Case("usage-bad-choice", "Invalid value for '-o'", argv=("analyze", "-c", "{root}/topogen.yaml",
                                                             "-o", "xml")),
    Case("usage-diff-one-dir", "give two folders", argv=("diff", "{out}")),
    Case("usage-diff-dirs-and-against", "cannot be combined",
         argv=("diff", "{out}", "{out}", "--against", "main")),
    Case("usage-explain-no-from", "Missing option '--from'", argv=("explain", "--to", "a/b")),
    Case("usage-unknown-cluster", "no cluster named 'nope'",
         argv=("render", "-c", "{root}/topogen.yaml", "--out", "{out}", "--cluster", "nope")),
    Case("usage-diff-not-a-ref", "neither a folder nor a git ref",
         argv=("diff", "-c", "{root}/topogen.yaml", "--against", "no-such-ref-xyz")),
    Case("usage-diff-missing-dir", "not a folder", argv=("diff", "{root}/nope1", "{root}/nope2")),
    Case("usage-explain-bad-label", "--label", argv=("explain", "-c", "{root}/topogen.yaml",
         "--from", "ml-demo/trainer-coordinator", "--to", "ml-demo/trainer-workers",
         "--label", "nonsense")),
    Case("usage-connectivity-missing", "path does not exist",
         argv=("connectivity", "--policies", "{root}/nope", "--workloads", "{root}/workloads")),
]  # fmt: skip


# --- everything else that was an internal error -----------------------------------------------

OTHER = [
    Case("config-list", "config must be one YAML mapping", write={CONFIG: "- a\n- b\n"}),
    Case("config-empty", "config must be one YAML mapping", write={CONFIG: ""}),
    Case("config-two-docs", "config must be one YAML mapping", write={CONFIG: "a: 1\n---\nb: 2\n"}),
    Case("config-api-version", "apiVersion must be topogen.io/v1alpha1",
         replace=_cfg("apiVersion: topogen.io/v1alpha1", "apiVersion: v2")),
    Case("nodes-scalar", "expected a Kubernetes object", write={NODES: "just text\n"}),
    Case("nodes-items-not-list", "items must be a list",
         write={NODES: "apiVersion: v1\nkind: List\nitems: {a: 1}\n"}),
    Case("nodes-none", "no Node objects found", write={NODES: "apiVersion: v1\nkind: List\nitems: []\n"}),
    Case("node-metadata-list", "metadata must be a mapping",
         write={NODES: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, "
                "metadata: [gpu-a1]}\n"}),
    Case("node-taint-effect", "needs a key and an effect", replace=_r(NODES, TAINT,
         "taints: [{key: nvidia.com/gpu, value: present, effect: Sometimes}]")),
    Case("node-unschedulable-string", "must be true or false", replace=_r(NODES, TAINT,
         TAINT + "\n      unschedulable: 'yes'")),
    Case("workload-replicas-string", "replicas", replace=_r(COORD, "replicas: 1", "replicas: many")),
    Case("workload-label-int", "must be a string", replace=_r(COORD, COORD_LABELS,
         COORD_LABELS.replace("{app:", "{n: 1, app:"))),
    Case("cnp-selector-list", "must be a mapping", replace=_r(POLICIES,
         "  endpointSelector:\n    matchLabels: {zone: zone-a}\n",
         "  endpointSelector: [zone]\n")),
    Case("nel-in-node-affinity-value", "label value 'a\\x85b'", replace=_r(COORD, COORD_LABELS,
         COORD_LABELS
         + "\n      affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
         "{nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: NotIn, "
         'values: ["a\\Nb"]}]}]}}}')),
]  # fmt: skip


CASES: list[Case] = [
    *_malformed(),
    *DUPLICATES,
    *_quantities(),
    *PATHS,
    *NAMES,
    *OVERLAPS,
    *TREE,
    *REFUSED,
    *USAGE,
    *OTHER,
]
