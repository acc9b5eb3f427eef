"""numpy versions of MediaPipe's TFLite custom-op kernels, written from their C++ source, as
the oracle for the importer's compositions (LiteRT has no kernels for these ops).

Sources, google-ai-edge/mediapipe (formerly google/mediapipe), mediapipe/util/tflite/operations/:
- max_pool_argmax.cc at commit 16e5d7242d05aedce4b106f4bf69f8d1e4f3c6ef
- max_unpooling.cc at commit 1ddd4aa542132cd263b079532b37a402ba5b751f
- landmarks_to_transform_matrix.cc (namespaces v1, v2) at 24ab0a1a9063875b299c5175d74e1e5d082e5d67
- transform_tensor_bilinear.cc (v1 "TransformTensor", v2 "TransformTensorBilinear") at
  24ab0a1a9063875b299c5175d74e1e5d082e5d67
- transform_landmarks.cc (v1 and v2) at 1cf04343bcfbaec8af7be439ac9d2c0429cb6ee1
and the option parsing in tensorflow/lite/delegates/gpu/common/mediapipe/*.cc, which those
kernels call. Each function follows its kernel's loops and its arithmetic types: float32 where
the C++ uses float, float64 where a double literal promotes it.
"""
from __future__ import annotations

import math

import numpy as np

F32 = np.float32
LOWEST = np.finfo(np.float32).min


def _compute_padding(stride: int, in_size: int, filter_size: int, out_size: int) -> int:
    """tflite::ComputePadding with dilation 1 (C division truncates toward zero)."""
    total = (out_size - 1) * stride + filter_size - in_size
    return max(int(total / 2), 0)


def max_pool_argmax(x: np.ndarray, padding: int, strides, window, clamp=None):
    """MaxPoolingWithArgmax2D: padding 1 SAME / 2 VALID, strides and window as (h, w)."""
    n, h, w, c = x.shape
    (sh, sw), (fh, fw) = strides, window
    if padding == 1:
        oh, ow = (h + sh - 1) // sh, (w + sw - 1) // sw
    else:
        oh, ow = (h - fh + sh) // sh, (w - fw + sw) // sw
    ph, pw = _compute_padding(sh, h, fh, oh), _compute_padding(sw, w, fw, ow)
    out = np.zeros((n, oh, ow, c), F32)
    idx = np.zeros((n, oh, ow, c), F32)
    for b in range(n):
        for oy in range(oh):
            for ox in range(ow):
                for ch in range(c):
                    x0, y0 = ox * sw - pw, oy * sh - ph
                    best, bx, by = LOWEST, 0, 0
                    for fy in range(max(0, -y0), min(fh, h - y0)):
                        for fx in range(max(0, -x0), min(fw, w - x0)):
                            cur = x[b, y0 + fy, x0 + fx, ch]
                            if cur > best:
                                best, bx, by = cur, fx, fy
                    if clamp is not None:
                        best = min(max(best, clamp[0]), clamp[1])
                    out[b, oy, ox, ch] = best
                    idx[b, oy, ox, ch] = F32(by * fw + bx) + F32(0.1)
    return out, idx


def max_unpooling(x: np.ndarray, indices: np.ndarray, strides, window):
    n, h, w, c = x.shape
    (sh, sw), (fh, fw) = strides, window
    oh, ow = h * fh, w * fw
    ph, pw = _compute_padding(sh, oh, fh, h), _compute_padding(sw, ow, fw, w)
    out = np.zeros((n, oh, ow, c), F32)
    for b in range(n):
        for y in range(h):
            for xx in range(w):
                for ch in range(c):
                    i = int(indices[b, y, xx, ch])  # truncates toward zero, as C++ does
                    mx, my = int(math.fmod(i, fw)), int(i / fw)
                    ox, oy = xx * sw - pw + mx, y * sh - ph + my
                    if 0 <= ox < ow and 0 <= oy < oh:
                        out[b, oy, ox, ch] = x[b, y, xx, ch]
    return out


def _mat_mul(a, b):
    """The kernels' Mat3/Mat4 product: float32 sums over k in order."""
    n = a.shape[0]
    out = np.zeros((n, n), F32)
    for r in range(n):
        for col in range(n):
            acc = F32(0)
            for k in range(n):
                acc = F32(acc + F32(a[r, k] * b[k, col]))
            out[r, col] = acc
    return out


