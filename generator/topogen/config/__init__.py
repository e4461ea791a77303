"""Config (below sources): topogen.yaml, strict, and every rule that depends on it alone.

A config is read into the records of records.py; a config that the fast reader cannot
vouch for goes through the pydantic models of models.py, which accept it (into the same
records) or word its first error. The models (`topogen.config.models`) are the schema:
the published JSON schema and the reference are generated from them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from topogen.config.base import Record
from topogen.config.checks import Unsure
from topogen.config.records import (
    AutoscalingConfig,
    CiliumConfig,
    ClusterConfig,
    GatekeeperConfig,
    GroupConfig,
    InstanceTypeConfig,
    KyvernoConfig,
    MonitoringConfig,
    MonitoringMetrics,
    NodeGroupConfig,
    TaintConfig,
    TopogenConfig,
)
from topogen.config.rules import API_VERSION, DEFAULT_RUNBOOK_URL, parse_port
from topogen.errors import InputError
from topogen.names import dns_label_problem, name_limit
from topogen.yamltext import display_path, load_yaml_text

__all__ = [
    "API_VERSION",
    "DEFAULT_RUNBOOK_URL",
    "AutoscalingConfig",
    "CiliumConfig",
    "ClusterConfig",
    "GatekeeperConfig",
    "GroupConfig",
    "InstanceTypeConfig",
    "KyvernoConfig",
    "MonitoringConfig",
    "MonitoringMetrics",
    "NodeGroupConfig",
    "TaintConfig",
    "TopogenConfig",
    "checked_entry",
    "engine_version_problem",
    "load_config",
    "parse_config",
    "parse_port",
    "with_default_namespace",
]


# the oldest Kubernetes (major, minor) each engine's output works on, and why
ENGINE_MIN_KUBERNETES = {"gatekeeper": ((1, 31), "matchLabelKeys in pod affinity")}
# the API group of the policies each engine names after the group (render/intent.py names
# them topogen-<group>-<suffix>; -validate is the longest suffix every group gets)
_ENGINE_POLICIES = {
    "kyverno": ("policies.kyverno.io/v1", "ValidatingPolicy"),
    "kyverno-legacy": ("kyverno.io/v1", "ClusterPolicy"),
}
_LONGEST_SUFFIX = "-validate"


def engine_version_problem(engine: str, kubernetes_version: str) -> str | None:
    """Why the engine's output does not work on a cluster of this Kubernetes version."""
    oldest = ENGINE_MIN_KUBERNETES.get(engine)
    if oldest is None:
        return None
    (want, why) = oldest
    major, minor = (int(p) for p in kubernetes_version.split("."))
    if (major, minor) >= want:
        return None
    return (
        f"engine {engine} needs Kubernetes {'.'.join(map(str, want))} or later ({why}); "
        f"the cluster is configured as {kubernetes_version}"
    )


def _check_engines(cfg: TopogenConfig, shown: str, text: str | None) -> None:
    """The rules that depend on the engines chosen: each cluster's Kubernetes version, and
    the group names that become the names of policies whose names are limited."""

    def line(*loc: str | int) -> int | None:
        return _line(text, *loc)

    for i, cluster in enumerate(cfg.clusters):
        for engine in cfg.engines_for(cluster):
            problem = engine_version_problem(engine, cluster.kubernetes_version)
            if problem:
                raise InputError(
                    f"clusters.{cluster.name}.kubernetesVersion: {problem}",
                    path=shown,
                    line=line("clusters", i, "kubernetesVersion"),
                    hint="use engine kyverno or native, or raise kubernetesVersion",
                )
    for i, group in enumerate(cfg.groups):
        for cluster in (
            c for c in cfg.clusters if group.clusters is None or c.name in group.clusters
        ):
            for engine in cfg.engines_for(cluster):
                if engine not in _ENGINE_POLICIES:
                    continue
                api_version, kind = _ENGINE_POLICIES[engine]
                name = f"topogen-{group.name}{_LONGEST_SUFFIX}"
                limit, whose = name_limit(api_version)
                size = len(name.encode())
                if size > limit:
                    raise InputError(
                        f"groups.{group.name}.name: engine {engine} names a {kind} {name} "
                        f"({size} bytes; {whose} allows {limit}): use a group name of at most "
                        f"{len(group.name) - (size - limit)} characters",
                        path=shown,
                        line=line("groups", i, "name"),
                    )


