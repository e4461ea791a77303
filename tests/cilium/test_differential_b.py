"""Seeded differential, scenarios 250-499 (two files: pytest-xdist runs them in parallel).

Each scenario is a random cluster (tests/cilium/scenarios.py): 2-4 namespaces, 3-8
workloads, 1-6 CNP/CCNP (NetworkPolicies and Services now and then, host policies and
nodes in a third), under Cilium's default or a custom label filter and every
policy-enforcement mode. `topogen connectivity`'s verdicts, and each side of them from
the engine `analyze` uses, must equal Cilium's engine's (tools/cilium-oracle) for every
ordered pair and every probe port; so must each pod's identity labels, and what either
side rejects.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from diff_kit import check_block

pytestmark = [pytest.mark.tools, pytest.mark.slow]


def test_differential_b(tmp_path: Path) -> None:
    check_block(250, 250, tmp_path)
