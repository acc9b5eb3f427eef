"""The emitted JavaScript session of each optimum decoder form, in the browser with no Python:
`convert SOURCE --cache-capacity 20 -o model.js` for the merged decoder, the unmerged pair
(given by its first file, the with-past twin beside it) and optimum 2.x's single model.onnx,
each as float32 and as transformers.js's q8, q4 and fp16 files; model.html decodes 16 greedy
tokens after a prompt through the module's createSession (the caches kept on the context),
the tokens ONNX Runtime chooses on the source. Fixtures: models/optimum-tiny/llama/."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import main
from converter.runtimes.chromium import browser_page
from converter.state.generation import generate_on_onnxruntime

LLAMA = Path(__file__).resolve().parents[2] / "models" / "optimum-tiny" / "llama"
STEMS = {"merged": "decoder_model_merged", "pair": "decoder_model", "single": "model"}
SUFFIX = {"fp32": "", "q8": "_quantized", "q4": "_q4", "fp16": "_fp16"}
PROMPT = [1, 5, 9]
NEW = 16


def _page_tokens(tmp_path: Path, source: Path) -> list[int]:
    # chromium-litert: the q4 files' uint4 constants are fitted to what the browser builds
    r = CliRunner().invoke(main, ["convert", str(source), "--cache-capacity", "20",
                                  "--target", "chromium-litert", "-o",
                                  str(tmp_path / "model.js")])
    assert r.exit_code == 0, r.output
    page, url = browser_page(tmp_path)
    try:
        page.goto(url + f"model.html?run&steps={NEW}&prompt=" + ",".join(map(str, PROMPT)))
        page.wait_for_function("window.webnnResult !== undefined", timeout=300_000)
        got = page.evaluate("window.webnnResult")
    finally:
        page.close()
    assert "error" not in got, got
    assert got["steps"] == len(PROMPT) + NEW - 1  # the prompt a token a step, then each token
    return got["tokens"]


@pytest.mark.parametrize("kind", list(SUFFIX))
@pytest.mark.parametrize("form", list(STEMS))
def test_the_page_of_each_optimum_form_decodes_onnx_runtimes_tokens(browser_limits, tmp_path,
                                                                    form, kind):
    source = LLAMA / f"{STEMS[form]}{SUFFIX[kind]}.onnx"
    # the page feeds the prompt one token a step; q8's run-time scales (one per tensor) make
    # the prompt's rows depend on that, so ORT is fed the same way (the others do not care)
    want = generate_on_onnxruntime(source, PROMPT, NEW, prompt_in_one_step=False).tokens
    assert len(set(want)) >= 6  # a sequence, not one token repeated
    assert _page_tokens(tmp_path, source) == want
