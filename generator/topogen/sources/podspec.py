"""Pod templates: the scheduling-relevant part of a pod spec."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from topogen.errors import InputError
from topogen.manifest import KubeObject, as_bool, as_list, as_map, as_str, string_map
from topogen.model import (
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodAffinityTerm,
    PodTemplate,
    Toleration,
)
from topogen.names import (
    check_label_key,
    check_label_value,
    check_labels,
    dns_label_problem,
    object_name_problem,
)
from topogen.sources.api_rules import (
    port_name_problem,
    quantity_problem,
    request_problem,
    resource_name_problem,
)
from topogen.sources.label_selectors import read_label_selector, read_requirements
from topogen.sources.objects import parse_quantity

__all__ = ["parse_pod_template", "parse_tolerations"]

_EFFECTS = ("", "NoSchedule", "PreferNoSchedule", "NoExecute")
_PROTOCOLS = ("TCP", "UDP", "SCTP")


def parse_pod_template(
    raw: Any,
    what: str,
    obj: KubeObject,
    extra_labels: Mapping[str, str] | None = None,
    extra_annotations: Mapping[str, str] | None = None,
) -> PodTemplate:
    """`raw` is a PodTemplateSpec (metadata + spec) at field path `what` ("": the object
    itself, a Pod)."""
    at = f"{what}." if what else ""
    tmpl = as_map(raw, what, obj)
    meta = as_map(tmpl.get("metadata"), f"{at}metadata", obj)
    labels = string_map(meta.get("labels"), f"{at}metadata.labels", obj)
    check_labels(labels, f"{obj.where()}: {at}metadata.labels", obj.path)
    if extra_labels:
        labels = {**labels, **extra_labels}
    annotations = string_map(meta.get("annotations"), f"{at}metadata.annotations", obj)
    if extra_annotations:  # what the controller adds (a completion index ...)
        annotations = {**annotations, **extra_annotations}
    spec = as_map(tmpl.get("spec"), f"{at}spec", obj)
    return parse_pod_spec(spec, f"{at}spec", obj, labels, annotations)


def parse_pod_spec(
    spec: Mapping[str, Any],
    what: str,
    obj: KubeObject,
    labels: dict[str, str],
    annotations: dict[str, str],
) -> PodTemplate:
    affinity = as_map(spec.get("affinity"), f"{what}.affinity", obj)
    requests, ports = _containers(spec, what, obj)
    return PodTemplate(
        labels=labels,
        node_selector=_node_selector(spec, what, obj),
        node_affinity=_node_affinity(affinity, f"{what}.affinity", obj),
        tolerations=parse_tolerations(spec, what, obj),
        pod_affinity=_pod_affinity(affinity, f"{what}.affinity", obj),
        requests=requests,
        host_network=as_bool(spec.get("hostNetwork"), f"{what}.hostNetwork", obj),
        ports=ports,
        annotations=annotations,
        service_account=_service_account(spec, what, obj),
        scheduling_gates=_scheduling_gates(spec, what, obj),
    )


def _scheduling_gates(spec: Mapping[str, Any], what: str, obj: KubeObject) -> tuple[str, ...]:
    """spec.schedulingGates[].name (Kueue's TAS gate marks the pods it places)."""
    out = []
    for i, gate in enumerate(as_list(spec.get("schedulingGates"), f"{what}.schedulingGates", obj)):
        at = f"{what}.schedulingGates[{i}]"
        name = as_str(as_map(gate, at, obj).get("name"), f"{at}.name", obj)
        if not name:
            raise InputError(f"{obj.where()}: {at}.name is required", path=obj.path)
        out.append(name)
    return tuple(out)


def _service_account(spec: Mapping[str, Any], what: str, obj: KubeObject) -> str:
    """serviceAccountName, or the deprecated serviceAccount it replaces."""
    for key in ("serviceAccountName", "serviceAccount"):
        value = spec.get(key)
        if value is not None and not isinstance(value, str):
            raise InputError(f"{obj.where()}: {what}.{key} must be a string", path=obj.path)
        if value:
            return value
    return ""


def _node_selector(spec: Mapping[str, Any], what: str, obj: KubeObject) -> dict[str, str]:
    selector = string_map(spec.get("nodeSelector"), f"{what}.nodeSelector", obj)
    check_labels(selector, f"{obj.where()}: {what}.nodeSelector", obj.path)
    return selector


def parse_tolerations(
    spec: Mapping[str, Any], what: str, obj: KubeObject
) -> tuple[Toleration, ...]:
    """spec.tolerations (`what`: the spec's field path)."""
    out = []
    for i, raw in enumerate(as_list(spec.get("tolerations"), f"{what}.tolerations", obj)):
        t = as_map(raw, f"{what}.tolerations[{i}]", obj)
        op = t.get("operator", "Equal") or "Equal"
        if op not in ("Equal", "Exists"):
            raise InputError(
                f"{obj.where()}: {what}.tolerations[{i}].operator must be Equal or "
                f"Exists, got {op!r}",
                path=obj.path,
            )
        tw = f"{what}.tolerations[{i}]"
        value = t.get("value", "")
        if value is not None and not isinstance(value, str):
            raise InputError(
                f"{obj.where()}: {tw}.value must be a string", path=obj.path, hint="quote it"
            )
        effect = as_str(t.get("effect"), f"{tw}.effect", obj)
        if effect not in _EFFECTS:
            raise InputError(
                f"{obj.where()}: {tw}.effect must be one of "
                f"{', '.join(e for e in _EFFECTS if e)} or empty, got {effect!r}",
                path=obj.path,
            )
        key = as_str(t.get("key"), f"{tw}.key", obj)
        if key:
            check_label_key(key, f"{obj.where()}: {tw}.key", obj.path)
        problem = _toleration_problem(key, op, value or "", effect, t.get("tolerationSeconds"))
        if problem:
            raise InputError(f"{obj.where()}: {tw}: {problem}", path=obj.path)
        check_label_value(value or "", f"{obj.where()}: {tw}.value", obj.path)
        out.append(Toleration(key, op, value or "", effect))
    return tuple(out)


def _toleration_problem(key: str, op: str, value: str, effect: str, seconds: Any) -> str | None:
    """ValidateTolerations' rules beyond the key's and the value's syntax."""
    if not key and op != "Exists":
        return 'operator must be Exists when `key` is empty, which means "match all values and all keys"'
    if op == "Exists" and value:
        return "value must be empty when `operator` is 'Exists'"
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)):
        return f"tolerationSeconds must be an integer, got {seconds!r}"
    if seconds is not None and effect != "NoExecute":
        return "effect must be 'NoExecute' when `tolerationSeconds` is set"
    return None


