"""Folding a node whose result size nobody can tell beforehand, in a child with capped memory.

Before a node is folded, folding.folded_bytes bounds what it will allocate, from its input
shapes or from ONNX's shape inference. When neither can tell, the model's values decide the
size: a data-dependent op, or a node whose input types inference rejects while ONNX's reference
evaluator takes them (an Expand whose shape is int32), and a 200-byte file makes the evaluator
ask for gigabytes. Such a node is folded in a forked child whose private writable memory
(RLIMIT_DATA, what numpy's buffers count against) may grow by what the conversion's budget has
left, plus a fixed allowance for the interpreter's own needs. The child sends back each
result's type and shape first: this process claims them from the budget before it allocates
them, then reads them in. When the cap is hit the child says so and the caller decides (the
node's rule keeps it a graph op, or the conversion stops naming the flag).

The cap needs fork and Linux's /proc (`can_cap`); elsewhere the caller does not fold such a
node at all.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import BinaryIO, Callable

import numpy as np
import onnx

from ...budget import MemoryBudget
from .forked import ForkedChild, ended
from .registry import Unsupported

__all__ = ["can_cap", "fold_capped", "OWN_NEEDS"]

# Memory the child may write beyond the budget: its interpreter's arenas, modules an op
# imports when first run (ONNX's reference ops load lazily), and the temporaries of a fold.
OWN_NEEDS = 64 << 20
_HEADER_LIMIT = 1 << 20  # the results' types and shapes: a few hundred bytes in practice
_STATUS = Path("/proc/self/status")


def can_cap() -> bool:
    return hasattr(os, "fork") and _data_bytes() is not None


def _data_bytes() -> int | None:
    """This process's private writable memory (VmData), what RLIMIT_DATA is compared with."""
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def fold_capped(compute: Callable[[], list[np.ndarray]], budget: MemoryBudget, what: str,
                where: str) -> list[np.ndarray] | None:
    """compute()'s results, computed in a forked child whose memory may grow by what `budget`
    has left (plus OWN_NEEDS) and claimed from `budget` before they are read in; None when the
    child ran out of that memory. An error of compute() is raised here as it was raised there
    (Unsupported); the child's crash is an Unsupported too. Call only when `can_cap()`."""
    allowance = budget.left() + OWN_NEEDS
    read_end, write_end = os.pipe()
    # The write end is the child's alone (its end is the end of the results). Leaving the
    # block ends a child not reaped yet (a stop, a claim refused).
    with os.fdopen(read_end, "rb") as f, \
            ForkedChild(lambda: _child(compute, allowance, read_end, write_end),
                        parent_closes=(write_end,)) as child:
        results, status = _results(f, child, budget, what, where)
    if results is None:
        return None
    if status != 0:
        raise Unsupported(f"computing it at conversion time failed: {_status(status)}")
    return results


def _results(f: BinaryIO, child: ForkedChild, budget: MemoryBudget, what: str, where: str
             ) -> tuple[list[np.ndarray] | None, int]:
    """(the results the child sends, None if it ran out of memory; its wait status)."""
    header = f.readline(_HEADER_LIMIT)
    if not header.endswith(b"\n"):  # no result: the child died before sending one
        raise Unsupported(f"computing it at conversion time failed: {_status(child.wait())}")
    found = json.loads(header)
    if "memory" in found:
        return None, 0
    if "unsupported" in found:
        raise Unsupported(str(found["unsupported"]))
    specs = [_spec(entry) for entry in found["results"]]
    budget.claim(sum(nbytes for _, _, nbytes in specs), what, where=where)
    results = [_receive(f, elem, shape, nbytes) for elem, shape, nbytes in specs]
    return results, child.wait()


