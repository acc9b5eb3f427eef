"""The docs harness itself: blocks are found, output compared with its elisions, and a page
whose output drifts, or that hides commands under another tag, fails."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from .blocks import BlockError, blocks_of, output_matches, run_command, workspace

PAGE = """# A page

<!-- not-run: needs the network to fetch a model -->
```sh
webnn-convert zoo models/zoo.json
```

```console
$ echo one; echo two; echo three
one
...
three
$ printf 'took 1.23 s\\n'
took ... s
$ echo a \\
  b
a b
```
"""


def _blocks(text: str):
    return blocks_of(Path("page.md"), text)


def test_blocks_commands_and_not_run_markers_are_found():
    not_run, console = _blocks(PAGE)
    assert not_run.not_run == "needs the network to fetch a model"
    assert [c.text for c in console.commands] == [
        "echo one; echo two; echo three", "printf 'took 1.23 s\\n'", "echo a \n  b"]
    assert console.commands[0].expected == ["one", "...", "three"]


@pytest.mark.parametrize("expected, printed, matches", [
    (["one", "...", "three"], "one\ntwo\nthree\n", True),
    (["one", "...", "three"], "one\nthree\n", True),          # `...` may stand for no line
    (["took ... s"], "took 0.4 s\n", True),
    (["pass"], "pass\n\n", True),                              # trailing blank lines
    (["pass"], "FAIL\n", False),                               # drift
    (["one", "two"], "one\ntwo\nthree\n", False),              # an extra line
    (["one", "two", "three"], "one\nthree\n", False),          # a missing line
    (["took ... s"], "took 0.4\ns\n", False),                  # `...` in a line spans no line
])
def test_output_is_compared_with_its_elisions(expected, printed, matches):
    assert output_matches(expected, printed) is matches


@pytest.mark.parametrize("text, says", [
    ("```bash\nwebnn-convert targets\n```\n", "tag command blocks"),
    ("```\n$ webnn-convert targets\n```\n", "untagged block of commands"),
    ("```console\nwebnn-convert targets\n```\n", "must start with a `$ ` command"),
    ("<!-- not-run: -->\n```sh\nls\n```\n", "must give its reason"),
    ("```sh\nls\n", "never closed"),
])
def test_malformed_blocks_are_refused(text, says):
    with pytest.raises(BlockError, match=re.escape(says)):
        _blocks(text)


def test_a_drifted_output_and_a_failing_command_fail(tmp_path):
    folder = tmp_path / "checkout"
    env = workspace(folder)
    (block,) = _blocks("```console\n$ webnn-convert targets\n...\n6 targets\n```\n")
    with pytest.raises(BlockError, match="other output than the docs show") as e:
        run_command(block.commands[0], "page.md:2", folder, env)
    assert "-6 targets" in str(e.value) and "+5 targets" in str(e.value)
    (block,) = _blocks("```sh\nwebnn-convert convert models/nope.onnx -o x.webnn\n```\n")
    with pytest.raises(BlockError, match="exited 2"):
        run_command(block.commands[0], "page.md:2", folder, env)


def test_commands_run_this_checkout_on_a_copy_of_models(tmp_path):
    folder = tmp_path / "checkout"
    env = workspace(folder)
    (block,) = _blocks("```console\n$ ls models/tiny_cnn.onnx && webnn-convert --version\n"
                       "models/tiny_cnn.onnx\nwebnn-convert, version ...\n```\n")
    run_command(block.commands[0], "page.md:2", folder, env)
    (block,) = _blocks("```console\n$ python -c 'import converter; print(converter.__file__)'\n"
                       f"{Path(__file__).resolve().parents[2]}/converter/__init__.py\n```\n")
    run_command(block.commands[0], "page.md:2", folder, env)


def test_a_python_block_runs_as_one_script_and_fails_on_a_false_claim(tmp_path):
    folder = tmp_path / "checkout"
    env = workspace(folder)
    (block,) = _blocks("```python\nimport converter\n\ngraph = converter.load('models/tiny_cnn.onnx')\n"
                       "assert len(graph.operations) == 10\n```\n")
    run_command(block.commands[0], "page.md:2", folder, env)
    (block,) = _blocks("```python\nimport converter\n\ngraph = converter.load('models/tiny_cnn.onnx')\n"
                       "assert len(graph.operations) == 11\n```\n")
    with pytest.raises(BlockError, match="the python block exited 1"):
        run_command(block.commands[0], "page.md:2", folder, env)
