"""api_rules.canonical_ipv4_cidr, the fast path of cidr_problem (a fleet's podCIDRs):
true exactly for the CIDRs ipaddress writes back as given, each taken by the full rules."""

from __future__ import annotations

import ipaddress
import random

import pytest

from topogen.sources import api_rules
from topogen.sources.api_rules import canonical_ipv4_cidr, cidr_problem, parse_network


def _candidates(n: int) -> list[str]:
    rng = random.Random(7)
    out = ["10.0.0.0/8", "0.0.0.0/0", "255.255.255.255/32", "10.1.2.0/24", "192.168.0.0/16"]
    out += ["10.1.2.3/24", "010.0.0.0/8", "10.0.0.0/08", "10.0.0.0/33", "256.0.0.0/8"]
    out += ["10.0.0.0", "10.0.0/8", "10.0.0.0/", "/8", "", "10.0.0.0/8\n", " 10.0.0.0/8"]
    out += ["10.0.0.0/+8", "10.0.0.0/\u0668", "1\u0660.0.0.0/8", "::/0", "::ffff:10.0.0.0/104"]
    for _ in range(n):
        octets = [str(rng.choice([0, 1, 9, 10, 99, 100, 199, 200, 249, 250, 255, 256, 300]))
                  for _ in range(4)]  # fmt: skip
        if rng.random() < 0.1:
            octets[rng.randrange(4)] = "0" + octets[0]
        bits = str(rng.randrange(0, 35))
        if rng.random() < 0.05:
            bits = "0" + bits
        out.append(".".join(octets) + "/" + bits)
        value = rng.getrandbits(32)
        prefix = rng.randrange(0, 33)
        value &= ~((1 << (32 - prefix)) - 1) if rng.random() < 0.7 else ~0
        out.append(f"{ipaddress.IPv4Address(value & 0xFFFFFFFF)}/{prefix}")
    return out


def _written_back(text: str) -> bool:
    try:
        net = ipaddress.ip_network(text, strict=True)
    except ValueError:
        return False
    return net.version == 4 and str(net) == text


def test_canonical_exactly_when_written_back(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = 0
    for text in _candidates(3000):
        canonical = canonical_ipv4_cidr(text)
        assert canonical == _written_back(text), text
        if canonical:
            taken += 1
            with monkeypatch.context() as m:  # the full rules, without the fast path
                m.setattr(api_rules, "canonical_ipv4_cidr", lambda _t: False)
                assert cidr_problem(text, strict=True) is None, text
                assert cidr_problem(text, strict=False) is None, text
            parsed = parse_network(text)
            assert parsed is not None and parsed[0].version == 4
    assert taken > 1000  # the fast path was exercised