def _child(compute: Callable[[], list[np.ndarray]], allowance: int, read_end: int,
           write_end: int) -> None:
    """The forked child: cap its memory, compute, send the results; never returns."""
    status = 1
    try:
        import faulthandler
        import resource

        faulthandler.disable()  # a crash here is reported by the parent
        os.close(read_end)
        _, hard = resource.getrlimit(resource.RLIMIT_DATA)
        limit = _data_bytes() + allowance
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
        with os.fdopen(write_end, "wb") as out:
            payloads: list = []
            try:
                results = compute()
                payloads = [_payload(np.asarray(r)) for r in results]
                header = {"results": [[elem, shape, nbytes]
                                      for elem, shape, nbytes, _ in payloads]}
            except MemoryError:
                header, payloads = {"memory": True}, []
            except Unsupported as e:
                header, payloads = {"unsupported": str(e)}, []
            except Exception as e:  # any other failure is the node's, as fold() says it
                first = str(e).splitlines()[0] if str(e) else ""
                header, payloads = {"unsupported": f"computing it at conversion time failed: "
                                                   f"{type(e).__name__}: {first}"}, []
            out.write(json.dumps(header).encode() + b"\n")
            for *_, parts in payloads:
                for part in parts:
                    out.write(part)
        status = 0
    finally:
        os._exit(status)


def _payload(array: np.ndarray) -> tuple[int, list[int], int, list]:
    """(ONNX type, shape, bytes sent, the buffers to send) of one result. Strings go as their
    UTF-8 lengths then their bytes (numpy's fixed-width strings would drop trailing NULs)."""
    try:
        elem = onnx.helper.np_dtype_to_tensor_dtype(array.dtype)
    except (KeyError, TypeError, ValueError):
        raise Unsupported(f"computing it at conversion time gave a result of type "
                          f"{array.dtype}, which ONNX does not have") from None
    if elem != onnx.TensorProto.STRING:
        return elem, list(array.shape), array.nbytes, [np.ascontiguousarray(array).data]
    if not all(isinstance(s, str) for s in array.flat):
        raise Unsupported("computing it at conversion time gave a result that is not a "
                          "tensor of strings")
    encoded = [s.encode("utf-8", "surrogatepass") for s in array.flat]
    lengths = np.array([len(b) for b in encoded], np.int64)
    return elem, list(array.shape), lengths.nbytes + int(lengths.sum()), \
        [lengths.data, b"".join(encoded)]


def _spec(entry) -> tuple[int, tuple[int, ...], int]:
    """(ONNX type, shape, bytes to read) of one result as the child announced it."""
    elem, shape, nbytes = entry
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape) or int(nbytes) < 0:
        raise Unsupported(f"computing it at conversion time gave a result of shape "
                          f"{list(shape)}")
    return int(elem), shape, int(nbytes)


def _receive(f: BinaryIO, elem: int, shape: tuple[int, ...], nbytes: int) -> np.ndarray:
    """One result read from the child (its bytes already claimed from the budget)."""
    if elem != onnx.TensorProto.STRING:
        array = np.empty(shape, onnx.helper.tensor_dtype_to_np_dtype(elem))
        if array.nbytes != nbytes:
            raise Unsupported(f"computing it at conversion time sent {nbytes} bytes for a "
                              f"{array.dtype} result of shape {list(shape)}")
        _read_into(f, memoryview(array.reshape(-1).view(np.uint8)))
        return array
    count = int(np.prod(shape, dtype=np.int64))
    lengths = np.empty(count, np.int64)
    _read_into(f, memoryview(lengths.view(np.uint8)))
    if (lengths < 0).any() or lengths.nbytes + int(lengths.sum()) != nbytes:
        raise Unsupported("computing it at conversion time sent strings of the wrong length")
    blob = bytearray(nbytes - lengths.nbytes)
    _read_into(f, memoryview(blob))
    ends = np.cumsum(lengths)
    strings = [bytes(blob[end - n:end]).decode("utf-8", "surrogatepass")
               for end, n in zip(ends.tolist(), lengths.tolist())]
    array = np.empty(count, object)
    array[:] = strings
    return array.reshape(shape)


def _read_into(f: BinaryIO, view: memoryview) -> None:
    done = 0
    while done < len(view):
        n = f.readinto(view[done:])
        if not n:
            raise Unsupported("computing it at conversion time ended before sending its result")
        done += n


def _status(status: int) -> str:
    return f"the process computing it {ended(status)}"
