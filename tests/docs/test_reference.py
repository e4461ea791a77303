"""The generated reference pages (docs/reference/cli.md, config.md) are what the code
generates now, and the check that says so fails on a stale page."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tooling import REPO


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_reference", REPO / "docs" / "gen_reference.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_reference"] = module
    spec.loader.exec_module(module)
    return module


def test_committed_reference_is_current() -> None:
    gen = _generator()
    for path, text in gen.pages().items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(REPO)} is stale: run make docs-reference"
        )


def test_a_stale_page_fails_the_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gen = _generator()
    ref = tmp_path / "docs" / "reference"
    ref.mkdir(parents=True)
    for path, text in gen.pages().items():
        (ref / path.name).write_text(text, encoding="utf-8")
    monkeypatch.setattr(gen, "REFERENCE", ref)
    assert gen.main(["--check"]) == 0
    cli = ref / "cli.md"
    cli.write_text(cli.read_text(encoding="utf-8").replace("--allow-outside-paths", "--x", 1))
    assert gen.main(["--check"]) == 1


def test_cli_reference_has_every_command_option_and_exit_code() -> None:
    import click

    from topogen.cli import SHORT_HELP, main

    text = _generator().cli_reference()
    ctx = click.Context(main, info_name="topogen")
    for name in SHORT_HELP:
        cmd = main.get_command(ctx, name)  # type: ignore[attr-defined]
        section = text.split(f"\n## topogen {name}\n", 1)[1].split("\n## ", 1)[0]
        assert "**Exit 0" in section, name
        for param in cmd.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("-"):
                    assert f"`{opt}`" in section, (name, opt)


def test_config_reference_has_every_key_of_the_schema() -> None:
    from topogen.init.schema import config_schema

    text = _generator().config_reference()
    schema = config_schema()
    for model in [schema, *schema["$defs"].values()]:
        for key in model.get("properties", {}):
            assert f"| `{key}` |" in text, key
    assert "`runbookUrl`" in text and "docs/runbooks.md" in text
