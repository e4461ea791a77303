"""The rendered objects as one stream (`render --stdout`, `render -o yaml|json`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from topogen.render.base import RenderedFile

__all__ = ["stream_json"]


def stream_json(files: Sequence[RenderedFile]) -> str:
    """The objects `--stdout` prints, as one `kind: List` JSON document."""
    docs: list[Any] = [o for f in sorted(files, key=lambda f: f.path) for o in f.objects]
    body = {"apiVersion": "v1", "kind": "List", "items": docs}
    return json.dumps(body, indent=2, ensure_ascii=False) + "\n"
