"""The admission part of `make bench`: the largest group's policies on the admission path
of Kyverno's admission controller (bench/admission.py) and of Gatekeeper's
controller-manager (bench/admission_gatekeeper.py), one after the other, each against its
reference and no policy; its Targets rows and its section of bench/RESULTS.md, which
`--admission-only` replaces in place.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import admission
import admission_gatekeeper as agk
import admission_report
import gatekeeper_cost

__all__ = ["BEGIN", "END", "measure", "section", "splice", "splice_gatekeeper", "target_rows"]

BEGIN, END = "<!-- admission: begin -->", "<!-- admission: end -->"
TARGETS = (("p50", 1.2), ("p99", 1.5))
ENGINES = {"kyverno": "", "gatekeeper": "Gatekeeper "}  # the rows' prefix


def _say(what: str) -> None:
    print(f"bench: {what}", file=sys.stderr, flush=True)


def measure(
    topogen: Path,
    config: Path,
    group: str,
    files: Sequence[Path],
    fleet: str,
    pods: int,
    work: Path,
    pace: float = admission.PACE,
    engines: Sequence[str] = tuple(ENGINES),
) -> dict[str, dict[str, Any] | None]:
    """engine -> its measure, None where its binaries are not built or it is not among
    `engines`; `pace`: seconds from one pod's creation to the next's (0: back to back)."""
    out: dict[str, dict[str, Any] | None] = dict.fromkeys(ENGINES)
    if "kyverno" in engines and admission.available():
        _say("admission, Kyverno ...")
        began = time.monotonic()
        kyv = admission.run_admission(files, config, group, pods, work / "kyverno", pace=pace)
        out["kyverno"] = kyv | {"fleet": fleet, "seconds": time.monotonic() - began}
    if "gatekeeper" in engines and agk.available():
        _say("admission, Gatekeeper ...")
        began = time.monotonic()
        folder = agk.render_gatekeeper(topogen, config, work / "gatekeeper-render")
        objects = agk.gatekeeper_objects(folder, group)
        gk = agk.run_gatekeeper_admission(
            objects, config, group, pods, work / "gatekeeper", pace=pace
        )
        if gatekeeper_cost.available():  # the same mutators in process, no webhook around
            _say("Gatekeeper's mutation CPU in process ...")
            gk["mutation_cost"] = gatekeeper_cost.measure(
                objects, config, group, pods, work / "gatekeeper-cost"
            )
        out["gatekeeper"] = gk | {"fleet": fleet, "seconds": time.monotonic() - began}
    return out


def target_rows(adm: dict[str, dict[str, Any] | None]) -> list[tuple[str, str, bool | None]]:
    """(target, measured, holds) per engine and percentile; holds None: not measured."""
    rows: list[tuple[str, str, bool | None]] = []
    for engine, prefix in ENGINES.items():
        got = adm.get(engine)
        for q, limit in TARGETS:
            target = f"{prefix}admission {q} at most {limit}x the reference"
            if got is None:
                rows.append((target, "not measured", None))
                continue
            ratio = got[f"{q}_ratio"]
            measured = (
                f"{prefix}admission {q}, generated / reference: {ratio:.2f}x "
                f"({got['fleet']} fleet, {got['pods']} pods)"
            )
            rows.append((target, measured, ratio <= limit))
            # the policies as the enforce Component makes them, over the reference and over
            # the reference under Enforce
            for key, over in (("enforce_", "reference"), ("enforce_ref_", "reference Enforce")):
                if f"{key}{q}_ratio" not in got:
                    continue
                ratio = got[f"{key}{q}_ratio"]
                rows.append(
                    (
                        f"{target}, Enforce" + (f" (over the {over})" if key != "enforce_" else ""),
                        f"{prefix}admission {q}, generated Enforce / {over}: {ratio:.2f}x "
                        f"({got['fleet']} fleet, {got['pods']} pods)",
                        ratio <= limit,
                    )
                )
    return rows


def section(adm: dict[str, dict[str, Any] | None]) -> str:
    """## Admission, between its markers."""
    lines = [BEGIN, "## Admission", ""]
    kyv, gk = adm.get("kyverno"), adm.get("gatekeeper")
    if kyv is None:
        lines.append(
            "Kyverno: not measured (`--skip-admission`, or the control plane or Kyverno's "
            "admission controller is not built)."
        )
    else:
        lines += admission_report.report_lines(kyv)
    lines += ["", "### Gatekeeper", ""]
    if gk is None:
        lines.append(
            "Not measured (`--skip-admission`, or Gatekeeper's controller-manager is not built)."
        )
    else:
        lines += _gatekeeper_lines(gk)
    took = [
        f"{e} {got['seconds'] / 60:.1f} min" for e, got in adm.items() if got and "seconds" in got
    ]
    if took:
        lines += [
            "",
            f"Time (control plane and controller start, switches included): {', '.join(took)}.",
        ]
    return "\n".join([*lines, END]) + "\n"


