"""Sweep real vision architectures through export -> convert -> verify -> target check.

Not run in CI (it exports torch models: minutes, and torch, torchvision, transformers and
litert-torch are not project dependencies). Each architecture is built with seeded random
weights of order one (see _randomize) at a small input size and exported by torch's dynamo
exporter (opset 18), its legacy TorchScript exporter (opset 17; `dyn13`: opset 13 with a
dynamic batch axis; `fp16`: the model in half precision), or litert-torch to .tflite (`litert`;
`litert-dq`, `litert-s8`: that file quantized by ai-edge-quantizer), then run through the
`webnn-convert` CLI, one step at a time, each a separate process with its own time limit:

    webnn-convert convert M.onnx -o M.webnn
    webnn-convert verify M.onnx --json              (parity against ONNX Runtime on M.onnx,
                                                     or LiteRT on M.tflite)
    webnn-convert verify M.onnx --json --runtime chromium --target chromium-litert
                                                    (the graph in Chromium's WebNN)
    webnn-convert check M.onnx --target chromium-litert

litert-torch pulls in jax and pins older pydantic/typing_extensions: install it apart, e.g.
`pip install --no-deps --target /tmp/lt litert-torch litert-converter ai-edge-quantizer jax
jaxlib torchao ...` and pass `--litert-path /tmp/lt` (put on PYTHONPATH for those exports only).

Usage:
    python tools/vision_sweep.py --out /tmp/sweep [--only resnet18,vit_tiny] [--exporter dynamo]
    python tools/vision_sweep.py --out /tmp/sweep --exporter litert-s8 --litert-path /tmp/lt
    python tools/vision_sweep.py --out /tmp/sweep --table    # print the markdown table

Results go to OUT/results.json (one row per model and exporter, rewritten after every row, so a
stopped sweep keeps what it reached). torchvision's compiled ops are not needed: the builds here
use none of them, and when its C extension cannot load (a CUDA wheel beside CPU torch) the two
op schemas its import registers fake kernels for are declared first.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

SIZE = 64  # the image side used unless an architecture needs more


def _torchvision():
    """Import torchvision even when its C extension does not load (no nms/qnms schemas)."""
    import torch
    try:
        import torchvision
    except RuntimeError as e:
        if "torchvision::nms" not in str(e):
            raise
        for name in [m for m in list(sys.modules) if m.startswith("torchvision")]:
            del sys.modules[name]
        lib = torch.library.Library("torchvision", "DEF")
        lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        _torchvision.lib = lib  # keep the definitions alive
        import torchvision
    import torchvision
    return torchvision


def _tv(name, **kw):
    def build():
        return getattr(_torchvision().models, name)(weights=None, **kw)
    return build


def _tv_seg(name, **kw):
    def build():
        import torch

        class Out(torch.nn.Module):  # segmentation models return a dict; export its tensor
            def __init__(self):
                super().__init__()
                self.m = getattr(_torchvision().models.segmentation, name)(
                    weights=None, weights_backbone=None, **kw)

            def forward(self, x):
                return self.m(x)["out"]
        return Out()
    return build


def _tv_vit():
    tv = _torchvision()
    return tv.models.VisionTransformer(image_size=SIZE, patch_size=16, num_layers=2,
                                       num_heads=4, hidden_dim=64, mlp_dim=128, num_classes=10)


def _tv_video():
    return _torchvision().models.video.r3d_18(weights=None, num_classes=10)


def _custom(kind):
    """Small modules made of the layers of models the list above misses: U-Net, super
    resolution, style transfer, spatial transformers, adaptive pooling to a fixed grid."""
    def build():
        import torch
        nn, F = torch.nn, torch.nn.functional

        class UNet(nn.Module):  # GroupNorm, ConvTranspose2d, skip concat, align_corners resize
            def __init__(self):
                super().__init__()
                self.down = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.GroupNorm(4, 16),
                                          nn.SiLU())
                self.mid = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                                         nn.GroupNorm(8, 32), nn.SiLU())
                self.up = nn.ConvTranspose2d(32, 16, 2, stride=2)
                self.out = nn.Conv2d(32, 4, 1)

            def forward(self, x):
                a = self.down(x)
                b = self.up(self.mid(a))
                y = self.out(torch.cat([a, b], 1))
                return F.interpolate(y, scale_factor=0.5, mode="bilinear", align_corners=True)

        class Espcn(nn.Module):  # sub-pixel super resolution
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Conv2d(3, 16, 5, padding=2), nn.Tanh(),
                                          nn.Conv2d(16, 8, 3, padding=1), nn.Tanh(),
                                          nn.Conv2d(8, 3 * 9, 3, padding=1), nn.PixelShuffle(3))

            def forward(self, x):
                return self.body(x)

        class Style(nn.Module):  # fast style transfer: reflection pads, instance norms
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(
                    nn.ReflectionPad2d(4), nn.Conv2d(3, 8, 9), nn.InstanceNorm2d(8, affine=True),
                    nn.ReLU(), nn.ReflectionPad2d(1), nn.Conv2d(8, 16, 3, stride=2),
                    nn.InstanceNorm2d(16, affine=True), nn.ReLU(),
                    nn.Upsample(scale_factor=2, mode="nearest"), nn.ReflectionPad2d(1),
                    nn.Conv2d(16, 3, 3))

            def forward(self, x):
                return self.body(x)

        class Stn(nn.Module):  # spatial transformer: affine_grid + grid_sample
            def __init__(self):
                super().__init__()
                self.loc = nn.Sequential(nn.Conv2d(3, 8, 5, stride=4), nn.ReLU(),
                                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 6))

            def forward(self, x):
                theta = self.loc(x).view(-1, 2, 3) * 0.2 + torch.tensor(
                    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
                grid = F.affine_grid(theta, list(x.shape), align_corners=False)
                return F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros",
                                     align_corners=False)

        class Adaptive(nn.Module):  # an adaptive pool to a grid that does not divide the input
            def __init__(self):  # (an AdaptiveMaxPool2d to 3x5 exports with neither exporter)
                super().__init__()
                self.conv = nn.Conv2d(3, 8, 3)
                self.avg = nn.AdaptiveAvgPool2d((7, 7))

            def forward(self, x):
                return self.avg(self.conv(x)).flatten(1)

        return {"unet": UNet, "espcn": Espcn, "style": Style, "stn": Stn,
                "adaptive": Adaptive}[kind]()
    return build


def _hf(config_name, model_name, output="logits", **cfg):
    def build():
        import torch
        _torchvision()  # transformers imports it, and it must load first (see above)
        import transformers
        config = getattr(transformers, config_name)(**cfg)
        model = getattr(transformers, model_name)(config)

        class Out(torch.nn.Module):  # transformers return ModelOutput objects
            def __init__(self):
                super().__init__()
                self.m = model

            def forward(self, x):
                return getattr(self.m(pixel_values=x), output)
        return Out()
    return build


# name -> (build, input shape)
MODELS = {
    "resnet18": (_tv("resnet18"), (1, 3, SIZE, SIZE)),
    "mobilenet_v2": (_tv("mobilenet_v2"), (1, 3, SIZE, SIZE)),
    "mobilenet_v3_small": (_tv("mobilenet_v3_small"), (1, 3, SIZE, SIZE)),
    "efficientnet_b0": (_tv("efficientnet_b0"), (1, 3, SIZE, SIZE)),
    "squeezenet1_1": (_tv("squeezenet1_1"), (1, 3, SIZE, SIZE)),
    "shufflenet_v2_x0_5": (_tv("shufflenet_v2_x0_5"), (1, 3, SIZE, SIZE)),
    "densenet121": (_tv("densenet121"), (1, 3, SIZE, SIZE)),
    "regnet_y_400mf": (_tv("regnet_y_400mf"), (1, 3, SIZE, SIZE)),
    "mnasnet0_5": (_tv("mnasnet0_5"), (1, 3, SIZE, SIZE)),
    "googlenet": (_tv("googlenet", aux_logits=False, init_weights=True), (1, 3, SIZE, SIZE)),
    "inception_v3": (_tv("inception_v3", aux_logits=False, init_weights=True),
                     (1, 3, 96, 96)),
    "convnext_tiny": (_tv("convnext_tiny"), (1, 3, SIZE, SIZE)),
    "swin_t": (_tv("swin_t"), (1, 3, SIZE, SIZE)),
    "vit_tiny": (_tv_vit, (1, 3, SIZE, SIZE)),
    "maxvit_t": (_tv("maxvit_t"), (1, 3, 224, 224)),
    "r3d_18": (_tv_video, (1, 3, 4, 32, 32)),
    "lraspp_mobilenet_v3": (_tv_seg("lraspp_mobilenet_v3_large", num_classes=5),
                            (1, 3, SIZE, SIZE)),
    "fcn_resnet50": (_tv_seg("fcn_resnet50", num_classes=5, aux_loss=False),
                     (1, 3, SIZE, SIZE)),
    "deeplabv3_mobilenet_v3": (_tv_seg("deeplabv3_mobilenet_v3_large", num_classes=5,
                                       aux_loss=False), (1, 3, SIZE, SIZE)),
    "unet_small": (_custom("unet"), (1, 3, SIZE, SIZE)),
    "espcn": (_custom("espcn"), (1, 3, 32, 32)),
    "style_transfer": (_custom("style"), (1, 3, SIZE, SIZE)),
    "spatial_transformer": (_custom("stn"), (1, 3, SIZE, SIZE)),
    "adaptive_pools": (_custom("adaptive"), (1, 3, 12, 12)),
    "hf_segformer": (_hf("SegformerConfig", "SegformerForSemanticSegmentation",
                         hidden_sizes=[16, 32, 40, 64], decoder_hidden_size=32, num_labels=5,
                         depths=[1, 1, 1, 1], num_attention_heads=[1, 2, 2, 4]),
                     (1, 3, SIZE, SIZE)),
    "hf_mobilevit": (_hf("MobileViTConfig", "MobileViTForImageClassification",
                         image_size=SIZE, hidden_sizes=[32, 40, 48],
                         neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64], num_labels=10),
                     (1, 3, SIZE, SIZE)),
    "hf_swin": (_hf("SwinConfig", "SwinForImageClassification", image_size=SIZE, embed_dim=16,
                    depths=[1, 1], num_heads=[1, 2], window_size=4, num_labels=10),
                (1, 3, SIZE, SIZE)),
    "hf_convnext": (_hf("ConvNextConfig", "ConvNextForImageClassification",
                        hidden_sizes=[16, 24, 32, 40], depths=[1, 1, 1, 1], num_labels=10),
                    (1, 3, SIZE, SIZE)),
    "hf_detr": (_hf("DetrConfig", "DetrForObjectDetection", output="pred_boxes",
                    use_timm_backbone=False, use_pretrained_backbone=False,
                    backbone_config={"model_type": "resnet", "hidden_sizes": [16, 24, 32, 40],
                                     "embedding_size": 16, "depths": [1, 1, 1, 1],
                                     "out_features": ["stage4"]},
                    d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                    decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
                    num_queries=10),
                (1, 3, SIZE, SIZE)),
}

# exporter -> ONNX opset. dyn13: the legacy exporter at opset 13 with a dynamic batch axis (as
# most tutorials export); fp16: the legacy exporter on the model in half precision.
# litert: litert-torch's float .tflite; litert-dq and litert-s8: that file quantized by
# ai-edge-quantizer (dynamic_wi8_afp32: int8 weights; static_wi8_ai8: int8 weights and
# activations, calibrated on 8 seeded images).
EXPORTERS = {"dynamo": 18, "legacy": 17, "dyn13": 13, "fp16": 17, "litert": None,
             "litert-dq": None, "litert-s8": None}


def _randomize(model, shape) -> None:
    """Give every weight a value of order one, the norms statistics of seeded data, then eval.

    Fresh weights are made for training, not for parity: torchvision's unit running
    statistics shrink activations layer after layer (mobilenet_v2's logits come out near
    1e-10), a ViT's head starts at zero, transformers' initializer_range 0.02 and ConvNeXt's
    layer scale 1e-6 leave outputs near 1e-8, and inception's truncated normals grow them to
    1e4. Parity on such outputs proves little. So: convolution and linear weights uniform with
    unit variance per fan-in, biases, norm scales and other parameters (class tokens, position
    tables, layer scales) of order one, then a few training-mode passes over random images
    set each batch norm's running mean and variance to what it sees, as training would.
    """
    import math

    import torch
    nn = torch.nn
    with torch.no_grad():
        done = set()
        for m in model.modules():
            if isinstance(m, (nn.Linear, nn.modules.conv._ConvNd)):
                fan_in = m.weight[0].numel() if not isinstance(
                    m, nn.modules.conv._ConvTransposeNd) else m.weight[:, 0].numel()
                bound = math.sqrt(3.0 / fan_in)
                m.weight.uniform_(-bound, bound)
                done.add(id(m.weight))
                if m.bias is not None:
                    m.bias.uniform_(-0.1, 0.1)
                    done.add(id(m.bias))
            elif isinstance(m, (nn.modules.batchnorm._BatchNorm, nn.LayerNorm, nn.GroupNorm)):
                if isinstance(m, nn.modules.batchnorm._BatchNorm):
                    m.momentum = None  # a cumulative average over the passes below
                    m.reset_running_stats()
                if getattr(m, "weight", None) is not None:
                    m.weight.uniform_(0.5, 1.5)
                    done.add(id(m.weight))
                if getattr(m, "bias", None) is not None:
                    m.bias.uniform_(-0.2, 0.2)
                    done.add(id(m.bias))
        for p in model.parameters():
            if id(p) not in done:
                p.uniform_(-0.5, 0.5)
        if any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules()):
            model.train()
            for _ in range(2):
                model(torch.rand(2, *shape[1:]))
    model.eval()


def _quantize(path: Path, exporter: str, shape) -> None:
    """Quantize the .tflite at `path` in place with ai-edge-quantizer's recipe for `exporter`."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter
    from ai_edge_quantizer import quantizer, recipe
    q = quantizer.Quantizer(str(path))
    if exporter == "litert-dq":
        q.load_quantization_recipe(recipe.dynamic_wi8_afp32())
        result = q.quantize()
    else:
        q.load_quantization_recipe(recipe.static_wi8_ai8())
        signatures = Interpreter(str(path)).get_signature_list()
        key = next(iter(signatures))
        name = signatures[key]["inputs"][0]
        rng = np.random.default_rng(1)
        data = {key: [{name: rng.random(shape, dtype=np.float32)} for _ in range(8)]}
        result = q.quantize(q.calibrate(data))
    result.export_model(str(path), overwrite=True)


