"""toPorts of CiliumNetworkPolicy rules, read as the CRD schema and the agent read them.

- `port` is a string (the API server refuses a number): an IANA service name (a named
  port, case-insensitive) or a number 0-65535 (Go syntax: `017` is octal); "0" is
  every port of the protocol; an empty or missing port is refused;
- `protocol`: TCP, UDP, SCTP, ANY (or none: TCP, UDP and SCTP), or a protocol without
  ports (VRRP, IGMP, GRE, IPIP, IPV6, ESP, AH: port "0" only), which no TCP/UDP/SCTP
  traffic matches;
- `endPort` above `port` makes a range, otherwise it is ignored;
- a toPorts entry without ports adds nothing (it does not mean "every port").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from topogen.errors import InputError
from topogen.manifest import KubeObject, as_list, as_map, check_fields
from topogen.model import PortRange

__all__ = ["PortsRead", "cilium_ports"]

_TRANSPORT = ("TCP", "UDP", "SCTP")
_PORTLESS = ("VRRP", "IGMP", "GRE", "IPIP", "IPV6", "ESP", "AH")
_PROTOCOLS = (*_TRANSPORT, *_PORTLESS, "ANY")
# the CRD's pattern for toPorts[].ports[].port (its alternatives anchor one end each)
_PORT_SCHEMA = re.compile(
    r"^(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4})"
    r"|([a-zA-Z0-9]-?)*[a-zA-Z](-?[a-zA-Z0-9])*$"
)
_SVC_NAME = re.compile(r"^([a-zA-Z0-9]-?)*[a-zA-Z](-?[a-zA-Z0-9])*$")
_PORT_RULE_KEYS = {"ports", "terminatingTLS", "originatingTLS", "serverNames", "listener", "rules"}
_PORT_KEYS = {"port", "endPort", "protocol"}
_L7_KEYS = {"http", "dns"}


@dataclass(frozen=True)
class PortsRead:
    """What an item's toPorts allow: None every port; the L7 rule kinds it carries."""

    ranges: tuple[PortRange, ...] | None
    l7: tuple[str, ...] = ()


def _port_number(text: str) -> int | None:
    """strconv.ParseUint(text, 0, 16): decimal, 0x hex, 0o/leading-0 octal, 0b binary."""
    t = text.replace("_", "") if "_" in text and not text.startswith("_") else text
    try:
        n = int(t, 0) if not re.fullmatch(r"0[0-7]+", t) else int(t, 8)
    except ValueError:
        return None
    return n if 0 <= n <= 65535 else None


def _one_port(raw: Any, what: str, obj: KubeObject) -> list[PortRange]:
    pm = as_map(raw, what, obj)
    check_fields(pm, _PORT_KEYS, what, obj)
    port, proto, end = pm.get("port"), pm.get("protocol"), pm.get("endPort")
    if port is not None and not isinstance(port, str):
        raise InputError(
            f"{obj.where()}: {what}.port must be a string, got {port!r}",
            path=obj.path,
            hint='quote it: port: "80"',
        )
    if proto is not None and proto not in _PROTOCOLS:
        raise InputError(
            f"{obj.where()}: {what}.protocol {proto!r} is not one of {', '.join(_PROTOCOLS)}",
            path=obj.path,
        )
    if end is not None and (
        isinstance(end, bool) or not isinstance(end, int) or not 0 <= end <= 65535
    ):
        raise InputError(f"{obj.where()}: {what}.endPort must be 0-65535", path=obj.path)
    if not port:
        raise InputError(
            f"{obj.where()}: {what} has no port",
            path=obj.path,
            hint='Cilium needs one; "0" means every port',
        )
    if not _PORT_SCHEMA.search(port):
        raise InputError(f"{obj.where()}: {what}.port {port!r} is not a port", path=obj.path)
    protocol = proto or "ANY"
    protocols = _TRANSPORT if protocol == "ANY" else (protocol,)
    if len(port) <= 15 and _SVC_NAME.match(port):
        name = port.lower()
        return [PortRange(p, 0, 0, name=name) for p in protocols if p in _TRANSPORT]
    number = _port_number(port)
    if number is None:
        raise InputError(f"{obj.where()}: {what}.port {port!r} is not 0-65535", path=obj.path)
    if protocol in _PORTLESS:
        if number != 0:
            raise InputError(
                f"{obj.where()}: {what}: protocol {protocol} takes no port", path=obj.path
            )
        return []  # no TCP/UDP/SCTP traffic
    if number == 0:
        return [PortRange(p, 1, 65535) for p in protocols]
    last = end if isinstance(end, int) and end > number else number
    return [PortRange(p, number, last) for p in protocols]


def cilium_ports(item: Mapping[str, Any], what: str, obj: KubeObject, *, deny: bool) -> PortsRead:
    """The ports an allow or deny item's toPorts (or icmps) cover."""
    to_ports = as_list(item.get("toPorts"), f"{what}.toPorts", obj)
    icmps = as_list(item.get("icmps"), f"{what}.icmps", obj)
    if icmps and to_ports:
        raise InputError(
            f"{obj.where()}: {what} has both icmps and toPorts",
            path=obj.path,
            hint="Cilium needs a separate rule for each",
        )
    if not to_ports:
        # ICMP-only rules allow no TCP/UDP/SCTP traffic
        return PortsRead(() if icmps else None)
    out: list[PortRange] = []
    l7: set[str] = set()
    for i, tp in enumerate(to_ports):
        tw = f"{what}.toPorts[{i}]"
        entry = as_map(tp, tw, obj)
        check_fields(entry, {"ports"} if deny else _PORT_RULE_KEYS, tw, obj)
        ports = as_list(entry.get("ports"), f"{tw}.ports", obj)
        if len(ports) > 40:
            raise InputError(f"{obj.where()}: {tw} has more than 40 ports", path=obj.path)
        read = [r for j, p in enumerate(ports) for r in _one_port(p, f"{tw}.ports[{j}]", obj)]
        kinds = _l7_kinds(entry, tw, obj, ports, read)
        if ports:
            l7 |= set(kinds)
        out += read
    return PortsRead(tuple(sorted(set(out))), tuple(sorted(l7)))


def _l7_kinds(
    entry: Mapping[str, Any], what: str, obj: KubeObject, ports: list[Any], read: list[PortRange]
) -> list[str]:
    rules = as_map(entry.get("rules"), f"{what}.rules", obj)
    check_fields(rules, _L7_KEYS, f"{what}.rules", obj)
    kinds = [k for k in ("http", "dns") if rules.get(k)]
    if len(kinds) > 1:
        raise InputError(f"{obj.where()}: {what}.rules mixes {' and '.join(kinds)}", path=obj.path)
    if kinds == ["dns"] and not ports:
        raise InputError(f"{obj.where()}: {what}: DNS rules need port 53", path=obj.path)
    if kinds == ["http"]:
        for p in ports:
            pm = p if isinstance(p, dict) else {}
            if pm.get("protocol") != "TCP":
                raise InputError(
                    f"{obj.where()}: {what}: L7 rules apply to TCP only (set protocol: TCP)",
                    path=obj.path,
                )
            if pm.get("port") == "0":
                raise InputError(f"{obj.where()}: {what}: L7 rules need a port", path=obj.path)
    return kinds
