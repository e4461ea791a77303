"""Resource quantities are read as Kubernetes reads them (k8s.io/apimachinery resource.Quantity).

The table quantities.jsonl is what Kubernetes' own ParseQuantity (v0.36.3) makes of the
corpus in quantity_oracle/corpus.py; quantity_oracle/main.go wrote it (see corpus.py for
the command, run where the Go module proxy is reachable). topogen accepts exactly what
Kubernetes accepts and gets the same value, rounded up to 1n and capped at 2^63-1 as
Kubernetes documents, with one deliberate difference: an exponent of a million or more in
magnitude is refused. Kubernetes keeps 1e999999999 as 1 x 10^999999999, its int32 scale
arithmetic wraps around near 2^31 (+.5e-2147483648 is huge to it) and some such values
never return (1e-2147483648, 9223372036854775807e999999999: `hang` in the table).
"""

from __future__ import annotations

import json
import re
import sys
import time
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest

from topogen.sources.objects import _GO_SPACE, MAX_QUANTITY, quantity_of

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "quantity_oracle"))
from corpus import corpus  # noqa: E402

TABLE = [json.loads(ln) for ln in (HERE / "quantities.jsonl").read_text().split("\n") if ln]


_EXPONENT = re.compile(r"[eE]([+-]?[0-9]+)\s*$")


def _huge_exponent(text: str) -> bool:
    m = _EXPONENT.search(text)
    return m is not None and abs(int(m[1])) >= 10**6


def test_the_table_is_of_the_current_corpus() -> None:
    assert [r["input"] for r in TABLE] == corpus()


def _mismatch(row: dict[str, object]) -> str | None:
    text = str(row["input"])
    start = time.perf_counter()
    got = quantity_of(text.strip(_GO_SPACE))
    if time.perf_counter() - start > 5:  # a hang, not a speed target (those are in bench/)
        return "slow"
    if _huge_exponent(text) and (row.get("hang") or row["ok"]):
        # Kubernetes wraps around or never returns; topogen refuses
        return None if got is None else f"accepted as {got}"
    if row.get("hang"):
        return "only huge exponents hang Kubernetes' parser"
    if not row["ok"]:
        return None if got is None else f"Kubernetes refuses it, topogen reads {got}"
    if got is None:
        return "Kubernetes accepts it, topogen refuses it"
    if row["value"] == "big":
        return None if abs(got) == MAX_QUANTITY else f"{got}, not capped"
    want = Fraction(Decimal(str(row["value"])))
    capped = max(-MAX_QUANTITY, min(MAX_QUANTITY, want))
    return None if got == capped else f"{got}, Kubernetes: {want}"


def test_as_kubernetes_reads_it() -> None:
    assert len(TABLE) > 2000
    wrong = {str(r["input"]): m for r in TABLE if (m := _mismatch(r)) is not None}
    assert not wrong


@pytest.mark.parametrize(
    "text", ["1e999999999", "1e-2147483648", "9" * 200 + "Ei", "1e2147483647", "0." + "0" * 190]
)
def test_no_quantity_takes_long(text: str) -> None:
    start = time.perf_counter()
    quantity_of(text)
    assert time.perf_counter() - start < 5  # 10^999999999 would never finish
