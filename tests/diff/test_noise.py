"""Formatting, key order, comments and the order of unordered lists never make a difference."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from diff.scenarios import EXAMPLE, build, copy_example, unchanged
from topogen.cli import main
from topogen.diff import diff_configs, diff_dirs
from topogen.diff.compare import UNORDERED_KEYS


def invoke(*args: str | Path) -> Any:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rendered")
    result = invoke("render", "-c", EXAMPLE / "topogen.yaml", "--out", out)
    assert result.exit_code == 0, result.output
    return out


def _rewrite(root: Path, change: Any, **dump: Any) -> int:
    """Load, transform and dump every YAML file under root; returns how many were rewritten."""
    n = 0
    for path in sorted(root.rglob("*.yaml")):
        docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        docs = [change(d) for d in docs]
        path.write_text(yaml.safe_dump_all(docs, **dump), encoding="utf-8")
        n += 1
    return n


def _reverse_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reverse_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reverse_keys(v) for v in value]
    return value


def _reverse_unordered(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _reverse_unordered(v, k) for k, v in value.items()}
    if isinstance(value, list):
        items = [_reverse_unordered(v) for v in value]
        return list(reversed(items)) if key in UNORDERED_KEYS else items
    return value


def _multiline_scalar_lines(text: str) -> set[int]:
    """Lines inside scalars that span lines (block scalars hold YAML text of their own)."""
    out: set[int] = set()

    def walk(node: yaml.Node) -> None:
        if isinstance(node, yaml.ScalarNode):
            if node.end_mark.line > node.start_mark.line:
                out.update(range(node.start_mark.line, node.end_mark.line + 1))
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                walk(item)
        elif isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                walk(k)
                walk(v)

    for doc in yaml.compose_all(text):
        if doc is not None:
            walk(doc)
    return out


def _comment_every_line(root: Path) -> None:
    """A comment after every line that can carry one, and a comment line before each document."""
    for path in sorted(root.rglob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        protected = _multiline_scalar_lines(text)
        out = ["# a reviewer's note"]
        for n, line in enumerate(text.splitlines()):
            if n in protected or not line.strip() or line.lstrip().startswith("#"):
                out.append(line)
            elif line.startswith("---"):
                out += [line, "# the next document"]
            else:
                out.append(f"{line}  # checked")
        path.write_text("\n".join(out) + "\n", encoding="utf-8")


NOISE = {
    "reordered-keys": lambda root: _rewrite(root, _reverse_keys, sort_keys=False),
    "reordered-tolerations": lambda root: _rewrite(root, _reverse_unordered, sort_keys=False),
    "flow-style": lambda root: _rewrite(root, lambda d: d, default_flow_style=True, width=60),
    "block-style-wide-indent": lambda root: _rewrite(
        root, lambda d: d, default_flow_style=False, indent=4, width=4096
    ),
    "comments": _comment_every_line,
}


@pytest.mark.parametrize("noise", sorted(NOISE))
def test_noise_makes_no_difference(noise: str, rendered: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(rendered, copy)
    NOISE[noise](copy)
    assert (copy / "policies").is_dir()
    assert sorted(p.read_bytes() for p in copy.rglob("*.yaml")) != sorted(
        p.read_bytes() for p in rendered.rglob("*.yaml")
    ), "the noise changed nothing: the test would prove nothing"
    report = diff_dirs(rendered, copy)
    assert report.empty, [o.fields for o in report.objects]
    result = invoke("diff", rendered, copy, "--check")
    assert result.exit_code == 0, result.output
    assert "no differences" in result.output


def test_tolerations_really_reordered(rendered: Path) -> None:
    """The rendered tree has unordered lists of several items (else the case above is vacuous)."""
    seen: set[str] = set()

    def find(value: Any, key: str = "") -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                find(v, k)
        elif isinstance(value, list):
            if key in UNORDERED_KEYS and len(value) > 1:
                seen.add(key)
            for v in value:
                find(v)

    for path in sorted(rendered.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            find(doc)
    assert {"tolerations", "values", "matchExpressions"} <= seen


def test_a_real_change_is_still_seen(rendered: Path, tmp_path: Path) -> None:
    """The control for the cases above: a toleration value edited is a difference."""
    copy = tmp_path / "copy"
    shutil.copytree(rendered, copy)
    _rewrite(copy, _reverse_unordered, sort_keys=False)
    patched = next(copy.rglob("tests/topogen-ml-training-mutate/patched.yaml"))
    patched.write_text(patched.read_text().replace("present", "absent"), encoding="utf-8")
    result = invoke("diff", rendered, copy, "--check")
    assert result.exit_code == 1, result.output
    assert "toleration nvidia.com/gpu=absent:NoSchedule added" in result.output


def _input_noise(root: Path) -> None:
    """The same inputs, written differently: reordered keys and lists, flow style, comments."""
    nodes = root / "cluster" / "nodes.yaml"
    doc = yaml.safe_load(nodes.read_text(encoding="utf-8"))
    doc["items"].reverse()
    for n in doc["items"]:
        taints = n.get("spec", {}).get("taints")
        if taints:  # _input_noise_old added the maintenance taint: reordered here
            taints.reverse()
    nodes.write_text(
        "# nodes, reordered\n" + yaml.safe_dump(_reverse_keys(doc), default_flow_style=True),
        encoding="utf-8",
    )
    for path in sorted((root / "workloads" / "before").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        spec = data.get("spec", {}).get("template", {}).get("spec", {})
        if "tolerations" in spec:
            spec["tolerations"].reverse()
        path.write_text(
            "# rewritten\n" + yaml.safe_dump(_reverse_keys(data), indent=4), encoding="utf-8"
        )


def _input_noise_old(root: Path) -> None:
    """The old side carries the same extra taint and toleration, in the original order."""
    nodes = root / "cluster" / "nodes.yaml"
    doc = yaml.safe_load(nodes.read_text(encoding="utf-8"))
    for n in doc["items"]:
        taints = n.get("spec", {}).get("taints")
        if taints:
            taints.append(
                {"key": "example.com/maintenance", "value": "no", "effect": "PreferNoSchedule"}
            )
    nodes.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    for path in sorted((root / "workloads" / "before").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        spec = data.get("spec", {}).get("template", {}).get("spec", {})
        if "tolerations" in spec:
            spec["tolerations"].append({"key": "example.com/maintenance", "operator": "Exists"})
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def test_input_noise_makes_no_difference(tmp_path: Path) -> None:
    """Reordered, reformatted and commented inputs render and analyze to the same thing."""
    old = build(tmp_path / "old", _input_noise_old)
    new = build(tmp_path / "new", _input_noise_old)
    _input_noise(new)
    report = diff_configs(old / "topogen.yaml", new / "topogen.yaml")
    assert report.empty, (report.objects, report.analysis)
    assert report.analysis is not None


def test_same_config_twice_is_empty(tmp_path: Path) -> None:
    a, b = copy_example(tmp_path / "a"), build(tmp_path / "b", unchanged)
    assert diff_configs(a / "topogen.yaml", b / "topogen.yaml").empty
