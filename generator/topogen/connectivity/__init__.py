"""Who can talk to whom, and why not: `topogen connectivity` and `topogen explain`.

The verdicts come from analysis.reachability (the engine `analyze` uses); this
package picks the endpoints (one per workload), enumerates pairs, breaks a
verdict down port by port, and formats the results.

The names below are imported from their modules on first use, so `connectivity` does
not import the port-by-port breakdown `explain` needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from topogen.connectivity.core import ConnectivityReport, Pair, compute_connectivity
    from topogen.connectivity.endpoints import (
        LabelOverride,
        WorkloadEndpoint,
        build_endpoints,
        parse_label_override,
        resolve,
    )
    from topogen.connectivity.explain import (
        Explanation,
        PortVerdict,
        SideStatus,
        explain_path,
        parse_port,
    )
    from topogen.connectivity.format import (
        connectivity_csv,
        connectivity_json,
        connectivity_table,
        explanation_json,
        explanation_text,
    )
    from topogen.connectivity.inputs import (
        ConnectivityInputs,
        IdentityHint,
        InputSpec,
        load_inputs,
    )

_HOME = {
    "ConnectivityInputs": "inputs",
    "ConnectivityReport": "core",
    "Explanation": "explain",
    "IdentityHint": "inputs",
    "InputSpec": "inputs",
    "LabelOverride": "endpoints",
    "Pair": "core",
    "PortVerdict": "explain",
    "SideStatus": "explain",
    "WorkloadEndpoint": "endpoints",
    "build_endpoints": "endpoints",
    "compute_connectivity": "core",
    "connectivity_csv": "format",
    "connectivity_json": "format",
    "connectivity_table": "format",
    "explain_path": "explain",
    "explanation_json": "format",
    "explanation_text": "format",
    "load_inputs": "inputs",
    "parse_label_override": "endpoints",
    "parse_port": "explain",
    "resolve": "endpoints",
}

__all__ = [
    "ConnectivityInputs",
    "ConnectivityReport",
    "Explanation",
    "IdentityHint",
    "InputSpec",
    "LabelOverride",
    "Pair",
    "PortVerdict",
    "SideStatus",
    "WorkloadEndpoint",
    "build_endpoints",
    "compute_connectivity",
    "connectivity_csv",
    "connectivity_json",
    "connectivity_table",
    "explain_path",
    "explanation_json",
    "explanation_text",
    "load_inputs",
    "parse_label_override",
    "parse_port",
    "resolve",
]


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
