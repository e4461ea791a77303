"""Who can talk to whom, and why not: `topogen connectivity` and `topogen explain`.

The verdicts come from analysis.reachability (the engine `analyze` uses); this
package picks the endpoints (one per workload), enumerates pairs, breaks a
verdict down port by port, and formats the results.
"""

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
from topogen.connectivity.inputs import ConnectivityInputs, IdentityHint, InputSpec, load_inputs

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
