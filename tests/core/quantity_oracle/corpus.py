"""The quantity strings checked against Kubernetes' parser (the oracle: main.go here).

    .venv/bin/python tests/core/quantity_oracle/corpus.py \
        | (cd tests/core/quantity_oracle && go run .) > tests/core/quantities.jsonl

(about a minute: each value that takes Kubernetes forever is given up after two seconds)
"""

from __future__ import annotations

import itertools
import json

SUFFIXES = [
    "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
    "K", "KI", "ki", "mi", "i", "e", "E3", "e3", "e+3", "e-3", "E-9", "e0", "e-0", "e+", "e-",
    "e1.5", "ee3", "eE", "Em", "mE", "kk", "MiB", "g", "b", "x", "E18", "e19", "e-10",
    "e400", "e-400", "e2147483647", "e-2147483648", "e999999999",
]  # fmt: skip
NUMBERS = [
    "0", "1", "12", "007", "1.", ".5", "0.5", "1.5", "1.05", "123456789012345678",
    "9223372036854775807", "9223372036854775808", "0.000000001", "0.0000000001", "",
    ".", "1.2.3", "1_0", "\u0661",
]  # fmt: skip
EXTRA = [
    "+", "-", "+-1", "--1", " 1", "1 ", "0x10", "1e", "1E", "16000K", "1e999999999", "1e400",
    "1e2147483648", "1e9223372036854775807", "1e9223372036854775808", "nan", "inf", "-0",
    "+0.0m", "9Ei", "8Ei", "9223372036854775807Ki", "1e-9", "1e-10", "5e-10", "0.1n",
    "\u00851\u0085", "\u20281", "\t2Gi\n", "\u00a0500m",
]  # fmt: skip


def corpus() -> list[str]:
    out = []
    for sign, number, suffix in itertools.product(["", "-", "+"], NUMBERS, SUFFIXES):
        out.append(f"{sign}{number}{suffix}")
    return sorted(set(out + EXTRA))


if __name__ == "__main__":
    print("\n".join(json.dumps(c) for c in corpus()))