def _node_affinity(
    affinity: Mapping[str, Any], what: str, obj: KubeObject
) -> tuple[NodeSelectorTerm, ...] | None:
    na = as_map(affinity.get("nodeAffinity"), f"{what}.nodeAffinity", obj)
    req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
    if req is None:
        return None
    rw = f"{what}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    terms = []
    raw_terms = as_list(
        as_map(req, rw, obj).get("nodeSelectorTerms"), f"{rw}.nodeSelectorTerms", obj
    )
    if not raw_terms:
        raise InputError(
            f"{obj.where()}: {rw}.nodeSelectorTerms: must have at least one node selector term",
            path=obj.path,
        )
    for i, raw in enumerate(raw_terms):
        tw = f"{rw}.nodeSelectorTerms[{i}]"
        term = as_map(raw, tw, obj)
        reqs = read_requirements(term.get("matchExpressions"), f"{tw}.matchExpressions", obj)
        if term.get("matchFields"):
            for j, e in enumerate(as_list(term.get("matchFields"), f"{tw}.matchFields", obj)):
                fw = f"{tw}.matchFields[{j}]"
                em = as_map(e, fw, obj)
                # metadata.name is the only supported field; model it as a pseudo label
                values = as_list(em.get("values"), f"{fw}.values", obj)
                if (
                    em.get("key") != "metadata.name"
                    or em.get("operator") not in ("In", "NotIn")
                    or len(values) != 1
                    or not isinstance(values[0], str)
                    or object_name_problem(values[0], strict=True)
                ):
                    raise InputError(
                        f"{obj.where()}: {fw} supports only key metadata.name with "
                        "operator In or NotIn and one value, a node name",
                        path=obj.path,
                    )
                reqs.append(NodeSelectorRequirement("metadata.name", em["operator"], tuple(values)))
        terms.append(NodeSelectorTerm(tuple(reqs)))
    return tuple(terms)


