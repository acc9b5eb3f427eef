"""The nine `light_*` architectures in the onnx package, with seeded random weights.

The onnx package ships resnet50, vgg19, densenet121, inception v1/v2, squeezenet, shufflenet,
zfnet512 and alexnet with placeholder weights: every weight is a ConstantOfShape of 0.02. Equal
weights hide mistakes (a transposed filter gives the same numbers), so each placeholder is
replaced by a seeded random initializer: conv and gemm weights drawn with variance 1 / fan-in,
so activations keep their scale through deep networks, and 1-D tensors (biases, batch-norm
statistics) drawn in [0.5, 1), positive as variances must be.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

__all__ = ["LIGHT_MODELS", "light_model_source", "light_model", "light_classifier",
           "PHOTO_CLASSES"]

LIGHT_MODELS = ("bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
                "shufflenet", "squeezenet", "vgg19", "zfnet512")


def light_model_source(name: str) -> Path:
    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"light_{name}.onnx"


def light_model(name: str, folder: str | Path, seed: int = 0) -> Path:
    """Write `light_<name>` with seeded random weights into `folder`; return its path."""
    model = onnx.load(str(light_model_source(name)))
    rng = np.random.default_rng(seed)
    shapes = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    keep_nodes, new_inits = [], []
    for node in model.graph.node:
        if node.op_type == "ConstantOfShape" and node.input and node.input[0] in shapes:
            shape = tuple(int(d) for d in shapes[node.input[0]])
            new_inits.append(numpy_helper.from_array(_draw(rng, shape), node.output[0]))
        else:
            keep_nodes.append(node)
    used = {i for n in keep_nodes for i in n.input}
    inits = [t for t in model.graph.initializer if t.name in used] + new_inits
    del model.graph.node[:]
    model.graph.node.extend(keep_nodes)
    del model.graph.initializer[:]
    model.graph.initializer.extend(inits)
    graph_inputs = [i for i in model.graph.input
                    if i.name not in shapes and i.name not in {t.name for t in inits}]
    del model.graph.input[:]
    model.graph.input.extend(graph_inputs)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"light_{name}_seed{seed}.onnx"
    tmp = path.with_suffix(".part")
    onnx.save(model, str(tmp))
    os.replace(tmp, path)
    return path


def _draw(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    if len(shape) >= 2:
        fan_in = int(np.prod(shape[1:]))
        return (rng.standard_normal(shape) * np.sqrt(1.0 / fan_in)).astype(np.float32)
    return rng.uniform(0.5, 1.0, shape).astype(np.float32)



# The class each photo of testing.real_images is fitted to (ImageNet's: 'space shuttle' for the
# astronaut, 'tabby' for the cat, 'espresso', 'missile' for the rocket): any four would do.
PHOTO_CLASSES = (812, 281, 967, 657)
_RIDGE = 1e-3  # the ridge penalty, relative to the features' mean square
_MARGIN = 8.0  # the logit the fitted head aims at for a crop's own photo, 0 for the others


def light_classifier(name: str, folder: str | Path, seed: int = 0, crops: int = 64) -> Path:
    """`light_<name>` (light_model) with its classifier head fitted to tell real photos apart,
    so that its choice follows the image with real margins. Random weights with the positive
    biases of `_draw` leave one class first whatever the input (seeded noise or real crops
    alike), and a head merely re-centred ranks 1000 near-equal scores that float16 rounding
    already reorders: neither makes top-1 agreement mean anything. So the head (the last Conv
    or Gemm, a 1x1 conv or a matrix over pooled features) is fitted by ridge regression on the
    pooled features of `crops` crops at seed 1 (testing.real_images; tests measure on seed 0's)
    to give the crop's photo's class (PHOTO_CLASSES) a logit of _MARGIN and the others 0, as a
    linear probe on the network's random features; a head followed by a ReLU gets one bias
    added to every class so that no pre-activation is negative on those crops (the ReLU then
    passes them unchanged, and the shift changes no ranking). Every Conv's bias is first
    redrawn small (`_small_conv_biases`): with the positive ones, squeezenet's features are
    nearly the same for every image, and int8 rounding of its weights alone turned 44% of the
    fitted choices. Written beside the light model as light_<name>_seed<seed>_fitted.onnx."""
    import onnxruntime as ort

    from .real_images import imagenet_inputs

    path = light_model(name, folder, seed)
    model = onnx.load(str(path))
    head = next(n for n in reversed(model.graph.node) if n.op_type in ("Conv", "Gemm"))
    inits = {t.name: t for t in model.graph.initializer}
    _small_conv_biases(model, inits, seed)
    if len(head.input) < 3 or head.input[2] not in inits:
        raise ValueError(f"light_{name}'s head {head.op_type} has no bias to fit")
    weight, bias = inits[head.input[1]], inits[head.input[2]]
    w = numpy_helper.to_array(weight)
    if head.op_type == "Gemm" and not any(a.name == "transB" and a.i for a in head.attribute):
        raise ValueError(f"light_{name}'s Gemm head takes B [in, class]: not fitted here")
    if w.ndim == 4 and w.shape[2:] != (1, 1):
        raise ValueError(f"light_{name}'s Conv head is {w.shape[2]}x{w.shape[3]}, not 1x1")
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.append(onnx.ValueInfoProto(name=head.input[0]))
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    feed = session.get_inputs()[0].name
    batch = imagenet_inputs(crops, seed=1)
    features = [session.run([head.input[0]], {feed: x})[0][0] for x in batch]  # [in, (h, w)]
    pooled = np.stack([f.reshape(f.shape[0], -1).mean(axis=1) for f in features]).astype(
        np.float64)
    x = np.hstack([pooled, np.ones((len(pooled), 1))])
    target = np.zeros((len(pooled), w.shape[0]))
    target[np.arange(len(pooled)), np.take(PHOTO_CLASSES, np.arange(len(pooled)) % 4)] = _MARGIN
    ridge = _RIDGE * np.trace(x.T @ x) / x.shape[1]
    solved = np.linalg.solve(x.T @ x + ridge * np.eye(x.shape[1]), x.T @ target)  # [in+1, C]
    fitted_w, fitted_b = solved[:-1].T, solved[-1]
    if any(n.op_type == "Relu" and head.output[0] in n.input for n in model.graph.node):
        lowest = min(float((fitted_w @ f.reshape(f.shape[0], -1) + fitted_b[:, None]).min())
                     for f in features)
        fitted_b = fitted_b + max(0.0, -lowest) + 1.0
    weight.CopyFrom(numpy_helper.from_array(fitted_w.reshape(w.shape).astype(np.float32),
                                            weight.name))
    bias.CopyFrom(numpy_helper.from_array(fitted_b.astype(np.float32), bias.name))
    out = path.with_name(f"{path.stem}_fitted.onnx")
    tmp = out.with_suffix(".part")
    onnx.save(model, str(tmp))
    os.replace(tmp, out)
    return out


def _small_conv_biases(model, inits: dict, seed: int) -> None:
    """Redraw every Conv's bias in [-0.05, 0.05): `_draw`'s positive ones (fit for batch-norm
    variances) add up through a network without batch norm (squeezenet) to features that are
    mostly the same for every image, whose small image-made part any rounding of the weights
    then swamps; a trained network's biases are small next to its activations."""
    rng = np.random.default_rng([seed, 1])
    for node in model.graph.node:
        if node.op_type == "Conv" and len(node.input) > 2 and node.input[2] in inits:
            t = inits[node.input[2]]
            shape = numpy_helper.to_array(t).shape
            t.CopyFrom(numpy_helper.from_array(
                rng.uniform(-0.05, 0.05, shape).astype(np.float32), t.name))
