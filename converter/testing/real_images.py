"""Seeded crops of real photos (models/real_images.npz), as an ImageNet classifier takes them.

    crops = real_image_crops(64)            # uint8 [64, 224, 224, 3], RGB
    batch = imagenet_inputs(64)             # float32 [64, 1, 3, 224, 224], normalized NCHW

Seeded uniform noise leaves an image classifier's choice on one class for every sample, so
agreement on it says little; crops of real photos move it. The four photos (README beside the
.npz says where they come from) are cut into `count` crops the way ImageNet training augments
them: a random share of the area (35% to 100%) at a random aspect (3/4 to 4/3), resized to
224x224 (bilinear, here in numpy so that every machine cuts the same pixels), flipped left to
right half of the time. Crop i comes from photo i mod 4 with its own generator (seed, i), so the
first n crops of a longer run are the n crops of a shorter one.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["REAL_IMAGES", "real_image_crops", "imagenet_inputs", "IMAGENET_MEAN",
           "IMAGENET_STD"]

REAL_IMAGES = Path(__file__).resolve().parents[2] / "models" / "real_images.npz"
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)
_PHOTOS = ("astronaut", "chelsea", "coffee", "rocket")


def _photos() -> list[np.ndarray]:
    with np.load(REAL_IMAGES, allow_pickle=False) as npz:
        return [npz[name] for name in _PHOTOS]


def _resize(image: np.ndarray, size: int) -> np.ndarray:
    """Bilinear resize of an HxWxC float image to size x size, pixel centres aligned."""
    def taps(n: int):
        at = np.clip((np.arange(size) + 0.5) * n / size - 0.5, 0, n - 1)
        lo = np.floor(at).astype(np.int64)
        return lo, np.minimum(lo + 1, n - 1), (at - lo).astype(np.float32)

    y0, y1, wy = taps(image.shape[0])
    x0, x1, wx = taps(image.shape[1])
    rows = image[y0] * (1 - wy)[:, None, None] + image[y1] * wy[:, None, None]
    return rows[:, x0] * (1 - wx)[None, :, None] + rows[:, x1] * wx[None, :, None]


def real_image_crops(count: int = 64, seed: int = 0, size: int = 224) -> np.ndarray:
    """`count` seeded crops, uint8 [count, size, size, 3] RGB."""
    photos = _photos()
    out = np.empty((count, size, size, 3), np.uint8)
    for i in range(count):
        photo = photos[i % len(photos)]
        rng = np.random.default_rng([seed, i])
        h, w = photo.shape[:2]
        area = rng.uniform(0.35, 1.0) * h * w
        aspect = np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3)))
        ch = int(min(h, round(np.sqrt(area / aspect))))
        cw = int(min(w, round(np.sqrt(area * aspect))))
        top = int(rng.integers(0, h - ch + 1))
        left = int(rng.integers(0, w - cw + 1))
        crop = _resize(photo[top:top + ch, left:left + cw].astype(np.float32), size)
        if rng.random() < 0.5:
            crop = crop[:, ::-1]
        out[i] = np.clip(np.rint(crop), 0, 255).astype(np.uint8)
    return out


def imagenet_inputs(count: int = 64, seed: int = 0, size: int = 224) -> np.ndarray:
    """The crops as an ImageNet classifier takes them: float32 [count, 1, 3, size, size],
    scaled to [0, 1] and normalized by the ImageNet mean and deviation, one NCHW batch of
    one per sample."""
    crops = real_image_crops(count, seed, size).astype(np.float32) / 255.0
    crops = (crops - IMAGENET_MEAN) / IMAGENET_STD
    return np.ascontiguousarray(crops.transpose(0, 3, 1, 2)[:, None])