def with_default_namespace(cfg: TopogenConfig, namespace: str | None) -> TopogenConfig:
    """`cfg` with namespaced inputs that name no namespace put in `namespace` (-n)."""
    if not namespace:
        return cfg
    problem = dns_label_problem(namespace)
    if problem:
        raise InputError(f"--namespace: {problem}")
    return cfg.model_copy(update={"default_namespace": namespace})


def load_config(path: str | Path, *, allow_outside: bool = False) -> TopogenConfig:
    """Read and check topogen.yaml. Its input paths are confined to its folder (and the
    folders below it, symlinks resolved) unless `allow_outside`."""
    file = Path(path)
    shown = display_path(file)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(
            "config file not found", path=shown, hint="pass -c PATH or run `topogen init`"
        ) from None
    except UnicodeDecodeError:
        raise InputError("file is not UTF-8 text", path=shown) from None
    except OSError as exc:
        raise InputError(f"cannot read config: {exc.strerror or exc}", path=shown) from None
    docs = [d for d in load_yaml_text(text, shown) if d is not None]
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise InputError("config must be one YAML mapping (kind: TopogenConfig)", path=shown)
    cfg = parse_config(docs[0], shown, file.parent, text)
    if allow_outside:
        return cfg
    return cfg.model_copy(update={"root": file.parent.resolve()})


def parse_config(
    data: dict[str, Any], shown: str, base_dir: Path, text: str | None = None
) -> TopogenConfig:
    """`data` (read from `text`, whose lines errors name) as a TopogenConfig, checked."""
    if data.get("apiVersion") != API_VERSION:
        raise InputError(
            f"apiVersion must be {API_VERSION}, got {data.get('apiVersion')!r}",
            path=shown,
            line=_line(text, "apiVersion"),
        )
    try:
        cfg = TopogenConfig.read(data)
    except Unsure:
        cfg = _validated(data, shown, text)
    _check_engines(cfg, shown, text)
    return cfg.model_copy(update={"base_dir": base_dir, "path": shown})


def _validated(data: dict[str, Any], shown: str, text: str | None) -> TopogenConfig:
    """`data` through the pydantic model: its record, or the first error in topogen's
    words (configerrors.py)."""
    from pydantic import ValidationError

    from topogen.config import models
    from topogen.config.base import from_model
    from topogen.configerrors import config_error

    try:
        valid = models.TopogenConfig.model_validate(data)
    except ValidationError as exc:
        raise config_error(
            exc, models.TopogenConfig, data, text, shown, models.PATTERN_WORDS_ALL
        ) from None
    cfg = from_model(valid)
    assert isinstance(cfg, TopogenConfig)
    return cfg


R = TypeVar("R", bound=Record)


def checked_entry(cls: type[R], data: Any, path: str, at: str) -> R:
    """An entry of a file that topogen.yaml names (an instance type of an instance-types
    file) as its record, checked as the config's own entries; `at`: where it is in `path`."""
    try:
        return cls.read(data)
    except Unsure:
        pass
    from pydantic import ValidationError

    from topogen.config import models
    from topogen.config.base import from_model, twin
    from topogen.configerrors import config_error

    model = twin(cls)
    try:
        valid = model.model_validate(data)
    except ValidationError as exc:
        raise config_error(exc, model, data, None, path, models.PATTERN_WORDS_ALL, at) from None
    record = from_model(valid)
    assert isinstance(record, cls)
    return record


def _line(text: str | None, *loc: str | int) -> int | None:
    """The line of a key of the config's text (for its errors)."""
    if not text:
        return None
    from topogen.configerrors import key_line

    return key_line(text, loc)
