"""topogen.yaml: strict validation, defaults, relative paths."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from helpers import config_doc, write_tree
from topogen.analysis.context import required_ports
from topogen.config import load_config
from topogen.errors import InputError


def _load(tmp_path: Path, doc: dict[str, Any]) -> Any:
    write_tree(tmp_path, {"sub/topogen.yaml": doc})
    return load_config(tmp_path / "sub" / "topogen.yaml")


def test_defaults_and_base_dir(tmp_path: Path) -> None:
    cfg = _load(tmp_path, config_doc())
    (cluster,) = cfg.clusters
    assert cluster.zone_label == "topology.kubernetes.io/zone"
    assert cluster.gpu_resources == ["nvidia.com/gpu", "amd.com/gpu"]
    assert cfg.base_dir == tmp_path / "sub"  # relative paths resolve against the config folder
    assert cfg.groups[0].ports is None


def test_issue_example_shape_is_accepted(tmp_path: Path) -> None:
    doc = config_doc(
        {"identityLabel": "zone", "ports": [9999, "29400-29500", "5353/UDP"]},
        cluster={"gpuNodeSelector": {"gpu": "true"}, "zoneLabel": "zone"},
    )
    cfg = _load(tmp_path, doc)
    ports = required_ports(cfg.groups[0])
    assert ports.describe() == ["TCP/9999", "TCP/29400-29500", "UDP/5353"]


def test_no_ports_means_every_tcp_port(tmp_path: Path) -> None:
    assert required_ports(_load(tmp_path, config_doc()).groups[0]).describe() == ["TCP/*"]


@pytest.mark.parametrize(
    ("group", "message"),
    [
        ({"ports": [0]}, "groups.ml-training.ports: 0 is not a port range"),
        ({"ports": [True]}, "groups.ml-training.ports: True is not a port"),
        ({"ports": ["99999"]}, "groups.ml-training.ports: '99999' is not a port range"),
        ({"ports": ["900-800"]}, "groups.ml-training.ports: '900-800'"),
        ({"ports": ["80/ICMP"]}, "groups.ml-training.ports: '80/ICMP' is not a port"),
        ({"roleLabel": None}, "profile custom needs roleLabel"),
        ({"profile": "ray"}, "groups.ml-training.profile: 'ray' must be"),
        ({"clusters": ["nope"]}, "names unknown cluster nope"),
        ({"identityLable": "zone"}, "unknown key groups.ml-training.identityLable"),
    ],
)
def test_bad_groups_name_the_key(tmp_path: Path, group: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as err:
        _load(tmp_path, config_doc(group))
    assert message in str(err.value)
    # the config as given (here absolute), and the line of the key
    assert re.match(rf"{re.escape(str(tmp_path))}/sub/topogen\.yaml:\d+: ", str(err.value))


def test_duplicate_group_names(tmp_path: Path) -> None:
    doc = config_doc()
    doc["groups"] = doc["groups"] * 2
    with pytest.raises(InputError, match="duplicate groups name: ml-training"):
        _load(tmp_path, doc)


def test_gpu_node_selector_values_must_be_strings(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"clusters\.lab\.gpuNodeSelector\.gpu: must be a string"):
        _load(tmp_path, config_doc(cluster={"gpuNodeSelector": {"gpu": True}}))
