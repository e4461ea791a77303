"""The README's Quick start, line by line as a newcomer types it, in a fresh home folder."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from tooling import REPO, require_tool

from .gitops_kit import kubectl

README = REPO / "README.md"


def quick_start() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [ln for ln in block.splitlines() if ln.strip() and not ln.startswith("#")]


def _expected_exit(line: str) -> int:
    m = re.search(r"#\s*exit (\d)", line)
    return int(m.group(1)) if m else 0


def _expected_output(line: str) -> list[str]:
    """What the line's comment says it prints: each "quoted" text (stdout or stderr)."""
    comment = line.split("  #", 1)[1] if "  #" in line else ""
    return re.findall(r'"([^"]+)"', comment)


def test_quick_start_is_on_the_first_screen() -> None:
    """Clone to a rendered, tested repo of your own within the README's first 40 lines."""
    head = README.read_text(encoding="utf-8").splitlines()[:40]
    assert "## Quick start" in head
    lines = quick_start()
    first = {w: next(i for i, ln in enumerate(lines) if ln.startswith(w)) for w in _ORDER}
    assert [first[w] for w in _ORDER] == sorted(first.values())  # in the order one needs them


_ORDER = ("make venv", "topogen init", "topogen analyze -c ~", "topogen render", "make tools")
_ORDER += ("kyverno test",)


def test_quick_start_runs_line_by_line(tmp_path: Path) -> None:
    """Every line, in order, with the exit code its comment states (`# exit N`, else 0) and
    each "quoted" text its comment says it prints. `make venv` and `make tools` are the
    Makefile's own (the venv and tools this suite runs with); the rest runs as written, in
    a home folder of its own."""
    kyverno = require_tool("kyverno")
    kubectl_bin = Path(kubectl()).parent
    makefile = "".join(
        (REPO / m).read_text(encoding="utf-8") for m in ("Makefile", "tools/tools.mk")
    )
    script = ["set -u", 'OUT="$(mktemp -d)"']
    checked = 0
    for n, line in enumerate(quick_start(), 1):
        command = line.split("  #", 1)[0].strip()
        if command.startswith("make "):
            target = command.split()[1]
            assert re.search(rf"^{target}:", makefile, flags=re.M), target
            continue
        want = _expected_exit(line)
        out = f'"$OUT/{n}"'
        script += [
            f"{{ {command}\n}} >{out} 2>&1",
            f'rc=$?; cat {out}; if [ "$rc" -ne {want} ]; then echo "line {n} exited $rc, not '
            f'{want}: {command[:60]}" >&2; exit 100; fi',
        ]
        for text in _expected_output(line):
            script.append(
                f"grep -qF -- {shlex.quote(text)} {out} || {{ echo 'line {n} does not print "
                f"{text}: {command[:40]}' >&2; exit 101; }}"
            )
        checked += len(_expected_output(line))
    home = tmp_path / "home"
    home.mkdir()
    bins = f"{Path(sys.executable).parent}:{kyverno.parent}:{kubectl_bin}:/usr/bin:/bin"
    env = {**os.environ, "HOME": str(home), "PATH": bins}
    env.pop("KUBECONFIG", None)
    result = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert checked >= 3  # the page says what its commands print, and that is checked
    repo = home / "my-gitops"
    assert (
        (repo / "topogen.yaml")
        .read_text(encoding="utf-8")
        .startswith("# yaml-language-server: $schema=topogen.schema.json\n")
    )
    assert (repo / "policies" / "default").is_dir()
    assert "passed and 0 tests failed" in result.stdout


def test_no_command_uses_a_go_tool_before_the_readme_says_make_tools() -> None:
    """Reading from the top, the first command that runs a tool `make tools` builds (a
    `.tools/bin/` path or the tool's name) comes after a `make tools` line, and every
    code block that runs one has its own `make tools` line first (the Quick tour is read
    on its own too)."""
    mk = (REPO / "tools" / "tools.mk").read_text(encoding="utf-8")
    listed = re.search(r"^TOOLS_LIST\s*\?=\s*((?:.*\\\n)*.*)$", mk, flags=re.M)
    assert listed is not None
    tools = set(listed.group(1).replace("\\", " ").split())
    assert {"kyverno", "promtool", "gator", "cyclonus"} <= tools
    text = README.read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in text.split("```sh\n")[1:]]
    said = False
    for block in blocks:
        in_block = False
        for line in block.splitlines():
            command = line.split("  #", 1)[0].strip()
            if command.startswith("make tools"):
                said = in_block = True
                continue
            words = command.replace("|", " ").split()
            uses = [w for w in words if w.startswith(".tools/bin/") or w in tools]
            if uses and not command.startswith("make "):
                assert said and in_block, f"README runs {uses[0]} before `make tools`: {line}"
