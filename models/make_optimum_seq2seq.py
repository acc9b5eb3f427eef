"""The optimum seq2seq fixtures: tiny random Whisper, T5, BART and Marian models exported by
optimum's ONNX exporter in the files transformers.js and Optimum load.

    python3 -m venv venv && venv/bin/pip install torch==2.13.0+cpu 'transformers<4.58' \
        optimum-onnx
    venv/bin/python models/make_optimum_seq2seq.py [OUT_DIR]   # default: models/optimum-tiny

Writes OUT_DIR/<arch>/ for arch in whisper, t5, bart, marian:
- encoder_model.onnx: the encoder, run once (input_ids + attention_mask for text; Whisper's
  input_features, [batch, mel bins, 2 * max_source_positions] frames);
- decoder_model_merged.onnx: the decoder, an `If(use_cache_branch)`: the no-cache branch
  (the first step) computes the cross-attention caches `present.N.encoder.key/value` from
  `encoder_hidden_states`; the cache branch reads them back as `past_key_values.N.encoder.*`
  and appends this step's rows to the self-attention caches `*.decoder.*`;
- for t5 also the unmerged pair, decoder_model.onnx (no past inputs) beside
  decoder_with_past_model.onnx (no encoder presents), which the merged file is made from;
- config.json: the transformers config (decoder_start_token_id, eos_token_id).

Every model has 2 layers, hidden 32, 4 heads, vocabulary 96; Whisper 8 mel bins and 16 encoder
positions (32 input frames); Marian without embedding scaling. The weights are random from a
fixed torch seed per arch (WEIGHTS: one whose 16 greedy tokens vary), eager attention
(plain MatMul/Softmax). The committed copies are what the tests read (CI installs no torch);
run this again only to change the fixture, and commit what it writes and the README section
beside them (versions, sha256s), which replaces the section of the same title. The decoder
scripts rewrite the README up to their own sections: run this one after them.
"""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

OPSET = 17
COMMON = dict(vocab_size=96, d_model=32, encoder_layers=2, decoder_layers=2,
              encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
              decoder_ffn_dim=64, max_position_embeddings=64)
CONFIGS = {
    "whisper": dict({k: v for k, v in COMMON.items() if k != "max_position_embeddings"},
                    num_mel_bins=8, max_source_positions=16, max_target_positions=64,
                    pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
                    begin_suppress_tokens=None, suppress_tokens=None),
    "t5": dict(vocab_size=96, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
               num_heads=4, relative_attention_num_buckets=8, relative_attention_max_distance=32,
               pad_token_id=0, eos_token_id=1, decoder_start_token_id=0),
    "bart": dict(COMMON, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                 decoder_start_token_id=2, forced_eos_token_id=None),
    "marian": dict(COMMON, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0,
                   forced_eos_token_id=None, scale_embedding=False),
}
# (weight spread, torch seed) per arch: chosen so that 16 greedy tokens vary (4 to 8 distinct);
# most random draws settle into one token repeated, which would test little of the caches
WEIGHTS = {"whisper": (0.3, 1), "t5": (0.2, 3), "bart": (0.3, 9), "marian": (0.05, 2)}
TASKS = {"whisper": "automatic-speech-recognition", "t5": "text2text-generation",
         "bart": "text2text-generation", "marian": "text2text-generation"}
# the dummy inputs of the trace: Whisper's encoder takes exactly 2 * max_source_positions frames
SHAPES = {"whisper": {"nb_max_frames": 32, "sequence_length": 4}}
UNMERGED = ("t5",)  # the archs that keep the unmerged pair (the files stay small)
TITLE = "## Tiny optimum seq2seq models"
README = [TITLE, "",
          "Random 2-layer encoder-decoders (hidden 32, 4 heads, vocabulary 96) exported by "
          "optimum's ONNX exporter in the files transformers.js and Optimum load: "
          "`<arch>/encoder_model.onnx` (run once), `<arch>/decoder_model_merged.onnx` (an If on "
          "`use_cache_branch`; the first step computes the cross-attention caches "
          "`present.N.encoder.*`, later steps read them back unchanged) and `config.json`; "
          "`t5/` also holds the unmerged pair `decoder_model.onnx` + "
          "`decoder_with_past_model.onnx`. Whisper has 8 mel bins and 16 encoder positions "
          "(input_features [1, 8, 32]). Written by `models/make_optimum_seq2seq.py`; the "
          "weights are random: the models say nothing."]


