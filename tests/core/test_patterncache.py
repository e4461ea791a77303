"""Start-up: topogen's regular expressions kept compiled (topogen/patterncache.py) change
nothing but the time: every pattern served is the one re.compile makes, only topogen's
own patterns are served, and a damaged or missing file only costs a compile."""

from __future__ import annotations

import _sre
import marshal
import os
import re
import subprocess
import sys
from array import array
from pathlib import Path
from re import _compiler, _parser  # type: ignore[attr-defined]

import pytest

from topogen import patterncache
from topogen.packfile import Pack

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "examples" / "zone-split" / "topogen.yaml"

# patterns of each kind the compiler writes differently: groups named and not, bytes,
# flags given and inline, classes, lookarounds, back references, a large Unicode class
_PATTERNS: list[tuple[str | bytes, int]] = [
    (r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", 0),
    (r"(?P<key>[^=]+)=(?P<value>.*)", 0),
    (r"(?i)zone-(\d+)", 0),
    (r"a # comment\n b", re.X.value),
    (r"x.y", re.S.value | re.M.value),
    (rb"\x00[\x80-\xff]+", 0),
    (r"(?<=k8s:)[\w.-]+(?!\.)", 0),
    (r"(a)(b)?\1", re.I.value),
    ("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]", 0),
    (r"", 0),
]


def _real(pattern: str | bytes, flags: int) -> re.Pattern[str] | re.Pattern[bytes]:
    """The pattern re's own compile step makes (never served)."""
    compile_ = getattr(_compiler.compile, "__wrapped__", _compiler.compile)
    return compile_(pattern, flags)  # type: ignore[no-any-return]


def _cache(file: Path | None) -> patterncache._PatternCache:
    return patterncache._PatternCache(file, _sre, _parser, _compiler)


def _same(
    served: re.Pattern[str] | re.Pattern[bytes], real: re.Pattern[str] | re.Pattern[bytes]
) -> None:
    # a pattern object equals another of the same pattern, flags and code (CPython)
    assert served == real
    assert served.flags == real.flags and served.groups == real.groups
    assert served.groupindex == real.groupindex


@pytest.mark.parametrize(("pattern", "flags"), _PATTERNS)
def test_a_pattern_compiled_then_read_back_is_the_one_re_makes(
    tmp_path: Path, pattern: str | bytes, flags: int
) -> None:
    file = tmp_path / "patterns.marshal"
    first = _cache(file)
    _same(first.compiled(pattern, flags, "topogen.x"), _real(pattern, flags))
    first.save()
    again = _cache(file)
    assert (pattern, flags) in again.items.item("topogen.x", patterncache._is_kept)  # kept
    served = again.compiled(pattern, flags, "topogen.x")
    _same(served, _real(pattern, flags))
    assert not again.items.changed  # nothing new: nothing to write


def test_a_served_pattern_matches_as_re_does() -> None:
    served = _cache(None).compiled(r"(?P<zone>[a-z]+)-(?P<n>\d+)", 0, "topogen.x")
    m = served.fullmatch("zone-12")
    assert m is not None and m.group("zone", "n") == ("zone", "12")
    assert served.sub(r"\g<n>", "a-1 b-2") == "1 2"


def test_an_invalid_pattern_raises_as_re_does() -> None:
    with pytest.raises(re.error) as served:
        _cache(None).compiled("(unclosed", 0, "topogen.x")
    with pytest.raises(re.error) as real:
        _real("(unclosed", 0)
    assert str(served.value) == str(real.value)


def test_only_topogens_own_patterns_are_served() -> None:
    ask = "import re\ndef caller():\n    return __import__('topogen.patterncache').patterncache._caller(1)\n"
    for name, served in (("topogen.names", True), ("topogen", True), ("yaml.reader", False),
                         ("topogenx", False), ("re", False)):  # fmt: skip
        ns: dict[str, object] = {"__name__": name}
        exec(ask, ns)
        assert ns["caller"]() == (name if served else None)  # type: ignore[operator]


def test_a_damaged_file_reads_as_empty(tmp_path: Path) -> None:
    file = tmp_path / "patterns.marshal"
    first = _cache(file)
    first.compiled(r"a+b", 0, "topogen.x")
    first.save()
    data = bytearray(file.read_bytes())
    data[-8:] = b"\xff" * 8  # the module's item cut into
    file.write_bytes(bytes(data))
    again = _cache(file)
    _same(again.compiled(r"a+b", 0, "topogen.x"), _real(r"a+b", 0))
    assert again.items.changed == {"topogen.x"}  # compiled anew, and written back at exit


def _env(cache: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "XDG_CACHE_HOME": str(cache), **extra}


def test_every_pattern_a_command_keeps_is_the_one_re_makes(tmp_path: Path) -> None:
    """A render and an analyze (patterns compiled at import and on first use) keep their
    patterns; each kept one, read back, is what re.compile makes of it."""
    for args in (["render", "-c", str(CONFIG), "--stdout"], ["analyze", "-c", str(CONFIG)]):
        run = subprocess.run([sys.executable, "-m", "topogen", *args], capture_output=True,
                             text=True, timeout=120, env=_env(tmp_path), cwd=REPO)  # fmt: skip
        assert run.returncode in (0, 1), run.stderr  # analyze: 1, the example's findings
    (file,) = (tmp_path / "topogen").glob("patterns-*.marshal")
    pack = Pack(file, patterncache._MAGIC)
    kept = {m: marshal.loads(pack.bytes(m)) for m in pack.index}
    assert {"topogen.names", "topogen.cilium.labelfilter"} <= kept.keys()
    assert all(m.startswith("topogen.") for m in kept)  # PyYAML's and click's are not kept
    count = 0
    for patterns in kept.values():
        for (pattern, flags), (final, code, groups, groupindex, indexgroup) in patterns.items():
            ints = array("I")
            ints.frombytes(code)
            served = _sre.compile(pattern, final, ints.tolist(), groups, groupindex, indexgroup)
            _same(served, _real(pattern, flags))
            count += 1
    assert count >= 20


def test_off_when_asked(tmp_path: Path) -> None:
    code = "import topogen, re._compiler as c; print(getattr(c.compile, '_topogen', False))"
    for value, installed in (("0", "False"), ("1", "True")):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=60, env=_env(tmp_path, TOPOGEN_PATTERN_CACHE=value),
                             check=True)  # fmt: skip
        assert out.stdout.strip() == installed
