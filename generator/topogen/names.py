"""Shared vocabulary: Kubernetes' name rules (k8s.io/apimachinery/pkg/util/validation),
checked where names are read: a name that Kubernetes itself would refuse never reaches a
generated file, a file path, a pattern or a label. The patterns are the config's too (config.py), and the
name limits of the engines whose object names become labels (render/limits.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from topogen.errors import InputError

__all__ = [
    "DNS_LABEL_PATTERN",
    "LABEL_KEY_PATTERN",
    "LABEL_VALUE_PATTERN",
    "check_label_key",
    "check_label_value",
    "check_labels",
    "dns_label_problem",
    "label_key_problem",
    "label_value_problem",
    "name_limit",
    "object_name_problem",
]

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = rf"{_LABEL}(\.{_LABEL})*"
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"  # a qualified name, the part after `/`
DNS_LABEL_PATTERN = f"^{_LABEL}$"  # at most 63 characters
# a label key: an optional DNS subdomain (at most 253) and `/`, a name (at most 63)
LABEL_KEY_PATTERN = f"^({_SUBDOMAIN}/)?{_NAME}$"
LABEL_VALUE_PATTERN = f"^({_NAME})?$"  # at most 63 characters
_DNS_LABEL = re.compile(DNS_LABEL_PATTERN)
_DNS_SUBDOMAIN = re.compile(f"^{_SUBDOMAIN}$")
_QUALIFIED = re.compile(f"^{_NAME}$")
_VALUE = re.compile(LABEL_VALUE_PATTERN)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_GOOD_KEYS: set[str] = set()  # checked already (a fleet repeats a few dozen keys)
_GOOD_VALUES: set[str] = set()


def _shown(value: str) -> str:
    return repr(value if len(value) <= 70 else value[:70] + "...")


def dns_label_problem(value: str) -> str | None:
    if len(value) > 63:
        return f"{_shown(value)} is longer than 63 characters"
    if not _DNS_LABEL.match(value):
        return f"{_shown(value)} is not a DNS label (lowercase letters, digits and '-')"
    return None


def object_name_problem(value: str, *, strict: bool) -> str | None:
    """Any object's name may not hold '/', '%' or control characters, nor be '.' or '..'
    (Kubernetes' path segment rule); `strict`: a DNS subdomain, as for Nodes, Namespaces'
    objects, workloads and network policies."""
    if not value or len(value) > 253:
        return f"{_shown(value)} is not 1 to 253 characters long"
    if value in (".", "..") or "/" in value or "%" in value or _CONTROL.search(value):
        return f"{_shown(value)} is no Kubernetes name (it holds '/', '%' or a control character)"
    if strict and not _DNS_SUBDOMAIN.match(value):
        return f"{_shown(value)} is not a DNS subdomain (lowercase letters, digits, '-' and '.')"
    return None


def label_key_problem(key: str) -> str | None:
    if key in _GOOD_KEYS:
        return None
    prefix, _, name = key.rpartition("/")
    if "/" in key and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return f"label key {_shown(key)}: its prefix is not a DNS subdomain"
    if len(name) > 63 or not _QUALIFIED.match(name):
        return (
            f"label key {_shown(key)} is not a qualified name (at most 63 letters, digits, "
            "'-', '_', '.', starting and ending alphanumeric, after an optional prefix/)"
        )
    _GOOD_KEYS.add(key)
    return None


def label_value_problem(value: str) -> str | None:
    if value in _GOOD_VALUES:
        return None
    if len(value) > 63 or not _VALUE.match(value):
        return (
            f"label value {_shown(value)} is not at most 63 letters, digits, '-', '_' and '.', "
            "starting and ending alphanumeric"
        )
    _GOOD_VALUES.add(value)
    return None


def check_label_key(key: str, what: str, path: str) -> None:
    problem = label_key_problem(key)
    if problem:
        raise InputError(f"{what}: {problem}", path=path)


def check_label_value(value: str, what: str, path: str) -> None:
    problem = label_value_problem(value)
    if problem:
        raise InputError(f"{what}: {problem}", path=path)


def check_labels(labels: Mapping[str, str], what: str, path: str) -> None:
    """Every key and value of a label map, as the API server checks them."""
    good_keys, good_values = _GOOD_KEYS, _GOOD_VALUES
    for key, value in labels.items():
        if key not in good_keys:
            check_label_key(key, what, path)
        if value not in good_values:
            check_label_value(value, f"{what}.{key}", path)


# API groups whose object names the engine also uses as label keys or values (63 bytes)
_SHORT_NAMES = {
    "kyverno.io": "Kyverno (the name of a policy is a label of its reports)",
    "policies.kyverno.io": "Kyverno (the name of a policy is a label of its reports)",
}


def name_limit(api_version: str) -> tuple[int, str]:
    """The longest name (bytes) objects of this API group may have, and whose rule it is."""
    group = api_version.rpartition("/")[0]
    if group in _SHORT_NAMES:
        return 63, _SHORT_NAMES[group]
    return 253, "Kubernetes (a DNS subdomain)"
