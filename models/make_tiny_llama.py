"""The tiny Llama fixtures: a random Llama exported by onnxruntime-genai's model builder.

    pip install 'webnn-converter[genai-fixtures]'     # a venv of its own
    python3 models/make_tiny_llama.py [OUT_DIR]     # default: models/tiny-llama

(onnxruntime-genai 0.18's builder imports names transformers 5 added, so it cannot share a
venv with optimum-onnx, which needs transformers < 4.58; the committed files were written by
onnxruntime-genai 0.18.0, transformers 5.24.0, torch 2.13.0+cpu.)

Writes OUT_DIR/fp32, OUT_DIR/int4 and OUT_DIR/int4-cpu-default, each a decoder as the
builder writes it for the CPU (model.onnx, its external data when the builder splits it,
genai_config.json): input_ids, attention_mask (the whole length, past and new),
`past_key_values.N.key/value` in and `present.N.key/value` out with a symbolic
past_sequence_length, GroupQueryAttention for attention, and (int4) MatMulNBits uint4
weights: `int4` at accuracy level 1 (MatMulNBits computes in float32, the op's meaning),
`int4-cpu-default` at the builder's CPU default, level 4 (ONNX Runtime quantizes the
activations to int8 inside the op: the file onnxruntime-genai users ship). The weights are
random from a fixed torch seed; the model says nothing, it is a shape-and-op fixture for
KV-cache decoding.

The committed copies under models/tiny-llama/ are what the tests read (CI installs neither
torch nor the builder); run this script again only to change the fixture, and commit what it
writes. The Hugging Face checkpoint it builds from is a temporary folder, deleted at the end.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SEED = 20261124
CONFIG = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, vocab_size=256,
              max_position_embeddings=128, rms_norm_eps=1e-5, rope_theta=10000.0,
              tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, pad_token_id=0)
# folder: (the builder's precision, its extra options)
VARIANTS = {
    "fp32": ("fp32", []),
    # accuracy level 1: MatMulNBits computes in float32. At the builder's CPU default (4)
    # ONNX Runtime quantizes the activations to int8 inside the op, an approximation of the
    # op's meaning (logits 0.15 off here) that a parity fixture must not carry...
    "int4": ("int4", ["--extra_options", "block_size=32", "accuracy_level=1"]),
    # ...and what users of the builder get, which verify judges against the float math.
    "int4-cpu-default": ("int4", ["--extra_options", "block_size=32"]),
}
KEEP = ("model.onnx", "model.onnx.data", "genai_config.json")


def save_checkpoint(folder: Path) -> None:
    """A random LlamaForCausalLM of CONFIG, saved as a Hugging Face checkpoint."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    model = LlamaForCausalLM(LlamaConfig(**CONFIG)).eval()
    with torch.no_grad():  # a wider spread than the default init, so logits differ clearly
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.2)
    model.save_pretrained(folder, safe_serialization=True)
    save_tokenizer(folder)


def save_tokenizer(folder: Path) -> None:
    """A word-level tokenizer of VOCAB tokens `<0>`..`<255>`: the builder loads one with the
    checkpoint (for genai_config.json's token ids); the fixtures are fed token ids directly."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {f"<{i}>": i for i in range(CONFIG["vocab_size"])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<0>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<0>", pad_token="<0>",
                            bos_token="<1>", eos_token="<2>").save_pretrained(folder)


def build(checkpoint: Path, out: Path, variant: str, cache: Path) -> None:
    """One decoder through the builder's command line, as its users run it."""
    precision, extra = VARIANTS[variant]
    work = cache / f"out-{variant}"
    command = [sys.executable, "-m", "onnxruntime_genai.models.builder",
               "-i", str(checkpoint), "-o", str(work), "-p", precision, "-e", "cpu",
               "-c", str(cache / "hf-cache"), *extra]
    subprocess.run(command, check=True)
    out.mkdir(parents=True, exist_ok=True)
    for name in KEEP:
        if (work / name).is_file():
            shutil.copyfile(work / name, out / name)


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else Path(__file__).parent / "tiny-llama"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        save_checkpoint(tmp / "checkpoint")
        for variant in VARIANTS:
            build(tmp / "checkpoint", out / variant, variant, tmp)
    for variant in VARIANTS:
        sizes = ", ".join(f"{p.name} {p.stat().st_size:,} B"
                          for p in sorted((out / variant).iterdir()))
        print(f"{out / variant}: {sizes}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
