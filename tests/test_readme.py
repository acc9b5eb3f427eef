"""The README: its two commands (the test command is the line CI ends with, and the sample exists),
its length, its links."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _commands():
    return re.findall(r"```sh\n(.+?)\n```", (ROOT / "README.md").read_text())


def test_readme_starts_with_two_commands():
    first, second = _commands()[:2]
    assert "pip install" in first and "webnn-convert" in first
    assert "pip install" in second and "pytest" in second


def test_ci_runs_the_readme_test_command():
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert _commands()[1] in ci_lines


def test_sample_model_named_in_readme_exists():
    for path in re.findall(r"models/[\w.]+", _commands()[0]):
        assert (ROOT / path).is_file(), path


def test_readme_is_short():
    """The README is the front door; the rest lives in docs/ (issue 30)."""
    assert len((ROOT / "README.md").read_text().splitlines()) < 250


def test_readme_links_reach_their_files():
    """mkdocs checks docs/'s own links; the README's relative links are checked here."""
    text = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link]
    assert local, "the README links into docs/"
    for link in local:
        assert (ROOT / link).is_file(), link
