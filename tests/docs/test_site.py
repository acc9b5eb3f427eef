"""The user guide builds as a static site with `mkdocs build --strict`: a broken link, a
missing anchor, a page left out of the navigation, or any other warning fails the build, and
so this test (which is how CI builds it: CI runs only the test suite)."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from .blocks import ROOT


def _build(project, site) -> subprocess.CompletedProcess:
    # mkdocs is in the `test` extra; where it is missing the build fails, it does not skip
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(site)], cwd=project, capture_output=True, text=True, timeout=300)


def test_the_guide_builds_strictly(tmp_path):
    proc = _build(ROOT, tmp_path / "site")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "reference" / "security" / "index.html").is_file()


@pytest.mark.parametrize("breakage, says", [
    ("[a page](guide/no-such-page.md)", "guide/no-such-page.md"),
    ("[an anchor](reference/cli.md#no-such-section)", "#no-such-section"),
    (None, "orphan.md"),
], ids=["missing page", "missing anchor", "page not in the nav"])
def test_a_broken_guide_fails_the_build(tmp_path, breakage, says):
    """The strict build is the link checker: break the guide one way and it must fail."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copytree(ROOT / "docs", project / "docs")
    shutil.copy(ROOT / "mkdocs.yml", project / "mkdocs.yml")
    if breakage is None:
        (project / "docs" / "orphan.md").write_text("# A page no navigation reaches\n")
    else:
        with open(project / "docs" / "index.md", "a", encoding="utf-8") as f:
            f.write(f"\n{breakage}\n")
    proc = _build(project, tmp_path / "site")
    assert proc.returncode != 0
    assert says in proc.stderr + proc.stdout


def test_the_cli_page_shows_the_option_vocabulary_as_the_commands_define_it():
    """docs/reference/cli.md's options table is the one cli/option_table.py generates from
    cli/options.py: an option added, renamed or re-explained in the code shows up here as a
    failure until the page says the same (paste `python -c "from cli.option_table import
    options_table_markdown as t; print(t())"` between the markers)."""
    from cli.option_table import options_table_markdown

    page = (ROOT / "docs" / "reference" / "cli.md").read_text()
    shown = page.split("<!-- options-table:start -->\n")[1].split("<!-- options-table:end -->")[0]
    assert shown.strip() == options_table_markdown().strip()
