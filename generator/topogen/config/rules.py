"""Config: the rules of topogen.yaml that both of its readers use (the fast reader of
records.py and the pydantic models of models.py): string patterns, ports, engines."""

from __future__ import annotations

import re
from typing import Any, Literal

__all__ = [
    "API_VERSION",
    "DEFAULT_RUNBOOK_URL",
    "DROP_REASON_PATTERN",
    "DURATION_PATTERN",
    "ENGINES",
    "METRIC_PATTERN",
    "PATH_PATTERN",
    "QUANTITY_PATTERN",
    "URL_PATTERN",
    "VERSION_PATTERN",
    "Engine",
    "parse_port",
]

API_VERSION = "topogen.io/v1alpha1"

Engine = Literal["kyverno", "kyverno-legacy", "gatekeeper", "native"]
ENGINES: tuple[str, ...] = ("kyverno", "kyverno-legacy", "gatekeeper", "native")

# a file or folder of topogen.yaml: no control characters (a NUL is no path anywhere)
PATH_PATTERN = r"^[^\x00-\x1f\x7f]+$"
# a resource quantity as Kubernetes writes one: 8, "95900m", "768Gi", "1.5"
QUANTITY_PATTERN = r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"
DURATION_PATTERN = r"^\d+[smh]$"
# Hubble's drop reasons are enum names (POLICY_DENIED); they enter a PromQL regex
DROP_REASON_PATTERN = r"^[A-Za-z0-9_]{1,100}$"
# no braces: the URL enters alert annotations, which Prometheus expands as Go templates
URL_PATTERN = r"^https?://[^\s{}#]+$"
METRIC_PATTERN = r"^[a-zA-Z_:][a-zA-Z0-9_:]*$"
VERSION_PATTERN = r"^1\.\d+$"
DEFAULT_RUNBOOK_URL = "https://github.com/topogen/topogen/blob/main/docs/runbooks.md"

_PORT = r"^(\d{1,5})(?:-(\d{1,5}))?(?:/(TCP|UDP|SCTP))?$"


def parse_port(p: Any) -> tuple[str, int, int]:
    """A port of groups[].ports (1-65535, "LO-HI", optionally "/TCP", "/UDP" or "/SCTP") as
    (protocol, low, high); TCP unless it says otherwise. ValueError: not a port."""
    if isinstance(p, int) and not isinstance(p, bool):
        lo = hi = p
        protocol = "TCP"
    else:
        m = re.match(_PORT, p) if isinstance(p, str) else None  # compiled on first use
        if m is None:
            raise ValueError(f"{p!r} is not a port: use 1-65535, LO-HI or PORT/PROTOCOL")
        lo, hi, protocol = int(m[1]), int(m[2] or m[1]), m[3] or "TCP"
    if not 1 <= lo <= hi <= 65535:
        raise ValueError(f"{p!r} is not a port range within 1-65535")
    return protocol, lo, hi
