"""The API server's rules for the quantities, ports and CIDRs sources read, as Kubernetes
v1.36 validates them (k8s.io/kubernetes pkg/apis/core/validation and
pkg/apis/networking/validation, k8s.io/apimachinery pkg/util/validation) and as Cilium's
CRD schema and agent parser take CIDRs. Each check returns the problem as the API server
states it, or None; the readers name the object and field.

Resources (validateResourceRequirements, ValidateResourceQuantityValue):
- a container's resource name is a qualified name; without a prefix it is cpu, memory,
  ephemeral-storage or hugepages-*; with a prefix outside kubernetes.io it is an extended
  resource (not `requests.`-prefixed);
- no quantity is negative; an extended resource (and pods, services ...) is whole;
- an extended resource or hugepages is not overcommitted: its request needs a limit, and
  equals it; any other request is at most its limit.
Ports: IsValidPortNum (1-65535), IsValidPortName (at most 15 of a-z, 0-9 and '-', a
letter, no '--', no '-' at either end). CIDRs: see `cidr_problem`.
"""

from __future__ import annotations

import ipaddress
import math
import re
from fractions import Fraction

from topogen.names import label_key_problem

__all__ = [
    "STRICT_CIDRS_SINCE",
    "canonical_ipv4_cidr",
    "cidr_problem",
    "cilium_cidr_problem",
    "parse_network",
    "port_name_problem",
    "quantity_problem",
    "request_problem",
    "resource_name_problem",
]

# StrictIPCIDRValidation: beta and on by default from Kubernetes 1.36 (pkg/features)
STRICT_CIDRS_SINCE = (1, 36)
_STANDARD_CONTAINER = {"cpu", "memory", "ephemeral-storage"}
_INTEGER = {
    "pods", "quotas", "services", "replicationcontrollers", "secrets", "configmaps",
    "persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
}  # fmt: skip
_HUGEPAGES = "hugepages-"
_IPV4 = re.compile(r"^([0-9]+)\.([0-9]+)\.([0-9]+)\.([0-9]+)$")
_OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"  # 0-255, no leading zero
_CANONICAL_V4 = re.compile(rf"{_OCTET}\.{_OCTET}\.{_OCTET}\.{_OCTET}/(3[0-2]|[12]?[0-9])")
_PORT_NAME = re.compile(r"^[-a-z0-9]+$")


def _native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _extended(name: str) -> bool:
    return (
        not _native(name)
        and not name.startswith("requests.")
        and label_key_problem(f"requests.{name}") is None
    )


def _integer(name: str) -> bool:
    return name in _INTEGER or _extended(name)


def _overcommit_allowed(name: str) -> bool:
    return _native(name) and not name.startswith(_HUGEPAGES)


def resource_name_problem(name: str) -> str | None:
    """validateContainerResourceName."""
    problem = label_key_problem(name)
    if problem:
        return f"resource name {problem.removeprefix('label key ')}"
    if "/" not in name and name not in _STANDARD_CONTAINER and not name.startswith(_HUGEPAGES):
        return f"resource name {name!r} must be a standard resource for containers"
    if "/" in name and not _native(name) and not _extended(name):
        return f"resource name {name!r} doesn't follow extended resource name standard"
    return None


def quantity_problem(name: str, value: Fraction) -> str | None:
    """ValidateResourceQuantityValue: never negative; whole for integer resources."""
    # a fleet repeats a few quantities thousands of times; keyed by the value's integers
    # (a Fraction's own hash costs more than the check)
    key = (name, value.numerator, value.denominator)
    if key in _QUANTITY_PROBLEMS:
        return _QUANTITY_PROBLEMS[key]
    problem = _quantity_problem(name, value)
    if len(_QUANTITY_PROBLEMS) < 10_000:
        _QUANTITY_PROBLEMS[key] = problem
    return problem


_QUANTITY_PROBLEMS: dict[tuple[str, int, int], str | None] = {}


def _quantity_problem(name: str, value: Fraction) -> str | None:
    if value < 0:
        return "must be greater than or equal to 0"
    if _integer(name) and math.ceil(value * 1000) % 1000:
        return "must be an integer"
    return None