def _row(target: str, measured: str, ok: bool | None) -> str:
    return f"| {target} | {measured} | {'yes' if ok else 'n/a' if ok is None else '**no**'} |"


def splice(text: str, adm: dict[str, dict[str, Any] | None]) -> str:
    """RESULTS.md with the admission section and Targets rows replaced (or added: the
    section before the fleet section, the rows before the last Targets row)."""
    prefixes = tuple(f"| {p}admission p" for p in ENGINES.values())
    lines = [ln for ln in text.split("\n") if not ln.startswith(prefixes)]
    body = "\n".join(lines)
    if BEGIN in body and END in body:
        head, rest = body.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        body = head + section(adm) + ("\n" + tail if tail else "")
    elif "<!-- fleet: begin -->" in body:
        head, rest = body.split("<!-- fleet: begin -->", 1)
        body = head + section(adm) + "\n<!-- fleet: begin -->" + rest
    else:
        body = body.rstrip("\n") + "\n\n" + section(adm)
    lines = body.split("\n")
    rows = [_row(*r) for r in target_rows(adm)]
    if "## Targets" not in lines:  # a file of its own (--out): a Targets table of its own
        table = ["## Targets", "", "| target | measured | holds |", "|---|---|---|", *rows]
        return body.rstrip("\n") + "\n\n" + "\n".join(table) + "\n"
    start = lines.index("## Targets")
    end = next(i for i in range(start + 3, len(lines)) if not lines[i].startswith("|"))
    at = max(end - 1, start + 4)  # before the last row, never above the header's separator
    return "\n".join([*lines[:at], *rows, *lines[at:]])


def _gatekeeper_lines(gk: dict[str, Any]) -> list[str]:
    """Gatekeeper's subsection: its admission rounds, then the same mutators in process."""
    cost = gk.get("mutation_cost")
    return [*agk.report_lines(gk), *(["", *gatekeeper_cost.report_lines(cost)] if cost else [])]


def splice_gatekeeper(text: str, gk: dict[str, Any]) -> str:
    """RESULTS.md with Gatekeeper's part alone replaced (`--gatekeeper-only`): its
    subsection of the admission section and its Targets rows, Kyverno's kept as they are;
    without an admission section, `splice` with Kyverno not measured."""
    head, sep, rest = text.partition("\n### Gatekeeper\n")
    if not sep or END not in rest:
        return splice(text, {"kyverno": None, "gatekeeper": gk})
    took = f"Time (control plane and controller start, switches included): gatekeeper {gk['seconds'] / 60:.1f} min."
    body = head + sep + "\n" + "\n".join([*_gatekeeper_lines(gk), "", took]) + "\n" + END
    body += rest.split(END, 1)[1]
    prefix = f"| {ENGINES['gatekeeper']}admission p"
    lines = body.split("\n")
    at = next((i for i, ln in enumerate(lines) if ln.startswith(prefix)), None)
    lines = [ln for ln in lines if not ln.startswith(prefix)]
    rows = [_row(*r) for r in target_rows({"gatekeeper": gk}) if r[0].startswith(prefix[2:])]
    if at is None:
        return splice("\n".join(lines), {"kyverno": None, "gatekeeper": gk})
    return "\n".join([*lines[:at], *rows, *lines[at:]])