def make_model(arch: str):
    """A random encoder-decoder of CONFIGS[arch] with eager attention."""
    import torch
    from transformers import (BartConfig, BartForConditionalGeneration, MarianConfig,
                              MarianMTModel, T5Config, T5ForConditionalGeneration,
                              WhisperConfig, WhisperForConditionalGeneration)

    kinds = {"whisper": (WhisperConfig, WhisperForConditionalGeneration),
             "t5": (T5Config, T5ForConditionalGeneration),
             "bart": (BartConfig, BartForConditionalGeneration),
             "marian": (MarianConfig, MarianMTModel)}
    config_class, model_class = kinds[arch]
    spread, seed = WEIGHTS[arch]
    torch.manual_seed(seed)
    config = config_class(**CONFIGS[arch])
    config._attn_implementation = "eager"
    model = model_class(config).eval()
    torch.manual_seed(seed)
    with torch.no_grad():  # a wider spread than the default init, so logits differ clearly
        for name, p in model.named_parameters():
            if p.dim() > 1 and "embed_positions" not in name:
                p.normal_(0.0, spread)
    return model


def write(arch: str, out: Path) -> list[str]:
    """The files of `arch` into `out` (each whole, no external data); their names."""
    import onnx
    from optimum.exporters.onnx import export
    from optimum.exporters.onnx.model_configs import (BartOnnxConfig, MarianOnnxConfig,
                                                      T5OnnxConfig, WhisperOnnxConfig)
    from optimum.exporters.utils import get_encoder_decoder_models_for_export
    from optimum.onnx.graph_transformations import merge_decoders

    onnx_configs = {"whisper": WhisperOnnxConfig, "t5": T5OnnxConfig, "bart": BartOnnxConfig,
                    "marian": MarianOnnxConfig}
    out.mkdir(parents=True, exist_ok=True)
    model = make_model(arch)
    config = onnx_configs[arch](model.config, task=TASKS[arch], use_past=True)
    names = ["encoder_model.onnx", "decoder_model_merged.onnx"]
    if arch in UNMERGED:
        names += ["decoder_model.onnx", "decoder_with_past_model.onnx"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for part, (submodel, subconfig) in get_encoder_decoder_models_for_export(
                model, config).items():
            export(submodel, subconfig, tmp / f"{part}.onnx", opset=OPSET,
                   input_shapes=SHAPES.get(arch))
        merge_decoders(tmp / "decoder_model.onnx", tmp / "decoder_with_past_model.onnx",
                       save_path=tmp / "decoder_model_merged.onnx", strict=False)
        # strict=False: as optimum's own post-processing, the with-past branch gets empty
        # placeholder outputs for the encoder presents it does not compute
        for name in names:
            onnx.save(onnx.load(tmp / name), out / name)
    model.config.save_pretrained(out)
    return [*names, "config.json"]


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
             f"opset {OPSET}; weights N(0, spread), torch seed: "
             + ", ".join(f"{a} {w[0]}, {w[1]}" for a, w in WEIGHTS.items()) + ".", "",
             "| file | bytes | sha256 |", "| --- | --- | --- |"]
    for arch in CONFIGS:
        for name in write(arch, root / arch):
            data = (root / arch / name).read_bytes()
            lines.append(f"| {arch}/{name} | {len(data):,} | "
                         f"{hashlib.sha256(data).hexdigest()} |")
    print("\n".join(lines))
    readme = root / "README.md"
    text = readme.read_text("utf-8") if readme.is_file() else ""
    kept = text.split("\n" + TITLE + "\n")[0].rstrip("\n")  # this section replaced, at the end
    readme.write_text((kept + "\n\n" if kept else "") + "\n".join(lines) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