def request_problem(name: str, request: Fraction, limit: Fraction | None) -> str | None:
    """A container's request against its limit (None: no limit)."""
    if limit is None:
        if _overcommit_allowed(name):
            return None
        return f"needs limits.{name}: Kubernetes sets no overcommit of {name}"
    if request != limit and not _overcommit_allowed(name):
        return f"must be equal to {name} limit of {_shown(limit)}"
    if request > limit:
        return f"must be less than or equal to {name} limit of {_shown(limit)}"
    return None


def _shown(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else str(float(value))


def port_name_problem(name: str) -> str | None:
    """IsValidPortName."""
    if len(name) > 15:
        return "must be no more than 15 characters"
    if not _PORT_NAME.match(name):
        return "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"
    if not re.search("[a-z]", name):
        return "must contain at least one letter (a-z)"
    if "--" in name:
        return "must not contain consecutive hyphens"
    if name[0] == "-" or name[-1] == "-":
        return "must not begin or end with a hyphen"
    return None


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def parse_network(text: str) -> tuple[Network, Address, str, str] | None:
    """Go's net.ParseCIDR with leading zeros allowed (k8s.io/utils ParseCIDRSloppy): the
    network (host bits cleared), the address, and the address and prefix length as
    written; None when it is no CIDR (no '/', no address, a prefix length beyond the
    family's). The last answer is kept: a CIDR is checked, then read."""
    global _last_network
    if _last_network is not None and _last_network[0] == text:
        return _last_network[1]
    parsed = _parse_network(text)
    _last_network = (text, parsed)
    return parsed


_last_network: tuple[str, tuple[Network, Address, str, str] | None] | None = None


def _parse_network(text: str) -> tuple[Network, Address, str, str] | None:
    addr, slash, bits = text.partition("/")
    if not slash or not bits.isascii() or not bits.isdigit() or "%" in addr:
        return None
    octets = _IPV4.match(addr)
    try:
        if octets:
            if any(int(o) > 255 for o in octets.groups()):
                return None
            ip: Address = ipaddress.IPv4Address(".".join(str(int(o)) for o in octets.groups()))
        else:
            ip = ipaddress.IPv6Address(addr)
        if int(bits) > ip.max_prefixlen:
            return None
        return ipaddress.ip_network(f"{ip}/{int(bits)}", strict=False), ip, addr, bits
    except ValueError:
        return None


def _leading_zero(addr: str, bits: str) -> bool:
    octets = _IPV4.match(addr)
    parts = list(octets.groups()) if octets else []
    return any(len(p) > 1 and p[0] == "0" for p in [*parts, bits])


def canonical_ipv4_cidr(text: str) -> bool:
    """An IPv4 CIDR in canonical form (no leading zeros, no bits set beyond the prefix
    length): every rule of cidr_problem takes it, strict or not. A node's podCIDR almost
    always is one; deciding so without the ipaddress module is a fleet's nodes' main cost."""
    m = _CANONICAL_V4.fullmatch(text)
    if m is None:
        return False
    a, b, c, d, bits = map(int, m.groups())
    return not (a << 24 | b << 16 | c << 8 | d) & ((1 << (32 - bits)) - 1)


def cidr_problem(text: str, *, strict: bool = True) -> str | None:
    """A CIDR as the API server takes it (IsValidCIDRForLegacyField): a valid CIDR; with
    `strict` (StrictIPCIDRValidation, on from Kubernetes 1.36) also no leading zeros, no
    IPv4-mapped IPv6 address and no bits set beyond the prefix length."""
    if canonical_ipv4_cidr(text):
        return None
    parsed = parse_network(text)
    if parsed is None:
        return "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
    if not strict:
        return None
    net, ip, addr, bits = parsed
    if _leading_zero(addr, bits):
        return "must not have leading 0s in IP or prefix length"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return "must not have an IPv4-mapped IPv6 address"
    if ip != net.network_address:
        return "must not have bits set beyond the prefix length"
    return None


def cilium_cidr_problem(text: str) -> str | None:
    """A CIDR of a Cilium policy: the CRD's `format: cidr` (ParseCIDRSloppy) and the agent's
    netip.ParsePrefix (no leading zeros); bits beyond the prefix length are allowed."""
    parsed = parse_network(text)
    if parsed is None:
        return "is not a CIDR (the CRD's format: cidr, e.g. 10.0.0.0/8 or 2001:db8::/32)"
    if _leading_zero(parsed[2], parsed[3]):
        return "has leading zeros, which Cilium's agent cannot parse"
    return None
