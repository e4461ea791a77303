"""The documentation site: `mkdocs build --strict` passes on docs/, and fails on a broken
link (a missing page, anchor or repository file) or a page left out of the navigation."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tooling import REPO

DOCS = REPO / "docs"


def mkdocs_build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict` of root/mkdocs.yml, as `make test` and `make docs` run it."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = mkdocs_build(REPO, out)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "WARNING" not in result.stderr, result.stderr[-4000:]
    return out


def test_every_page_is_built(site: Path) -> None:
    pages = sorted(p.relative_to(DOCS) for p in DOCS.rglob("*.md"))
    assert len(pages) >= 20
    for page in pages:
        html = site / (
            "index.html" if page.stem == "index" else page.with_suffix("") / "index.html"
        )
        assert html.is_file(), page


def test_links_to_repository_files_point_at_the_repository(site: Path) -> None:
    """A page's relative link to a file outside docs/ becomes a link to it on the
    repository (docs/hooks.py): no link in the site leaves it for a path it lacks."""
    repo_url = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))["repo_url"]
    html = (site / "guides" / "configuration" / "index.html").read_text(encoding="utf-8")
    assert f'href="{repo_url}/blob/main/schema/topogen.schema.json"' in html
    for page in site.rglob("*.html"):
        for href in re.findall(r'href="(\.\./[^"#]*)', page.read_text(encoding="utf-8")):
            target = (page.parent / href).resolve()
            assert target.exists() or (target / "index.html").exists(), (page, href)


def _site_copy(tmp_path: Path) -> Path:
    """mkdocs.yml and docs/ copied, the rest of the repository linked beside them."""
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copytree(DOCS, root / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "mkdocs.yml", root / "mkdocs.yml")
    for entry in REPO.iterdir():
        if entry.name not in {"docs", "mkdocs.yml", "site", ".git"}:
            (root / entry.name).symlink_to(entry)
    return root


BROKEN = {
    "a missing page": ("index.md", "[x](guides/no-such-page.md)", "no-such-page.md"),
    "a missing anchor": ("index.md", "[x](guides/argocd.md#no-such-anchor)", "no-such-anchor"),
    "a missing repository file": (
        "guides/argocd.md",
        "[x](../../argocd/no-such-file.yaml)",
        "no-such-file.yaml does not exist",
    ),
    "a link out of the repository": ("index.md", "[x](../../etc/passwd)", "outside the repository"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_link_fails_the_build(tmp_path: Path, case: str) -> None:
    page, link, said = BROKEN[case]
    root = _site_copy(tmp_path)
    with (root / "docs" / page).open("a", encoding="utf-8") as f:
        f.write(f"\nSee {link}.\n")
    result = mkdocs_build(root, tmp_path / "site")
    assert result.returncode != 0
    said_all = result.stdout + result.stderr
    assert said in said_all and "Aborted with" in said_all, said_all[-3000:]


def test_the_unbroken_copy_builds(tmp_path: Path) -> None:
    """The copy the cases above break builds as it is (so what fails them is the link)."""
    result = mkdocs_build(_site_copy(tmp_path), tmp_path / "site")
    assert result.returncode == 0, result.stderr[-3000:]


def test_a_page_left_out_of_the_navigation_fails_the_build(tmp_path: Path) -> None:
    root = _site_copy(tmp_path)
    (root / "docs" / "guides" / "orphan.md").write_text("# Orphan\n", encoding="utf-8")
    result = mkdocs_build(root, tmp_path / "site")
    assert result.returncode != 0 and "orphan.md" in result.stderr, result.stderr[-3000:]


def test_every_alert_has_its_runbook_in_the_site(site: Path) -> None:
    """Each alert's runbook_url (as rendered for the committed example) is a page of the
    site with a section of the alert's name; the template's alerts are all there."""
    from topogen.config import DEFAULT_RUNBOOK_URL

    rule = yaml.safe_load(
        (REPO / "monitoring" / "lab" / "prometheusrule.yaml").read_text(encoding="utf-8")
    )
    alerts = [r for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r]
    template = (REPO / "templates" / "monitoring" / "rules.yaml.j2").read_text(encoding="utf-8")
    in_template = set(re.findall(r'runbook_url.*"#(\w+)"', template))
    assert {a["alert"].lower() for a in alerts} == in_template and len(in_template) >= 4
    prefix = "https://github.com/topogen/topogen/blob/main/docs/"
    assert DEFAULT_RUNBOOK_URL.startswith(prefix)
    page = DEFAULT_RUNBOOK_URL.removeprefix(prefix)
    assert (DOCS / page).is_file()
    html = (site / Path(page).with_suffix("") / "index.html").read_text(encoding="utf-8")
    for a in alerts:
        base, _, fragment = a["annotations"]["runbook_url"].partition("#")
        assert base == DEFAULT_RUNBOOK_URL
        assert fragment == a["alert"].lower()
        assert re.search(rf'<h2 id="{fragment}">{a["alert"]}<', html), a["alert"]


def test_the_readme_links_resolve() -> None:
    """The README's links into docs/ (and the repository) name files that exist, and it
    points a newcomer at the site."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    links = [t.split("#", 1)[0] for t in re.findall(r"\]\(([^)\s]+)\)", readme)]
    local = [t for t in links if t and not re.match(r"^[a-z]+:", t)]
    assert "docs/index.md" in local
    for target in local:
        assert (REPO / target).exists(), target
