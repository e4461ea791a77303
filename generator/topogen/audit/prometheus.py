"""GPU utilisation from Prometheus: one instant query over plain HTTP, with a timeout."""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request

from topogen.sources.live import LiveError, is_timeout

__all__ = ["query_prometheus"]


def query_prometheus(url: str, query: str, timeout: float) -> list[tuple[dict[str, str], float]]:
    """An instant query (GET /api/v1/query): (labels, value) per sample of the vector."""
    base = url.rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise LiveError(f"--prometheus must be an http(s) URL, got {url!r}")
    target = f"{base}/api/v1/query?{urllib.parse.urlencode({'query': query})}"
    request = urllib.request.Request(target, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            body = resp.read(64 * 1024 * 1024)
    except urllib.error.HTTPError as exc:
        detail = _prometheus_error(exc.read(4096))
        raise LiveError(f"Prometheus at {base} answered {exc.code} {exc.reason}{detail}") from None
    except (TimeoutError, urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        what = "did not answer in time" if is_timeout(reason) else f"cannot be reached: {reason}"
        raise LiveError(f"Prometheus at {base} {what}", hint=f"timeout {timeout:g}s") from None
    try:
        doc = json.loads(body)
        if doc.get("status") != "success":
            raise LiveError(f"Prometheus at {base}: query failed: {doc.get('error', doc)}")
        data = doc["data"]
        if data.get("resultType") != "vector":
            raise LiveError(
                f"Prometheus at {base}: expected a vector, got {data.get('resultType')}"
            )
        out = []
        for sample in data["result"]:
            value = float(sample["value"][1])
            if math.isfinite(value):
                out.append(({str(k): str(v) for k, v in sample["metric"].items()}, value))
        return out
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LiveError(f"Prometheus at {base}: unexpected answer ({exc})") from None


def _prometheus_error(body: bytes) -> str:
    try:
        doc = json.loads(body)
    except ValueError:
        return ""
    return f": {doc.get('error')}" if isinstance(doc, dict) and doc.get("error") else ""
