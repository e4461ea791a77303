"""`topogen analyze` end to end: in-process with CliRunner and as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from helpers import GPU_TAINT, GPU_TOLERATION, config_doc, deployment, node_doc, write_tree
from topogen.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "zone-split"
BEFORE, AFTER = EXAMPLE / "topogen.yaml", EXAMPLE / "topogen-after.yaml"


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def run_subprocess(*args: str | Path, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "topogen", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def good_tree(tmp_path: Path, **overrides: Any) -> Path:
    files: dict[str, Any] = {
        "topogen.yaml": config_doc({"identityLabel": "zone"}),
        "nodes.yaml": [
            node_doc("gpu-a1", gpus=4, taints=[GPU_TAINT]),
            node_doc("cpu-b1", "zone-b"),
        ],
        "policies/p.yaml": "# none\n",
        "workloads/coord.yaml": [
            deployment(
                "coord", {"app": "j", "role": "coordinator"}, spec={"tolerations": [GPU_TOLERATION]}
            )
        ],
        "workloads/workers.yaml": [
            deployment(
                "w",
                {"app": "j", "role": "worker"},
                replicas=2,
                gpus=1,
                kind="Job",
                spec={"tolerations": [GPU_TOLERATION]},
            )
        ],
    }
    files.update(overrides)
    return write_tree(tmp_path, files) / "topogen.yaml"


# --- exit codes and output ----------------------------------------------------------------


def test_hard_block_exits_1_and_names_the_policy() -> None:
    result = invoke("analyze", "-c", BEFORE)
    assert result.exit_code == 1, result.output
    assert "HARD_BLOCK" in result.stdout
    assert "cnp ml-demo/allow-intra-zone-a" in result.stdout


def test_clean_config_exits_0() -> None:
    result = invoke("analyze", "-c", AFTER)
    assert result.exit_code == 0, result.output
    assert "HARD_BLOCK" not in result.stdout and "OK" in result.stdout


def test_cross_zone_alone_exits_1(tmp_path: Path) -> None:
    result = invoke("analyze", "-c", good_tree(tmp_path))
    assert result.exit_code == 1, result.output
    assert "CROSS_ZONE" in result.stdout


def test_json_output_has_the_findings_contract() -> None:
    result = invoke("analyze", "-c", BEFORE, "-o", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert isinstance(doc["findings"], list) and doc["findings"]
    for f in doc["findings"]:
        assert {"group", "kind", "roles", "zones", "policies", "message"} <= set(f)
        assert isinstance(f["roles"], list) and isinstance(f["policies"], list)
    (block,) = [f for f in doc["findings"] if f["kind"] == "HARD_BLOCK"]
    assert block["group"] == "ml-training"
    assert "cnp ml-demo/allow-intra-zone-a" in block["policies"]


def test_json_output_is_stable() -> None:
    first = invoke("analyze", "-c", BEFORE, "-o", "json").stdout
    assert first == invoke("analyze", "-c", BEFORE, "-o", "json").stdout
    assert str(REPO) not in first  # no absolute paths


def test_json_ok_case_exit_0() -> None:
    result = invoke("analyze", "-c", AFTER, "-o", "json")
    assert result.exit_code == 0
    assert {f["kind"] for f in json.loads(result.stdout)["findings"]} == {"OK"}


@pytest.mark.parametrize("args", [["analyze", "--bogus"], ["analyze", "-o", "xml"], ["nope"]])
def test_usage_errors_exit_2(args: list[str]) -> None:
    result = invoke(*args, "-c", AFTER) if args[0] == "analyze" else invoke(*args)
    assert result.exit_code == 2


# --- bad input: one line on stderr naming the file, exit 2 ------------------------------------

BILLION_LAUGHS = """
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def _config(**changes: Any) -> dict[str, Any]:
    doc = config_doc()
    doc.update(changes)
    return doc


