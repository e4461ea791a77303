"""Locate the real tools `make tools` builds; skip locally without them, fail in CI."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TOOLS_BIN = REPO / ".tools" / "bin"


def require_tool(name: str) -> Path:
    path = TOOLS_BIN / name
    if path.exists():
        return path
    if os.environ.get("CI"):
        pytest.fail(f"{path} is missing: `make tools` must build it in CI")
    pytest.skip(f"{name} not built (run `make tools`)")
