"""Templates run from their lite code (render/templaterun.py) give what Jinja2 gives: the
same output byte for byte, the same error, or Jinja2 runs them (a template using
anything the lite runtime does not provide)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from topogen.config import load_config
from topogen.pipeline.render import render
from topogen.render import base
from topogen.render.templaterun import LOOP_ATTRIBUTES, lite_source

REPO = Path(__file__).resolve().parents[2]
ZONE_SPLIT = REPO / "examples" / "zone-split"


def _both(source: str, **values: Any) -> tuple[object, object, bool]:
    """(Jinja2's result, the lite code's result, whether lite code was made): a result
    is the output or the error's type and text."""

    def result(run: Any) -> object:
        try:
            return run()
        except Exception as exc:  # the same error either way
            return type(exc), str(exc)

    env = base._env()
    theirs = result(lambda: env.from_string(source).render(**values))
    lite = lite_source(env.compile(source, raw=True), base._FILTERS)
    if lite is None:
        return theirs, theirs, False
    code = compile(lite, "<template>", "exec", dont_inherit=True)
    mine = result(lambda: base._runtime().load(code)(values))
    return theirs, mine, True


LITE_CASES = [
    ("{% for x in xs %}{{ [" + ", ".join(f"loop.{a}" for a in LOOP_ATTRIBUTES) + "] | tojson }}"
     "\n{% endfor %}", {"xs": "abc"}),
    ("{% for k, v in d %}{{ k | tojson }}={{ v | toyaml }}{% endfor %}", {"d": [("a", 1)]}),
    ("{% for x in xs %}{{ x | tojson }}{% else %}none{% endfor %}", {"xs": []}),
    ("{% for x in xs %}{{ loop.index | tojson }}{% else %}none{% endfor %}", {"xs": [3]}),
    ("{% for k in d %}{% for x in d[k] %}{{ [k, x, loop.last] | tojson }}{% endfor %}"
     "{{ loop.index | tojson }}{% endfor %}", {"d": {"a": [1, 2], "b": []}}),
    ("{% set y = x %}{{ [y, x] | tojson }}{% for a in x %}{% set y = a %}{% endfor %}",
     {"x": [1, {"b": 2}]}),
    ("{% if identity %}{{ [x.identity, 'identity'] | tojson }}{% endif %}",
     {"identity": 1, "x": {"identity": 2}}),
    ("{% if z is defined %}a{% else %}b{% endif %}{% if d.q is defined %}c{% endif %}",
     {"d": {}}),
    ("{% if z is defined %}a{% endif %}", {"z": None}),
    ("{{ d.key | tojson }} {{ d['key'] | tojson }} {{ s.upper | tojson }}", {"d": {"key": 1},
     "s": {"upper": 2}}),
    ("{{ namespace | tojson }}", {"namespace": "ns"}),
    ("{{ x ~ 1 | tojson }}", {"x": "a"}),
    ("{{ (x if y) | tojson }}", {"x": 1, "y": False}),
    ("{{ absent | tojson }}", {}),  # an error either way
    ("{{ d.absent | toyaml }}", {"d": {}}),
    ("{{ x }}", {"x": 1}),  # a raw value: topogen's InternalError either way
    ("a\n  {%- if x %}\n b {% endif %}\n", {"x": True}),
]  # fmt: skip

DECLINED = [
    "{% macro m() %}x{% endmacro %}{{ m() }}",
    "{% include 'kustomize/base.yaml.j2' %}",
    "{% for x in xs %}{{ loop.cycle('a', 'b') }}{% else %}none{% endfor %}",
    "{% for x in xs recursive %}{{ loop(x) }}{% endfor %}",
    "{% for x in xs %}{{ loop.previtem | tojson }}{% endfor %}",
    "{% for x in xs %}{{ loop | tojson }}{% endfor %}",
    "{% for k, v in d.items() %}{{ k | tojson }}{% endfor %}",
    "{% set z %}t{% endset %}{{ z | tojson }}",
    "{% extends 'kustomize/base.yaml.j2' %}",
    "{{ xs | list | tojson }}",
    "{{ 'a' | upper | tojson }}",
    "{% block b %}x{% endblock %}",
    "{% set ns = namespace(a=1) %}{% set ns.a = 2 %}{{ ns.a | tojson }}",
    "{{ range(2) | tojson }}",
]


@pytest.mark.parametrize(("source", "values"), LITE_CASES)
def test_lite_code_renders_as_jinja2(source: str, values: dict[str, Any]) -> None:
    theirs, mine, lite = _both(source, **values)
    assert lite
    assert mine == theirs


@pytest.mark.parametrize("source", DECLINED)
def test_what_the_lite_runtime_lacks_is_left_to_jinja2(source: str) -> None:
    env = base._env()
    assert lite_source(env.compile(source, raw=True), base._FILTERS) is None


def test_every_template_of_a_render_has_lite_code() -> None:
    """The templates topogen renders on every run need no Jinja2 (a warm start-up)."""
    for folder in ("kyverno", "kustomize", "monitoring", "native", "kyverno-legacy"):
        for path in sorted((base.TEMPLATES_DIR / folder).glob("*.j2")):
            name = path.relative_to(base.TEMPLATES_DIR).as_posix()
            assert base._lite_template(name) is not None, name


def _files(config: Path) -> dict[str, str]:
    return {f.path: f.text for f in render(load_config(config)).files}


@pytest.mark.parametrize("engine", ["", "gatekeeper", "native", "kyverno-legacy"])
def test_a_render_is_the_same_without_lite_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    folder = tmp_path / "zone-split"
    shutil.copytree(ZONE_SPLIT, folder)
    config = folder / "topogen.yaml"
    if engine:
        config.write_text(config.read_text(encoding="utf-8") + f"engines: [{engine}]\n", "utf-8")
    lite = _files(config)
    monkeypatch.setattr(base, "_lite_template", lambda name: None)
    assert _files(config) == lite


_THREADS = """
import sys, threading
from topogen.config import load_config
from topogen.pipeline.render import render

sys.setswitchinterval(1e-6)  # threads switch often: their first uses overlap
configs = [load_config(path) for path in sys.argv[1:]]
barrier = threading.Barrier(8)
results, errors = {}, []

def run(i):
    barrier.wait()
    try:
        files = {f.path: f.text for f in render(configs[i % len(configs)]).files}
        results.setdefault(i % len(configs), []).append(files)
    except BaseException as exc:
        errors.append(repr(exc))

threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert not errors, errors
assert all(r == rs[0] for rs in results.values() for r in rs), "renders differ"
print(" ".join(str(len(results[i][0])) for i in range(len(configs))))
"""


def test_threads_rendering_at_once_on_first_use(tmp_path: Path) -> None:
    """Renders in threads of a fresh process, meeting Jinja2's lazily loaded package and
    runtime at once (a library caller's, the engine suites'): some render templates that
    need Jinja2 (Gatekeeper's), others templates that do not (but ask whether Jinja2's
    runtime made a value). Each gives the output a single render gives, none an error of
    a half-loaded module."""
    configs = []
    for engine in ("gatekeeper", "native", "kyverno-legacy"):
        folder = tmp_path / engine
        shutil.copytree(ZONE_SPLIT, folder)
        config = folder / "topogen.yaml"
        config.write_text(config.read_text(encoding="utf-8") + f"engines: [{engine}]\n", "utf-8")
        configs.append(config)
    run = subprocess.run(
        [sys.executable, "-c", _THREADS, *map(str, configs)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == [str(len(_files(config))) for config in configs]