def export(name: str, exporter: str, path: Path) -> None:
    """Export one model (this runs in a child process: torch's state stays out of the parent)."""
    import torch
    torch.manual_seed(0)
    # torch's fused attention fast path (eval mode) has no TorchScript export; the same
    # module's plain path computes the same function.
    torch.backends.mha.set_fastpath_enabled(False)
    build, shape = MODELS[name]
    model = build()
    _randomize(model, shape)
    x = torch.rand(*shape)
    with torch.no_grad():
        y = model(x)
    # the scale the parity figures are read against
    path.with_name("output_rms.txt").write_text(f"{float(y.float().pow(2).mean().sqrt()):.4g}")
    if exporter.startswith("litert"):
        import litert_torch
        litert_torch.convert(model, (x,)).export(str(path))
        if exporter != "litert":
            _quantize(path, exporter, shape)
        return
    if exporter == "fp16":
        model, x = model.half(), x.half()
    dynamic = {"input": {0: "batch"}, "output": {0: "batch"}} if exporter == "dyn13" else None
    with torch.no_grad():
        torch.onnx.export(model, (x,), str(path), input_names=["input"],
                          output_names=["output"], opset_version=EXPORTERS[exporter],
                          dynamo=exporter == "dynamo", external_data=False,
                          dynamic_axes=dynamic)