BAD_INPUTS: dict[str, tuple[dict[str, Any], str, list[str]]] = {
    # name: (files to override, file named in the error, words the error must contain)
    "malformed-yaml-config": (
        {"topogen.yaml": "apiVersion: topogen.io/v1alpha1\nkind: [\n"},
        "topogen.yaml:",
        ["malformed YAML"],
    ),
    "malformed-yaml-nodes": (
        {"nodes.yaml": "items:\n  - a: 1\n   b: 2\n"},
        "nodes.yaml:",
        ["malformed YAML"],
    ),
    "alias-bomb-workload": ({"workloads/bomb.yaml": BILLION_LAUGHS}, "bomb.yaml", ["alias"]),
    "alias-bomb-config": ({"topogen.yaml": BILLION_LAUGHS}, "topogen.yaml", ["alias"]),
    "wrong-api-version": (
        {"topogen.yaml": _config(apiVersion="topogen.io/v1")},
        "topogen.yaml",
        ["apiVersion", "topogen.io/v1alpha1"],
    ),
    "misspelt-group-key": (
        {"topogen.yaml": _config(groups=[{**config_doc()["groups"][0], "profle": "custom"}])},
        "topogen.yaml",
        ["unknown key", "groups.ml-training.profle"],
    ),
    "misspelt-cluster-key": (
        {"topogen.yaml": _config(clusters=[{**config_doc()["clusters"][0], "zoneLable": "zone"}])},
        "topogen.yaml",
        ["unknown key", "clusters.lab.zoneLable"],
    ),
    "unknown-top-level-key": (
        {"topogen.yaml": _config(workload=["w/"])},
        "topogen.yaml",
        ["unknown key", "workload"],
    ),
    "unknown-profile": (
        {"topogen.yaml": _config(groups=[{**config_doc()["groups"][0], "profile": "ray"}])},
        "topogen.yaml",
        ["groups.ml-training.profile"],
    ),
    "duplicate-object": (
        {"workloads/again.yaml": [deployment("coord", {"app": "j", "role": "coordinator"})]},
        "again.yaml",
        ["duplicate", "Deployment ml/coord", "coord.yaml"],
    ),
    "label-not-a-string": (
        {"nodes.yaml": [node_doc("n1", labels={"gpu": True})]},
        "nodes.yaml",
        ["gpu", "string"],
    ),
    "workload-label-not-a-string": (
        {
            "workloads/coord.yaml": [
                deployment("coord", {"app": "j", "role": "coordinator", "rank": 0})
            ]
        },
        "coord.yaml",
        ["rank", "string"],
    ),
    "missing-nodes-file": (
        {
            "topogen.yaml": _config(
                clusters=[{**config_doc()["clusters"][0], "nodes": ["missing.yaml"]}]
            )
        },
        "missing.yaml",
        ["does not exist"],
    ),
    "not-a-mapping": ({"nodes.yaml": "- just\n- a list\n"}, "nodes.yaml", ["mapping"]),
    "no-nodes": ({"nodes.yaml": "# nothing\n"}, "topogen.yaml", ["no Node objects"]),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_line_naming_the_file_exit_2(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files, where, words = BAD_INPUTS[case]
    config = good_tree(tmp_path, **files)
    monkeypatch.chdir(tmp_path)
    result = invoke("analyze", "-c", config.name)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("topogen: error: ")
    assert where in lines[0]
    for word in words:
        assert word in lines[0]
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_malformed_yaml_error_names_the_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good_tree(tmp_path, **{"policies/p.yaml": "a: 1\nb: 2\nc: [unclosed\n"})
    monkeypatch.chdir(tmp_path)
    result = invoke("analyze")
    assert result.exit_code == 2
    assert "policies/p.yaml:4:" in result.stderr or "policies/p.yaml:3:" in result.stderr


def test_missing_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke("analyze", "-c", "nowhere.yaml")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "topogen: error: nowhere.yaml: config file not found (pass -c PATH or run `topogen init`)"
    ]


# --- as a subprocess ---------------------------------------------------------------------------


def test_subprocess_exit_codes() -> None:
    before = run_subprocess("analyze", "-c", BEFORE.relative_to(REPO))
    assert before.returncode == 1 and "HARD_BLOCK" in before.stdout
    after = run_subprocess("analyze", "-c", AFTER.relative_to(REPO), "-o", "json")
    assert after.returncode == 0
    assert json.loads(after.stdout)["findings"]


def test_subprocess_bad_input_has_no_traceback(tmp_path: Path) -> None:
    good_tree(tmp_path, **{"workloads/bomb.yaml": BILLION_LAUGHS})
    proc = run_subprocess("analyze", "-c", "topogen.yaml", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "workloads/bomb.yaml" in proc.stderr


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "topogen"
    assert script.exists()
    proc = subprocess.run(
        [str(script), "analyze", "-c", str(AFTER)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def test_every_module_imports_in_a_fresh_interpreter() -> None:
    code = (
        "import importlib, pkgutil, topogen\n"
        "names = [m.name for m in pkgutil.walk_packages(topogen.__path__, 'topogen.')]\n"
        "for n in names: importlib.import_module(n)\n"
        "print(len(names))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) >= 25
