"""The optimum decoder fixtures: a tiny random Llama exported by optimum's ONNX exporter in the
three forms transformers.js and Optimum load, and a tiny GPT-2 in the merged form.

    python3 -m venv venv && venv/bin/pip install torch==2.13.0+cpu 'transformers<4.58' \
        optimum-onnx
    venv/bin/python models/make_optimum_decoders.py [OUT_DIR]   # default: models/optimum-tiny

Writes OUT_DIR/gpt2/decoder_model_merged.onnx and OUT_DIR/llama/:
- model.onnx: optimum 2.x's single form (what `optimum-cli export onnx --task
  text-generation-with-past` writes): past inputs always present, the first step feeds a past
  of length 0; the attention mask's length is named `past_sequence_length + sequence_length`.
- decoder_model.onnx + decoder_with_past_model.onnx: the unmerged pair (optimum 1.x): the
  first without past inputs (the prompt), the second with them (each later token).
- decoder_model_merged.onnx: the pair merged into one file (`merge_decoders`), an
  `If(use_cache_branch)` choosing the branch; the no-cache branch ignores the past inputs,
  which the caller still feeds (length 0 or 1 of dummy rows).

The weights are random from a fixed torch seed, with eager attention (no scaled-dot-product op,
so the export is plain MatMul/Softmax). The models say nothing; they are shape-and-op fixtures
for stepping decoders. The committed copies are what the tests read (CI
installs no torch); run this again only to change the fixture, and commit what it writes and
the README beside them (versions, sha256s); then models/make_quantized_decoders.py, which
derives the q8/q4 files from these and adds their section to the README.
"""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

SEED = 20261128
LLAMA = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, vocab_size=96,
             max_position_embeddings=128, rms_norm_eps=1e-5, rope_theta=10000.0,
             tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, pad_token_id=0)
GPT2 = dict(n_embd=32, n_layer=2, n_head=4, vocab_size=96, n_positions=128, bos_token_id=1,
            eos_token_id=2)
OPSET = 17
README = ["# Tiny optimum decoders", "",
          "Random 2-layer decoders (hidden 32, vocabulary 96) exported by optimum's ONNX "
          "exporter in the forms transformers.js and Optimum load. `llama/`: `model.onnx` "
          "(optimum 2.x's single form), `decoder_model.onnx` + `decoder_with_past_model.onnx` "
          "(the unmerged pair) and `decoder_model_merged.onnx` (the pair merged, an If on "
          "`use_cache_branch`); `gpt2/`: the merged form of a GPT-2 (transformers.js's "
          "distilgpt2 family). Written by `models/make_optimum_decoders.py`; the tests read "
          "these copies (CI installs no torch). The weights are random: the models say nothing."]
FILES = {"llama": ("model.onnx", "decoder_model.onnx", "decoder_with_past_model.onnx",
                   "decoder_model_merged.onnx"),
         "gpt2": ("decoder_model_merged.onnx",)}


def make_model(kind: str):
    """A random causal LM (LLAMA or GPT2) with eager attention (plain MatMul/Softmax)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    config = LlamaConfig(**LLAMA) if kind == "llama" else GPT2Config(**GPT2)
    config._attn_implementation = "eager"
    model = (LlamaForCausalLM if kind == "llama" else GPT2LMHeadModel)(config).eval()
    with torch.no_grad():  # a wider spread than the default init, so logits differ clearly
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.2)
    return model


def export_form(model, kind: str, path: Path, *, past_in_inputs: bool) -> None:
    """One decoder file through optimum's exporter: the model's config with the past outputs
    (`present.N.key/value`), with or without the past inputs."""
    from optimum.exporters.onnx import export
    from optimum.exporters.onnx.model_configs import GPT2OnnxConfig, LlamaOnnxConfig

    config = (LlamaOnnxConfig if kind == "llama" else GPT2OnnxConfig)(
        model.config, task="text-generation", use_past=True, use_past_in_inputs=past_in_inputs)
    export(model, config, path, opset=OPSET)


def write(kind: str, out: Path) -> None:
    """FILES[kind] into `out`: each file whole (no external data)."""
    import onnx
    from optimum.onnx.graph_transformations import merge_decoders

    out.mkdir(parents=True, exist_ok=True)
    model = make_model(kind)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        export_form(model, kind, tmp / "decoder_model.onnx", past_in_inputs=False)
        export_form(model, kind, tmp / "decoder_with_past_model.onnx", past_in_inputs=True)
        merge_decoders(tmp / "decoder_model.onnx", tmp / "decoder_with_past_model.onnx",
                       save_path=tmp / "decoder_model_merged.onnx")
        for name in FILES[kind]:  # optimum 2.x's model.onnx is the with-past export
            source = tmp / ("decoder_with_past_model.onnx" if name == "model.onnx" else name)
            onnx.save(onnx.load(source), out / name)


def main(argv: list[str]) -> int:
    if os.environ.get("PYTHONHASHSEED") != "0":
        # merge_decoders names the weights the branches share in set order: fixed hashing
        # makes the merged files' bytes the same on every run
        os.execve(sys.executable, [sys.executable, *argv], {**os.environ, "PYTHONHASHSEED": "0"})
    import onnx
    import optimum.version
    import torch
    import transformers

    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).parent / "optimum-tiny"
    lines = [*README, "", f"Written by optimum {optimum.version.__version__}, transformers "
             f"{transformers.__version__}, torch {torch.__version__}, onnx {onnx.__version__}; "
             f"opset {OPSET}, seed {SEED}.", "", "| file | bytes | sha256 |", "| --- | --- | --- |"]
    for kind, names in FILES.items():
        write(kind, root / kind)
        for name in names:
            data = (root / kind / name).read_bytes()
            lines.append(f"| {kind}/{name} | {len(data):,} | "
                         f"{hashlib.sha256(data).hexdigest()} |")
    print("\n".join(lines))
    (root / "README.md").write_text("\n".join(lines) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