def _run(cmd: list[str], timeout: int, env=None) -> tuple[int, str, float]:
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                           check=False)
    except subprocess.TimeoutExpired:
        return -9, f"timed out after {timeout}s", time.monotonic() - t0
    return p.returncode, (p.stdout + p.stderr), time.monotonic() - t0


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def _verdict(out: str, key: str) -> dict:
    """The verify report's verdict and its worst output's numbers, under KEY_*."""
    try:
        report = json.JSONDecoder().raw_decode(out[out.index("{"):])[0]  # stderr may follow
    except ValueError:
        return {key: _last_line(out)}
    rows = report.get("outputs") or []
    worst = max(rows, key=lambda r: r.get("maxAbs") or 0.0, default={})
    return {key: "pass" if report.get("passed") else "MISMATCH",
            f"{key}_abs": worst.get("maxAbs"), f"{key}_ulp": worst.get("maxUlp")}


def sweep_one(name: str, exporter: str, out: Path, timeout: int, litert_path: str) -> dict:
    opset = EXPORTERS[exporter]
    row = {"model": name, "exporter": f"{exporter} (opset {opset})" if opset else
           f"{exporter} (.tflite)"}
    folder = out / f"{name}-{exporter}"
    folder.mkdir(parents=True, exist_ok=True)
    model_path = folder / ("model.onnx" if opset else "model.tflite")
    if not model_path.exists():
        env = dict(os.environ)
        if not opset and litert_path:  # litert-torch kept out of the shared venv
            env["PYTHONPATH"] = os.pathsep.join([litert_path, env.get("PYTHONPATH", "")])
        rc, text, secs = _run([sys.executable, __file__, "--export", name, exporter,
                               str(model_path)], timeout, env)
        if rc != 0:
            row["export"] = "fail: " + _last_line(text)
            return row
    row["export"] = "ok"
    rms = folder / "output_rms.txt"
    row["output_rms"] = float(rms.read_text()) if rms.exists() else None
    cli = [sys.executable, "-m", "cli.main"]
    dims = ["--dim", "batch=1"] if exporter == "dyn13" else []  # convert asks for its value
    rc, text, secs = _run(cli + ["convert", str(model_path), "-o", str(folder / "m.webnn")]
                          + dims, timeout)
    row["convert"] = "ok" if rc == 0 else "fail: " + _last_line(text)
    row["convert_s"] = round(secs, 1)
    if rc == 0:
        rc, text, secs = _run(cli + ["verify", str(model_path), "--json"] + dims, timeout)
        row.update(_verdict(text, "ort"))
        # in the browser, converted for its backend (the target's passes run first)
        rc, text, secs = _run(cli + ["verify", str(model_path), "--json", "--runtime",
                                     "chromium", "--target", "chromium-litert"] + dims,
                              timeout)
        row.update(_verdict(text, "chromium"))
        rc, text, secs = _run(cli + ["check", str(model_path), "--target", "chromium-litert"]
                              + dims, timeout)
        row["check"] = "fits" if rc == 0 else ("violations: " + _last_line(text)
                                               if rc == 1 else "error: " + _last_line(text))
    return row


