"""The README and the pages under docs/: short README, links that lead
somewhere, generated pages up to date, and a site that builds without warnings."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]

sys.path.insert(0, str(DOCS))
import gen_errors  # noqa: E402

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def prose_lines(text: str):
    """The lines outside fenced code blocks, with inline code blanked."""
    fence = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if not fence:
            yield re.sub(r"`[^`]*`", "``", line)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading (lower case, punctuation dropped, spaces to '-')."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set:
    found, seen = set(), {}
    fence = False
    for line in path.read_text(encoding="utf8").splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        match = None if fence else re.match(r"#{1,6} (.+?)\s*#*\s*$", line)
        if match:
            base = slug(match.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(path: Path):
    for line in prose_lines(path.read_text(encoding="utf8")):
        for target in LINK.findall(line):
            yield target


def test_readme_is_short():
    n_lines = len(README.read_text(encoding="utf8").splitlines())
    assert n_lines <= 260, f"README.md has {n_lines} lines; move detail into docs/"


def test_readme_keeps_the_two_commands():
    text = README.read_text(encoding="utf8")
    section = text[text.index("## Two commands"):]
    section = section[:section.index("\n## ", 1)]
    blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    assert blocks[0].strip().endswith(".venv/bin/python -m spacy project run all")
    assert blocks[1:] == [".venv/bin/python -m pytest -q -n auto\n",
                          '.venv/bin/python -m pytest -q -n auto -m "not slow"\n']
    # CI runs the README's command
    assert ".venv/bin/python -m pytest -q -n auto\n" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_at_existing_files_and_anchors(page):
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading with that anchor in {dest.name}")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def test_every_page_is_in_the_site_navigation():
    import srsly

    config = srsly.read_yaml(ROOT / "mkdocs.yml")
    in_nav = {next(iter(entry.values())) for entry in config["nav"]}
    assert in_nav == {p.name for p in DOCS.glob("*.md")}


def test_errors_page_lists_every_code_of_errors_py():
    """docs/errors.md is what docs/gen_errors.py writes from spacy_crf/errors.py."""
    from spacy_crf.errors import Errors, Warnings

    assert gen_errors.main(["--check"]) == 0, "run: python docs/gen_errors.py"
    text = (DOCS / "errors.md").read_text(encoding="utf8")
    for cls in (Errors, Warnings):
        for code, _ in gen_errors.codes(cls):
            assert f"\n### CRF-{code}\n" in text, code


def test_errors_page_check_detects_drift(tmp_path):
    page = tmp_path / "errors.md"
    assert gen_errors.main(["--page", str(page), "--check"]) == 1
    assert gen_errors.main(["--page", str(page)]) == 0
    assert gen_errors.main(["--page", str(page), "--check"]) == 0
    page.write_text(page.read_text(encoding="utf8").replace("### CRF-E001", "### CRF-E999"),
                    encoding="utf8")
    assert gen_errors.main(["--page", str(page), "--check"]) == 1


@pytest.mark.slow
def test_mkdocs_builds_the_site_without_warnings(tmp_path):
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (pip install 'mkdocs>=1.6', in the test extra)")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "--site-dir", str(tmp_path / "site")],
                          cwd=str(ROOT), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "index.html").exists()
    assert (tmp_path / "site" / "structures" / "index.html").exists()
