"""Text for the connectivity report (table, JSON, CSV) and for an explanation."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from topogen.analysis.reachability import RuleMatch, SideTrace
from topogen.connectivity.core import ConnectivityReport
from topogen.connectivity.endpoints import HOST_NETWORK_RULE, WorkloadEndpoint

if TYPE_CHECKING:
    from topogen.connectivity.explain import Explanation

__all__ = [
    "connectivity_csv",
    "connectivity_json",
    "connectivity_table",
    "explanation_json",
    "explanation_text",
]


def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines) + "\n"


def _described(report: ConnectivityReport, sep: str) -> Iterator[tuple[str, str, str]]:
    """(from, to, allowed) of the connected pairs; each distinct port set described once."""
    text: dict[int, str] = {}
    for src, dst, ports in report.connected_ports():
        shown = text.get(id(ports))
        if shown is None:
            shown = text[id(ports)] = sep.join(ports.describe())
        yield src.id, dst.id, shown


API_VERSION = "topogen.io/v1alpha1"


def connectivity_table(report: ConnectivityReport) -> str:
    rows = [("FROM", "TO", "ALLOWED"), *_described(report, ", ")]
    total, connected = report.pair_count, report.connected_count
    out = _table(rows) if connected else "no allowed connections\n"
    out += (
        f"\n{connected} of {total} ordered pairs of {len(report.endpoints)} workloads have an "
        f"allowed connection; {total - connected} have none (not listed)\n"
    )
    if report.excluded:
        names = ", ".join(e.id for e in report.excluded)
        out += f"left out (hostNetwork, out of scope): {names}\n"
    hosts = report.host_network
    if hosts:
        names = ", ".join(e.id for e in hosts)
        out += f"note: hostNetwork workloads, listed as their node: {names}: {HOST_NETWORK_RULE}\n"
    for p in report.connected:
        out += "".join(f"note: {p.src.id} -> {p.dst.id}: {n}\n" for n in p.notes)
    out += "".join(f"note: {n}\n" for n in binding_notes(report))
    return out


def binding_notes(report: ConnectivityReport) -> list[str]:
    """Per identity label stamped at binding: the workloads judged without it, and where
    a placement is judged (these verdicts can differ from analyze's)."""
    by_label: dict[str, list[str]] = {}
    for ep, label in report.unstamped:
        by_label.setdefault(label, []).append(ep)
    return [
        f"{', '.join(eps)} set no {label} label: topogen.yaml names it the identity label, "
        "stamped from the node when each pod is bound, so the verdicts here take the pods "
        "without it; what the policies allow then depends on where each pod lands: "
        f"`topogen analyze` judges every placement, --label NS/NAME={label}=VALUE one of them"
        for label, eps in by_label.items()
    ]


def connectivity_csv(report: ConnectivityReport) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["from", "to", "allowed"])
    writer.writerows(_described(report, " "))
    return buf.getvalue()


def _workload_json(ep: WorkloadEndpoint) -> dict[str, Any]:
    w = ep.workload
    return {
        "id": ep.id,
        "kind": w.kind,
        "namespace": w.namespace,
        "name": w.name,
        "replica": w.replica_name,
        "labels": dict(ep.labels),
        "namedPorts": [f"{n}={num}/{proto}" for n, num, proto in w.template.ports if n],
        "hostNetwork": ep.host_network,
    }


def connectivity_json(report: ConnectivityReport) -> str:
    """Sorted keys, one line per pair (the pairs list is long: N*N entries)."""
    import json  # only the JSON formats need it

    data: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "ConnectivityReport",
        "workloads": [_workload_json(e) for e in report.endpoints],
        "excluded": [{"id": e.id, "reason": "hostNetwork"} for e in report.excluded],
        "policies": [str(p) for p in report.policies],
        "notes": ([f"hostNetwork: {HOST_NETWORK_RULE}"] if report.host_network else [])
        + binding_notes(report),
    }
    pairs = [
        json.dumps(
            {
                "from": p.src.id,
                "to": p.dst.id,
                "connected": p.connected,
                "allowed": p.allowed.describe(),
                **({"notes": list(p.notes)} if p.notes else {}),
            },
            sort_keys=True,
        )
        for p in report.pairs
    ]
    members = {k: _indent(json.dumps(v, indent=2, sort_keys=True)) for k, v in data.items()}
    members["pairs"] = "[\n    " + ",\n    ".join(pairs) + "\n  ]" if pairs else "[]"
    body = ",\n".join(f"  {json.dumps(k)}: {members[k]}" for k in sorted(members))
    return "{\n" + body + "\n}\n"


def _indent(text: str) -> str:
    return text.replace("\n", "\n  ")


# --- explain ---------------------------------------------------------------------