def table(rows: list[dict]) -> str:
    header = ("| model | exporter | output rms | convert | verify ort (max abs / ulp) | "
              "verify chromium (max abs / ulp) | check chromium-litert |")
    lines = [header, "|---|---|---|---|---|---|---|"]
    for r in rows:
        conv = r.get("convert", r.get("export", ""))
        if r.get("export", "ok") != "ok":
            conv = "export " + r["export"]
        ver = []
        for key in ("ort", "chromium"):
            v = r.get(key, "")
            if r.get(f"{key}_abs") is not None:
                v = f"{v} ({r[f'{key}_abs']:.2g} / {r.get(f'{key}_ulp')})"
            ver.append(v)
        rms = f"{r['output_rms']:.3g}" if r.get("output_rms") is not None else ""
        lines.append(f"| {r['model']} | {r['exporter']} | {rms} | {conv} | {ver[0]} | {ver[1]} | "
                     f"{r.get('check', '')} |")
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--export":
        export(sys.argv[2], sys.argv[3], Path(sys.argv[4]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--only", default="", help="comma-separated model names")
    ap.add_argument("--exporter", choices=sorted(EXPORTERS), action="append")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--litert-path", default="",
                    help="a folder holding litert-torch and its dependencies (pip --target), "
                         "put on PYTHONPATH for the litert exports only")
    ap.add_argument("--table", action="store_true", help="print the table of OUT and stop")
    args = ap.parse_args()
    results_path = args.out / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    if args.table:
        print(table(list(results.values())))
        return
    names = args.only.split(",") if args.only else list(MODELS)
    for name in names:
        for exporter in args.exporter or ["dynamo", "legacy"]:
            row = sweep_one(name, exporter, args.out, args.timeout, args.litert_path)
            results[f"{name}/{exporter}"] = row
            results_path.write_text(json.dumps(results, indent=1))
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
