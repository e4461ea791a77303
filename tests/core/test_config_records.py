"""The records commands hold of topogen.yaml (topogen/config/records.py) and their fast
reader equal the pydantic models (topogen/config/models.py): same fields, aliases and
defaults; on every bundled config and on thousands of broken variants of them, the fast
reader either vouches for the data with exactly the model's values and fields set, or
leaves the data to the model (and so never accepts what the model refuses, never words an
error itself)."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, ValidationError

from topogen.config import TopogenConfig, load_config, models, records
from topogen.config.base import Record, from_model, twin
from topogen.config.checks import Unsure

REPO = Path(__file__).resolve().parents[2]
CONFIGS = sorted(REPO.glob("examples/*/topogen*.yaml"))
RECORDS = sorted(
    (
        c
        for c in vars(records).values()
        if isinstance(c, type) and issubclass(c, Record) and c is not Record
    ),
    key=lambda c: c.__name__,
)
# values of every kind the reader may meet, right or wrong in some place
ODD = [
    None, True, False, 0, 1, -1, 65536, 29500, 1.5, 2.0, float("nan"), 10**400, "", "x",
    "yes", "1.36", "1.36\n", "zone\n", "zöne", "Abc", "a" * 64, "a" * 5000, "30s", "1h",
    "POLICY_DENIED", "https://x.example/r", "https://x/{y}", "29400-29500", "5353/UDP",
    "0", "9-1", "custom", "pytorch", "ray", "kyverno", "native", "Audit", "Fail", "zone",
    "pin", "a/b", "example.com/key", "bad key", "kube_pod_labels", "!io\\.kubernetes",
    "(", [], [""], ["x"], ["a", "a"], [1], [None], [{}], {}, {"a": "b"}, {"a": 1},
    {1: "a"}, {"example.com/k": "v"}, {"name": "x"},
]  # fmt: skip


def _loaded(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _shape(value: Any) -> Any:
    """A record tree as comparable data: class, fields set and values with their types."""
    if isinstance(value, Record):
        fields = {k.name: _shape(getattr(value, k.name)) for k in value.KEYS}
        return (type(value).__name__, sorted(value.model_fields_set), fields)
    if isinstance(value, list):
        return [_shape(v) for v in value]
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    return (type(value).__name__, value)


def _both(cls: type[Record], data: Any) -> tuple[Any, Any]:
    """(the fast reader's record or Unsure, the model's record or its ValidationError)."""
    try:
        fast: Any = cls.read(copy.deepcopy(data))
    except Unsure:
        fast = Unsure
    try:
        slow: Any = from_model(twin(cls).model_validate(copy.deepcopy(data)))
    except ValidationError as exc:
        slow = exc
    return fast, slow


def _agree(cls: type[Record], data: Any) -> None:
    fast, slow = _both(cls, data)
    if fast is Unsure:
        return  # the model decides: its record or its error
    assert not isinstance(slow, ValidationError), f"the fast reader accepted {data!r}: {slow}"
    assert _shape(fast) == _shape(slow), data


def _places(data: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key and list index of a YAML tree, as paths."""
    if isinstance(data, dict):
        for k, v in data.items():
            yield (*at, k)
            yield from _places(v, (*at, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield (*at, i)
            yield from _places(v, (*at, i))


def _with(data: Any, at: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(data)
    node = out
    for part in at[:-1]:
        node = node[part]
    node[at[-1]] = value
    return out


def _without(data: Any, at: tuple[Any, ...]) -> Any:
    out = copy.deepcopy(data)
    node = out
    for part in at[:-1]:
        node = node[part]
    del node[at[-1]]
    return out


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
def test_each_record_has_its_models_fields_aliases_and_defaults(cls: type[Record]) -> None:
    model = twin(cls)
    assert issubclass(model, BaseModel) and model.__name__ == cls.__name__
    fields = model.model_fields
    assert [k.name for k in cls.KEYS] == list(fields)
    for key in cls.KEYS:
        info = fields[key.name]
        assert key.key == (info.alias or key.name), key.name
        assert key.required == info.is_required(), key.name
        if not key.required:
            default = info.get_default(call_default_factory=True)
            ours = key.default_value()
            if isinstance(default, BaseModel):
                default = from_model(default)
            assert _shape(ours) == _shape(default), key.name
    assert {n for n, f in fields.items() if f.exclude} == cls.EXCLUDED


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_bundled_config_reads_without_the_model(path: Path) -> None:
    """The fast path is the path: no bundled config needs pydantic."""
    data = _loaded(path)
    fast, slow = _both(TopogenConfig, data)
    assert fast is not Unsure
    assert _shape(fast) == _shape(slow)
    assert fast.model_dump() == twin(TopogenConfig).model_validate(data).model_dump()


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(REPO)))
def test_the_fast_reader_never_accepts_what_the_model_refuses(path: Path) -> None:
    data = _loaded(path)
    places = list(_places(data))
    for at in places:
        _agree(TopogenConfig, _without(data, at))
        for value in ODD:
            _agree(TopogenConfig, _with(data, at, value))
    for key in ("zoneLable", "zone_label", "base_dir", "root", "path", 1):
        _agree(TopogenConfig, {**data, key: "x"})
        cluster = {**data["clusters"][0], key: "x"}
        _agree(TopogenConfig, {**data, "clusters": [cluster]})


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
def test_each_record_alone_agrees_with_its_model(cls: type[Record]) -> None:
    """Each record's keys, one at a time, set to every odd value (the keys the bundled
    configs leave out: autoscaling's, monitoring's, cilium's ...)."""
    for key in cls.KEYS:
        for value in ODD:
            _agree(cls, {key.key: value})
    _agree(cls, {})


def test_autoscaling_and_monitoring_read_fast_and_equal() -> None:
    data = {
        "instanceTypes": [
            {
                "name": "g5.xlarge",
                "zones": ["zone-a"],
                "resources": {"cpu": 4, "memory": "16Gi", "nvidia.com/gpu": 1},
                "labels": {"node.kubernetes.io/instance-type": "g5.xlarge"},
            }
        ],
        "nodeGroups": [
            {
                "name": "gpu-a",
                "maxSize": 3,
                "labels": {"topology.kubernetes.io/zone": "zone-a"},
                "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
                "allocatable": {"cpu": "7500m", "nvidia.com/gpu": 1},
            }
        ],
    }
    fast, slow = _both(records.AutoscalingConfig, data)
    assert fast is not Unsure and _shape(fast) == _shape(slow)
    monitoring = {
        "idleGpuUtilisationPercent": 5,
        "policyDropReasons": ["X"],
        "metrics": {"flows": None},
    }
    fast, slow = _both(records.MonitoringConfig, monitoring)
    assert fast is not Unsure and _shape(fast) == _shape(slow)
    assert fast.idle_gpu_utilisation == 5.0 and type(fast.idle_gpu_utilisation) is float


def test_records_copy_pickle_and_compare_as_the_models_did() -> None:
    cfg = load_config(REPO / "examples" / "zone-split" / "topogen.yaml")
    again = pickle.loads(pickle.dumps(cfg, protocol=pickle.HIGHEST_PROTOCOL))
    assert again == cfg and _shape(again) == _shape(cfg)
    off = cfg.model_copy(update={"default_namespace": "other"})
    assert off.default_namespace == "other" and cfg.default_namespace == "default"
    assert "default_namespace" in off.model_fields_set
    assert "default_namespace" not in cfg.model_fields_set
    with pytest.raises(AttributeError):
        cfg.default_namespace = "x"  # type: ignore[misc]
    assert records.GroupConfig.model_fields["ports"].default is None
    with pytest.raises(ValidationError):
        records.GroupConfig.model_validate({"name": "g"})


def test_a_config_the_reader_cannot_vouch_for_still_loads(tmp_path: Path) -> None:
    """A spelling only pydantic follows (an integer where a float goes is fine; a string
    percentage is not) loads through the model into the same records."""
    text = (REPO / "examples" / "zone-split" / "topogen.yaml").read_text(encoding="utf-8")
    config = tmp_path / "topogen.yaml"
    config.write_text(text + "monitoring:\n  enabled: 'true'\n", encoding="utf-8")
    data = _loaded(config)
    assert _both(TopogenConfig, data)[0] is Unsure
    cfg = load_config(config)
    assert isinstance(cfg, TopogenConfig) and cfg.monitoring.enabled is True
    assert isinstance(cfg.monitoring, records.MonitoringConfig)
    assert models.TopogenConfig.model_validate(data).monitoring.enabled is True