def _pod_affinity(
    affinity: Mapping[str, Any], what: str, obj: KubeObject
) -> tuple[PodAffinityTerm, ...]:
    out = []
    for kind, anti in (("podAffinity", False), ("podAntiAffinity", True)):
        pa = as_map(affinity.get(kind), f"{what}.{kind}", obj)
        rw = f"{what}.{kind}.requiredDuringSchedulingIgnoredDuringExecution"
        for i, raw in enumerate(
            as_list(pa.get("requiredDuringSchedulingIgnoredDuringExecution"), rw, obj)
        ):
            term = as_map(raw, f"{rw}[{i}]", obj)
            key = term.get("topologyKey")
            if not isinstance(key, str) or not key:
                raise InputError(f"{obj.where()}: {rw}[{i}] needs a topologyKey", path=obj.path)
            check_label_key(key, f"{obj.where()}: {rw}[{i}].topologyKey", obj.path)
            sel = read_label_selector(term.get("labelSelector"), f"{rw}[{i}].labelSelector", obj)
            namespaces = tuple(as_list(term.get("namespaces"), f"{rw}[{i}].namespaces", obj))
            for n in namespaces:
                problem = dns_label_problem(n) if isinstance(n, str) else f"{n!r} is not a string"
                if problem:
                    raise InputError(
                        f"{obj.where()}: {rw}[{i}].namespaces: {problem}", path=obj.path
                    )
            out.append(PodAffinityTerm(sel, key, namespaces, anti))
    return tuple(out)


def _containers(
    spec: Mapping[str, Any], what: str, obj: KubeObject
) -> tuple[dict[str, Fraction], tuple[tuple[str, int, str], ...]]:
    """Effective pod request: max(each init container, sum of containers)."""
    total: dict[str, Fraction] = {}
    ports: list[tuple[str, int, str]] = []
    containers = as_list(spec.get("containers"), f"{what}.containers", obj)
    for i, c in enumerate(containers):
        cm = as_map(c, f"{what}.containers[{i}]", obj)
        for k, v in _requests(cm, f"{what}.containers[{i}]", obj).items():
            total[k] = total.get(k, Fraction(0)) + v
        for j, p in enumerate(as_list(cm.get("ports"), f"{what}.containers[{i}].ports", obj)):
            pm = as_map(p, f"{what}.containers[{i}].ports[{j}]", obj)
            pw = f"{what}.containers[{i}].ports[{j}]"
            number = pm.get("containerPort")
            if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= 65535:
                raise InputError(
                    f"{obj.where()}: {pw}.containerPort must be a port number "
                    f"(1-65535), got {number!r}",
                    path=obj.path,
                )
            ports.append(_container_port(pm, number, pw, obj, {p[0] for p in ports}))
    for i, c in enumerate(as_list(spec.get("initContainers"), f"{what}.initContainers", obj)):
        cm = as_map(c, f"{what}.initContainers[{i}]", obj)
        for k, v in _requests(cm, f"{what}.initContainers[{i}]", obj).items():
            total[k] = max(total.get(k, Fraction(0)), v)
    return total, tuple(sorted(ports))


def _container_port(
    pm: Mapping[str, Any], number: int, what: str, obj: KubeObject, names: set[str]
) -> tuple[str, int, str]:
    """(name, number, protocol) of a container port, as validateContainerPorts takes it."""
    name = as_str(pm.get("name"), f"{what}.name", obj)
    problem = port_name_problem(name) if name else None
    if problem is None and name and name in names:
        problem = f"duplicate port name {name!r}"
    protocol = as_str(pm.get("protocol"), f"{what}.protocol", obj) or "TCP"
    if problem is None and protocol not in _PROTOCOLS:
        problem = f"protocol {protocol!r} is not one of {', '.join(_PROTOCOLS)}"
    if problem:
        raise InputError(f"{obj.where()}: {what}: {problem}", path=obj.path)
    return name, number, protocol


def _requests(container: Mapping[str, Any], what: str, obj: KubeObject) -> dict[str, Fraction]:
    """The container's requests (a limit without a request is the request), each resource
    as validateResourceRequirements checks it."""
    res = as_map(container.get("resources"), f"{what}.resources", obj)
    read: dict[str, dict[str, Fraction]] = {}
    for part in ("limits", "requests"):
        read[part] = {}
        for k, v in as_map(res.get(part), f"{what}.resources.{part}", obj).items():
            at = f"{what}.resources.{part}.{k}"
            name = str(k)
            q = parse_quantity(v, at, obj)
            problem = resource_name_problem(name) or quantity_problem(name, q)
            if problem is None and part == "requests":
                problem = request_problem(name, q, read["limits"].get(name))
            if problem:
                raise InputError(f"{obj.where()}: {at}: {problem}", path=obj.path)
            read[part][name] = q
    return {**read["limits"], **read["requests"]}