def landmarks_to_transform_matrix_v2(landmarks: np.ndarray, subset_idxs, left: int, right: int,
                                     target_rotation: float, output_height: int,
                                     output_width: int, scale_x: float, scale_y: float):
    """Landmarks2TransformMatrix version 2: landmarks [1, N, 3] -> [1, 4, 4]."""
    flat = landmarks.reshape(-1).astype(F32)

    def point(i):
        return flat[3 * i:3 * i + 3]

    pairs = [(subset_idxs[2 * i], subset_idxs[2 * i + 1]) for i in range(len(subset_idxs) // 2)]
    if len(subset_idxs) % 2:
        pairs.append((subset_idxs[-1], subset_idxs[-1]))
    lx, ly = point(left)[:2]
    rx, ry = point(right)[:2]
    rotation = F32(F32(target_rotation) - F32(math.atan2(F32(ry - ly), F32(rx - lx))))
    cos_r, sin_r = F32(math.cos(rotation)), F32(math.sin(rotation))
    rot = np.array([[cos_r, -sin_r, 0], [sin_r, cos_r, 0], [0, 0, 1]], F32)
    cos_m, sin_m = F32(math.cos(-rotation)), F32(math.sin(-rotation))
    rot_inv = np.array([[cos_m, -sin_m, 0], [sin_m, cos_m, 0], [0, 0, 1]], F32)

    def apply(m, v):
        return np.array([F32(F32(F32(m[r, 0] * v[0]) + F32(m[r, 1] * v[1])) + F32(m[r, 2] * v[2]))
                         for r in range(3)], F32)

    points = [apply(rot, np.array([*point(i)[:2], 1], F32)) for pair in pairs for i in pair]
    hi = points[0].copy()
    lo = points[0].copy()
    for p in points[1:]:
        hi[:2] = np.maximum(hi[:2], p[:2])
        lo[:2] = np.minimum(lo[:2], p[:2])
    crop_w, crop_h = F32(hi[0] - lo[0]), F32(hi[1] - lo[1])
    center = np.array([F32(F32(lo[0] + hi[0]) / F32(2)), F32(F32(lo[1] + hi[1]) / F32(2)), 1],
                      F32)
    crop = apply(rot_inv, center)
    t = np.eye(4, dtype=F32)
    shift = np.eye(4, dtype=F32)
    shift[0, 3], shift[1, 3] = crop[0], crop[1]
    t = _mat_mul(t, shift)
    r = F32(-rotation)
    t = _mat_mul(t, np.array([[math.cos(r), -math.sin(r), 0, 0], [math.sin(r), math.cos(r), 0, 0],
                              [0, 0, 1, 0], [0, 0, 0, 1]], F32))
    sx = F32(F32(F32(scale_x) * crop_w) / F32(output_width))
    sy = F32(F32(F32(scale_y) * crop_h) / F32(output_height))
    t = _mat_mul(t, np.diag(np.array([sx, sy, 1, 1], F32)))
    shift2 = np.eye(4, dtype=F32)
    shift2[0, 3] = F32(-1.0 * (output_width / 2.0))
    shift2[1, 3] = F32(-1.0 * (output_height / 2.0))
    t = _mat_mul(t, shift2)
    return t.reshape(1, 4, 4)


def landmarks_to_transform_matrix_v1(landmarks: np.ndarray, subset, left: int, right: int,
                                     input_hw, output_hw, landmarks_range: int,
                                     bbox_size_multiplier: float):
    """Landmarks2TransformMatrix version 1: landmarks [1, 1, 1, 3N] -> [1, 4, 4]."""
    flat = landmarks.reshape(-1).astype(F32)

    def xy(i):
        return flat[3 * i], flat[3 * i + 1]

    pairs = [(subset[2 * i], subset[2 * i + 1]) for i in range(len(subset) // 2)]
    if len(subset) % 2:
        pairs.append((subset[-1], subset[-1]))
    (lx, ly), (rx, ry) = xy(left), xy(right)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = F32(F32(ry - ly) / F32(rx - lx))
    alpha = F32(-math.atan(slope)) if not np.isinf(slope) else F32(-math.copysign(math.pi / 2,
                                                                                  slope))
    ca, sa = F32(math.cos(alpha)), F32(math.sin(alpha))
    hi = [F32(-100000), F32(-100000)]
    lo = [F32(100000), F32(100000)]
    for pair in pairs:
        for i in pair:
            x, y = xy(i)
            turned = (F32(F32(x * ca) - F32(y * sa)), F32(F32(x * sa) + F32(y * ca)))
            hi = [max(hi[k], turned[k]) for k in range(2)]
            lo = [min(lo[k], turned[k]) for k in range(2)]
    box = [F32(F32(hi[k] - lo[k]) * F32(bbox_size_multiplier)) for k in range(2)]
    span = F32(landmarks_range)
    scale = np.array([[box[0] / span, 0, 0], [0, box[1] / span, 0], [0, 0, 1]], F32)
    middle = [F32(F32(hi[k] + lo[k]) / F32(2)) for k in range(2)]
    cm, sm = F32(math.cos(-alpha)), F32(math.sin(-alpha))
    turned_mid = (F32(F32(middle[0] * cm) - F32(middle[1] * sm)),
                  F32(F32(middle[0] * sm) + F32(middle[1] * cm)))
    rotation = np.array([[cm, -sm, F32(turned_mid[0] / span) * F32(2) - F32(1)],
                         [sm, cm, F32(turned_mid[1] / span) * F32(2) - F32(1)],
                         [0, 0, 1]], F32)
    (oh, ow), (ih, iw) = output_hw, input_hw
    to_relative = np.array([[2.0 / (ow - 1.0), 0, -1], [0, 2.0 / (oh - 1.0), -1], [0, 0, 1]],
                           F32)
    to_absolute = np.array([[(iw - 1.0) / 2.0, 0, (iw - 1.0) / 2.0],
                            [0, (ih - 1.0) / 2.0, (ih - 1.0) / 2.0], [0, 0, 1]], F32)
    itm = _mat_mul(_mat_mul(_mat_mul(to_absolute, rotation), scale), to_relative)
    out = np.array([[itm[0, 0], itm[0, 1], 0, itm[0, 2]], [itm[1, 0], itm[1, 1], 0, itm[1, 2]],
                    [itm[2, 0], itm[2, 1], itm[2, 2], 0], [0, 0, 0, 1]], F32)
    return out.reshape(1, 4, 4)


def transform_tensor_bilinear(data: np.ndarray, matrix: np.ndarray, out_hw, version: int):
    """TransformTensor (version 1) / TransformTensorBilinear (version 2): data [1, H, W, C],
    the first two rows of a 4x4 matrix map output (x, y, 0, 1) to input coordinates."""
    _, h, w, c = data.shape
    oh, ow = out_hw
    m = matrix.reshape(-1)[:8].astype(F32)
    xt, yt = m[:4].copy(), m[4:8].copy()
    if version == 2:  # align-corners correction, computed in double (0.5 is a double literal)
        xt[3] = F32(float(xt[3]) + (float(xt[0]) * 0.5 + float(xt[1]) * 0.5 - 0.5))
        yt[3] = F32(float(yt[3]) + (float(yt[0]) * 0.5 + float(yt[1]) * 0.5 - 0.5))
    out = np.zeros((1, oh, ow, c), F32)

    def dot(t, v):
        return F32(F32(F32(F32(t[0] * v[0]) + F32(t[1] * v[1])) + F32(t[2] * v[2]))
                   + F32(t[3] * v[3]))

    def read(yy, xx, ch):
        return F32(0) if yy < 0 or xx < 0 or yy >= h or xx >= w else data[0, yy, xx, ch]

    for oy in range(oh):
        for ox in range(ow):
            coord = np.array([ox, oy, 0, 1], F32)
            tx, ty = dot(xt, coord), dot(yt, coord)
            if tx < 0 or tx > w - 1 or ty < 0 or ty > h - 1:
                continue
            fx, fy = math.floor(tx), math.floor(ty)
            right, lower = F32(tx - F32(fx)), F32(ty - F32(fy))
            for ch in range(c):
                q11, q21 = read(fy, fx, ch), read(fy, fx + 1, ch)
                q12, q22 = read(fy + 1, fx, ch), read(fy + 1, fx + 1, ch)
                # (1.0 - right) is double; right * q is float; the sums are double.
                upper = F32((1.0 - float(right)) * float(q11) + float(F32(right * q21)))
                low = F32((1.0 - float(right)) * float(q12) + float(F32(right * q22)))
                out[0, oy, ox, ch] = F32(float(F32(lower * low))
                                         + (1.0 - float(lower)) * float(upper))
    return out


def transform_landmarks(landmarks: np.ndarray, matrix: np.ndarray, version: int,
                        dimensions: int | None = None, scale: float = 1.0):
    """TransformLandmarks: version 1 on [1, H, W, C] with `dimensions` and `scale` options,
    version 2 on [1, N, D] (dimensions = D, scale 1)."""
    m = matrix.reshape(-1)[:8].astype(F32)
    xt, yt = m[:4].copy(), m[4:8].copy()
    if version == 1:
        xt[3], yt[3] = F32(xt[3] * F32(scale)), F32(yt[3] * F32(scale))
        d = dimensions
    else:
        d = landmarks.shape[-1]
    flat = landmarks.reshape(-1).astype(F32)
    out = np.zeros_like(flat)

    def dot(t, v):
        return F32(F32(F32(F32(t[0] * v[0]) + F32(t[1] * v[1])) + F32(t[2] * v[2]))
                   + F32(t[3] * v[3]))

    for start in range(0, flat.size, d):
        v = np.array([flat[start], flat[start + 1], 0, 1], F32)
        out[start], out[start + 1] = dot(xt, v), dot(yt, v)
        if d == 3:
            out[start + 2] = flat[start + 2]
    return out.reshape(landmarks.shape)
