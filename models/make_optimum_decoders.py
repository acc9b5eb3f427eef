"""The optimum decoder fixtures: a tiny random Llama exported by optimum's ONNX exporter in the
three forms transformers.js and Optimum load.

    python3 -m venv venv && venv/bin/pip install torch==2.13.0+cpu 'transformers<4.58' \
        optimum-onnx
    venv/bin/python models/make_optimum_decoders.py [OUT_DIR]   # default: models/optimum-tiny

Writes OUT_DIR/llama/:
- model.onnx: optimum 2.x's single form (what `optimum-cli export onnx --task
  text-generation-with-past` writes): past inputs always present, the first step feeds a past
  of length 0; the attention mask's length is named `past_sequence_length + sequence_length`.
- decoder_model.onnx + decoder_with_past_model.onnx: the unmerged pair (optimum 1.x): the
  first without past inputs (the prompt), the second with them (each later token).
- decoder_model_merged.onnx: the pair merged into one file (`merge_decoders`), an
  `If(use_cache_branch)` choosing the branch; the no-cache branch ignores the past inputs,
  which the caller still feeds (length 0 or 1 of dummy rows).

The weights are random from a fixed torch seed, with eager attention (no scaled-dot-product op,
so the export is plain MatMul/Softmax), and tied embeddings off. The model says nothing; it is a
shape-and-op fixture for stepping decoders. The committed copies are what the tests read (CI
installs no torch); run this again only to change the fixture, and commit what it writes and
the README beside them (versions, sha256s).
"""
from __future__ import annotations

import hashlib
import sys
import tempfile
from pathlib import Path

SEED = 20261128
CONFIG = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, vocab_size=96,
              max_position_embeddings=128, rms_norm_eps=1e-5, rope_theta=10000.0,
              tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, pad_token_id=0)
OPSET = 17
README = ["# Tiny optimum decoders", "",
          "A random 2-layer Llama (hidden 32, vocabulary 96) exported by optimum's ONNX exporter "
          "in the forms transformers.js and Optimum load: `llama/model.onnx` (optimum 2.x's "
          "single form), `llama/decoder_model.onnx` + `llama/decoder_with_past_model.onnx` (the "
          "unmerged pair) and `llama/decoder_model_merged.onnx` (the pair merged, an "
          "If on `use_cache_branch`). Written by `models/make_optimum_decoders.py`; the tests "
          "read these copies (CI installs no torch). The weights are random: the model says "
          "nothing. merge_decoders names the weights the branches share in set order, so the "
          "merged file's bytes (not its values) differ between runs."]
FILES = ("model.onnx", "decoder_model.onnx", "decoder_with_past_model.onnx",
         "decoder_model_merged.onnx")


def make_model():
    """A random LlamaForCausalLM of CONFIG with eager attention."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    config = LlamaConfig(**CONFIG)
    config._attn_implementation = "eager"
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():  # a wider spread than the default init, so logits differ clearly
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.2)
    return model


def export_form(model, out: Path, name: str, *, past_in_inputs: bool) -> None:
    """One decoder file through optimum's exporter: its Llama config with the past outputs
    (`present.N.key/value`), with or without the past inputs."""
    from optimum.exporters.onnx import export
    from optimum.exporters.onnx.model_configs import LlamaOnnxConfig

    config = LlamaOnnxConfig(model.config, task="text-generation", use_past=True,
                             use_past_in_inputs=past_in_inputs)
    export(model, config, out / name, opset=OPSET)


def main(argv: list[str]) -> int:
    import onnx
    import optimum.version
    import torch
    import transformers
    from optimum.onnx.graph_transformations import merge_decoders

    out = (Path(argv[1]) if len(argv) > 1 else Path(__file__).parent / "optimum-tiny") / "llama"
    out.mkdir(parents=True, exist_ok=True)
    model = make_model()
    export_form(model, out, "model.onnx", past_in_inputs=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        export_form(model, tmp, "decoder_model.onnx", past_in_inputs=False)
        export_form(model, tmp, "decoder_with_past_model.onnx", past_in_inputs=True)
        merge_decoders(tmp / "decoder_model.onnx", tmp / "decoder_with_past_model.onnx",
                       save_path=out / "decoder_model_merged.onnx")
        for name in ("decoder_model.onnx", "decoder_with_past_model.onnx"):
            onnx.save(onnx.load(tmp / name), out / name)  # one file each, no external data
    lines = [*README, "", f"Written by optimum {optimum.version.__version__}, transformers "
             f"{transformers.__version__}, torch {torch.__version__}, onnx {onnx.__version__}; "
             f"opset {OPSET}, seed {SEED}.", "", "| file | bytes | sha256 |", "| --- | --- | --- |"]
    for name in FILES:
        data = (out / name).read_bytes()
        lines.append(f"| llama/{name} | {len(data):,} | {hashlib.sha256(data).hexdigest()} |")
    print("\n".join(lines))
    (out.parent / "README.md").write_text("\n".join(lines) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