def _endpoint_line(role: str, ep: WorkloadEndpoint) -> str:
    w = ep.workload
    labels = ", ".join(
        f"{k}={v}" + (" (--label)" if k in ep.overridden else "") for k, v in ep.labels
    )
    named = ", ".join(f"{n}={num}/{p}" for n, num, p in w.template.ports if n)
    extra = f"; named ports {named}" if named else ""
    return f"{role} {ep.id} ({w.kind}; labels {labels or 'none'}{extra})"


def _match_line(m: RuleMatch) -> str:
    from topogen.connectivity.explain import rule_name  # (explain's, loaded by it)

    written = m.rule.ports
    ports = "all ports" if written is None else ", ".join(str(r) for r in written) or "no ports"
    if written is not None and any(r.name for r in written):
        ports = f"{ports} -> {m.ports}"  # named ports, as resolved against the destination
    return f"    {rule_name(m.rule)}: {m.peer} on {ports}"


def _side_text(title: str, side: SideTrace, other: WorkloadEndpoint) -> list[str]:
    from topogen.connectivity.explain import isolation_name

    lines = [title]
    if side.isolated:
        who = [isolation_name(i) for i in side.isolations] or [str(p) for p in side.isolated_by]
        if side.always:
            who.append("the agent's policy-enforcement=always")
        lines.append(f"  isolated (default deny) by {', '.join(who)}")
    else:
        lines.append("  not isolated: everything not denied is allowed")
    lines.append(f"  allow rules matching {other.id}:" + ("" if side.allows else " none"))
    lines += [_match_line(m) for m in side.allows]
    lines.append("  deny rules matching:" + ("" if side.denies else " none"))
    lines += [_match_line(m) for m in side.denies]
    lines.append(f"  result: {side.allowed}")
    return lines


def explanation_text(ex: Explanation) -> str:
    v = ex.verdict
    lines = [_endpoint_line("from", ex.src), _endpoint_line("to  ", ex.dst)]
    if ex.requested is not None:
        lines.append(f"port {ex.requested_text} ({ex.requested})")
    verdict = "ALLOWED" if ex.allowed else "DENIED"
    lines += ["", f"verdict: {verdict}; the path allows {v.allowed}"]
    if not ex.allowed:
        lines += [f"  {d}" for d in ex.denials()]
    lines.append("")
    lines += _side_text(f"sender egress ({ex.src.id})", v.egress, ex.dst)
    lines.append("")
    lines += _side_text(f"receiver ingress ({ex.dst.id})", v.ingress, ex.src)
    lines += ["", "per port:"]
    rows = [("  PORTS", "EGRESS", "INGRESS", "RESULT")]
    for pv in ex.ports:
        rows.append(
            (
                f"  {pv.ports}",
                pv.egress.describe(),
                pv.ingress.describe(),
                "allowed" if pv.allowed else "denied",
            )
        )
    text = "\n".join(lines) + "\n" + _table(rows)
    if ex.notes:
        text += "\n" + "".join(f"note: {n}\n" for n in ex.notes)
    return text


def _side_json(side: SideTrace) -> dict[str, Any]:
    from topogen.connectivity.explain import isolation_name

    who = [isolation_name(i) for i in side.isolations] or [str(p) for p in side.isolated_by]
    if side.always:
        who.append("policy-enforcement=always")
    return {
        "isolated": side.isolated,
        "isolatedBy": who,
        "allows": [_match_json(m) for m in side.allows],
        "denies": [_match_json(m) for m in side.denies],
        "allowed": side.allowed.describe(),
    }


def _match_json(m: RuleMatch) -> dict[str, Any]:
    from topogen.connectivity.explain import rule_name

    return {"rule": rule_name(m.rule), "peer": str(m.peer), "ports": m.ports.describe()}


def explanation_json(ex: Explanation) -> str:
    """`explain -o json`: the verdict, each end's trace and the ports, sorted keys."""
    import json  # only the JSON formats need it

    data = {
        "apiVersion": API_VERSION,
        "kind": "Explanation",
        "from": _workload_json(ex.src),
        "to": _workload_json(ex.dst),
        "port": ex.requested_text or None,
        "allowed": ex.allowed,
        "pathAllows": ex.verdict.allowed.describe(),
        "denials": list(ex.denials()) if not ex.allowed else [],
        "egress": _side_json(ex.verdict.egress),
        "ingress": _side_json(ex.verdict.ingress),
        "ports": [
            {
                "ports": pv.ports.describe(),
                "egress": pv.egress.describe(),
                "ingress": pv.ingress.describe(),
                "allowed": pv.allowed,
            }
            for pv in ex.ports
        ],
        "notes": list(ex.notes),
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
