"""Regenerate the dynamic-shape fixtures in models/dynamic/ (issue 14): small transformer and
CNN exports whose batch, sequence or image size are symbolic, the way users export them.

    python models/make_dynamic_fixtures.py          # needs torch and transformers (not CI)

Each model is a tiny random configuration (seeded), exported by torch with named dynamic axes:

* bert_legacy.onnx: transformers BertModel, legacy exporter (`dynamo=False`), inputs
  input_ids/attention_mask [batch, sequence].
* gpt2_dynamo.onnx: transformers GPT2Model without cache, dynamo exporter, [batch, sequence].
* llama_legacy.onnx: transformers LlamaModel without cache (rotary positions), legacy
  exporter, [batch, sequence].
* vit_legacy.onnx: transformers ViTModel on 32x32 images, legacy exporter, [batch, 3, 32, 32];
  vit_sized_legacy.onnx: the same with its position table interpolated to any image size,
  [batch, 3, height, width].
* cnn_legacy.onnx: convolutions, a residual add and a global average pool, legacy exporter,
  [batch, 3, height, width].
* cnn_batch.tflite: a small CNN with a dynamic batch (shape_signature -1), written from the
  TFLite schema without TensorFlow (`python models/make_dynamic_fixtures.py tflite`).

The files are committed (a few tens of KB each), so the tests over them run without torch.
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "dynamic"
TEXT_AXES = {0: "batch", 1: "sequence"}


def _torch():
    import torch

    torch.manual_seed(0)
    return torch


def _export(torch, model, args, path: Path, names: list[str], axes: dict, dynamo: bool = False,
            outputs: list[str] | None = None) -> None:
    model.eval()
    outputs = outputs or ["last_hidden_state"]
    if dynamo:
        from torch.export import Dim

        # One Dim object per name, shared by every input that has that axis; given in the
        # inputs' order (the wrapper's forward takes *args).
        made = {a: Dim(a, min=2, max=64 if a != "batch" else 8)
                for n in names for a in axes[n].values()}
        shapes = {"args": tuple({i: made[a] for i, a in axes[n].items()} for n in names)}
        program = torch.onnx.export(model, args, dynamo=True, input_names=names,
                                    output_names=outputs, dynamic_shapes=shapes,
                                    opset_version=18, optimize=True)
        program.save(str(path))
    else:
        torch.onnx.export(model, args, str(path), input_names=names, output_names=outputs,
                          dynamic_axes=axes, opset_version=17, dynamo=False,
                          do_constant_folding=True)
    _inline_external_data(path)
    print(f"wrote {path} ({path.stat().st_size} bytes)")


def _inline_external_data(path: Path) -> None:
    """One self-contained file (the dynamo exporter may write weights beside it)."""
    import onnx

    model = onnx.load(str(path))
    for extra in path.parent.glob(path.name + ".data"):
        extra.unlink()
    onnx.save(model, str(path), save_as_external_data=False)
    onnx.checker.check_model(str(path), full_check=True)


class _Hidden:
    """A transformers model returning only its last hidden state (one plain output)."""

    @staticmethod
    def wrap(torch, model, names=("input_ids", "attention_mask")):
        class Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, *args):  # by name: the models' second parameters differ
                return self.model(**dict(zip(names, args))).last_hidden_state

        return Wrapped()


def text_ids(torch, batch: int = 2, sequence: int = 8, vocab: int = 96):
    ids = torch.randint(0, vocab, (batch, sequence))
    return ids, torch.ones(batch, sequence, dtype=torch.int64)


def bert(torch) -> None:
    from transformers import BertConfig, BertModel

    config = BertConfig(vocab_size=96, hidden_size=32, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
                        type_vocab_size=1, attn_implementation="eager")
    model = _Hidden.wrap(torch, BertModel(config, add_pooling_layer=False))
    names = ["input_ids", "attention_mask"]
    _export(torch, model, text_ids(torch), OUT / "bert_legacy.onnx", names,
            {n: TEXT_AXES for n in names} | {"last_hidden_state": TEXT_AXES})


def gpt2(torch) -> None:
    from transformers import GPT2Config, GPT2Model

    config = GPT2Config(vocab_size=96, n_embd=32, n_layer=1, n_head=2, n_positions=64,
                        use_cache=False, attn_implementation="eager")
    model = _Hidden.wrap(torch, GPT2Model(config))
    names = ["input_ids", "attention_mask"]
    _export(torch, model, text_ids(torch), OUT / "gpt2_dynamo.onnx", names,
            {n: TEXT_AXES for n in names}, dynamo=True)


def llama(torch) -> None:
    from transformers import LlamaConfig, LlamaModel

    config = LlamaConfig(vocab_size=96, hidden_size=32, intermediate_size=64,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                         max_position_embeddings=64, use_cache=False,
                         attn_implementation="eager")
    model = _Hidden.wrap(torch, LlamaModel(config))
    names = ["input_ids", "attention_mask"]
    _export(torch, model, text_ids(torch), OUT / "llama_legacy.onnx", names,
            {n: TEXT_AXES for n in names} | {"last_hidden_state": TEXT_AXES})


def vit(torch) -> None:
    from transformers import ViTConfig, ViTModel

    config = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=32,
                       num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                       attn_implementation="eager")
    model = _Hidden.wrap(torch, ViTModel(config, add_pooling_layer=False), ["pixel_values"])
    _export(torch, model, (torch.randn(2, 3, 32, 32),), OUT / "vit_legacy.onnx",
            ["pixel_values"], {"pixel_values": {0: "batch"}, "last_hidden_state": {0: "batch"}})
    # The same weights at any image size: the position table interpolated to the patch grid.
    sized = _Hidden.wrap(torch, _Interpolating(torch, model.model), ["pixel_values"])
    axes = {0: "batch", 2: "height", 3: "width"}
    _export(torch, sized, (torch.randn(1, 3, 32, 32),), OUT / "vit_sized_legacy.onnx",
            ["pixel_values"], {"pixel_values": axes, "last_hidden_state": {0: "batch",
                                                                          1: "tokens"}})


def _Interpolating(torch, vit):
    class Interpolating(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.vit = vit

        def forward(self, pixel_values):
            return self.vit(pixel_values=pixel_values, interpolate_pos_encoding=True)

    return Interpolating()


def cnn(torch) -> None:
    nn = torch.nn

    class Cnn(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 8, 3, padding=1)
            self.down = nn.Conv2d(8, 16, 3, stride=2, padding=1)
            self.mix = nn.Conv2d(16, 16, 3, padding=1)
            self.head = nn.Linear(16, 10)

        def forward(self, image):
            x = torch.relu(self.stem(image))
            x = torch.relu(self.down(x))
            x = torch.relu(self.mix(x) + x)
            return self.head(x.mean(dim=(2, 3)))

    axes = {0: "batch", 2: "height", 3: "width"}
    _export(torch, Cnn(), (torch.randn(1, 3, 32, 32),), OUT / "cnn_legacy.onnx", ["image"],
            {"image": axes, "logits": {0: "batch"}}, outputs=["logits"])


def tflite_cnn(_torch=None) -> None:
    """cnn_batch.tflite: CONV_2D (fused RELU), MEAN over the image, FULLY_CONNECTED, SOFTMAX
    on [batch, 8, 8, 3] images, written straight from the TFLite schema (no TensorFlow): every
    activation's shape_signature has -1 for the batch, as a dynamic-batch export's has."""
    import numpy as np

    sys.path.insert(0, str(HERE.parent))
    from converter.testing.tflite_fixtures import RELU, SAME, TfliteBuilder

    rng = np.random.default_rng(0)
    b = TfliteBuilder("dynamic batch fixture")
    image = b.input("image", [1, 8, 8, 3])
    conv = b.tensor("conv", [1, 8, 8, 4])
    b.op("CONV_2D", [image, b.constant("conv/w", _normal(rng, 4, 3, 3, 3)),
                     b.constant("conv/b", _normal(rng, 4, scale=0.1))], [conv],
         padding=SAME, strideW=1, strideH=1, fusedActivationFunction=RELU)
    mean = b.tensor("mean", [1, 4])
    b.op("MEAN", [conv, b.constant("mean/axes", np.array([1, 2], np.int32))], [mean],
         keepDims=False)
    fc = b.tensor("fc", [1, 5])
    b.op("FULLY_CONNECTED", [mean, b.constant("fc/w", _normal(rng, 5, 4)),
                             b.constant("fc/b", _normal(rng, 5, scale=0.1))], [fc])
    probs = b.tensor("probs", [1, 5])
    b.op("SOFTMAX", [fc], [probs], beta=1.0)
    for tensor in b.current.tensors:
        if tensor.buffer == 0:  # activations, not constants
            tensor.shapeSignature = [-1, *tensor.shape[1:]]
    path = b.save(OUT / "cnn_batch.tflite", [probs])
    print(f"wrote {path} ({path.stat().st_size} bytes)")


def _normal(rng, *shape, scale=0.3):
    import numpy as np

    return (rng.standard_normal(shape) * scale).astype(np.float32)


MAKERS = {"bert": bert, "gpt2": gpt2, "llama": llama, "vit": vit, "cnn": cnn,
          "tflite": tflite_cnn}


def main(names: list[str]) -> None:
    OUT.mkdir(exist_ok=True)
    torch = _torch() if set(names or MAKERS) - {"tflite"} else None
    for name in names or MAKERS:
        if torch is not None:
            torch.manual_seed(0)
        MAKERS[name](torch)


if __name__ == "__main__":
    main(sys.argv[1:])
