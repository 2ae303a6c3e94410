"""
Float arrays in and out: numpy when it is installed (and not turned off), the standard library otherwise.

The compact encoding of a float array on the wire is base64 of little-endian float32, the precision the
server stores embeddings and token log-probs at anyway; it is 3–5 times smaller than JSON numbers.
"""

from __future__ import annotations

import array
import base64
import math
import os
import sys
from typing import Any, List, Sequence

try:  # numpy is optional; CREDITLAB_NO_NUMPY=1 exercises the standard-library path on a machine with numpy
    if os.environ.get("CREDITLAB_NO_NUMPY") == "1":
        raise ImportError("turned off by CREDITLAB_NO_NUMPY")
    import numpy as np
except ImportError:
    np = None  # type: ignore[assignment]

HAS_NUMPY = np is not None


def plain(value: Any) -> Any:
    """A torch tensor or numpy array/scalar as what numpy (or the standard library) can read."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # torch.Tensor, without importing torch
        value = value.detach().cpu().numpy()
    if HAS_NUMPY and isinstance(value, np.generic):
        return value.item()
    return value


def finite_floats(values: Any, where: str) -> Sequence[float]:
    """The values as a float sequence (a float64 numpy array when numpy is there), all finite, else InvalidInput."""
    from .errors import InvalidInput

    values = plain(values)
    if HAS_NUMPY:
        try:
            arr = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidInput(f"{where}: must be an array of numbers") from None
        if arr.ndim != 1:
            raise InvalidInput(f"{where}: must be one-dimensional, got shape {arr.shape}")
        if not np.isfinite(arr).all():
            k = int(np.flatnonzero(~np.isfinite(arr))[0])
            raise InvalidInput(f"{where}[{k}]: must be a finite number, got {arr[k]}")
        return arr
    out = []
    for k, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise InvalidInput(f"{where}[{k}]: must be a finite number, got {v!r}")
        out.append(float(v))
    return out


def encode_f32(values: Sequence[float], where: str) -> str:
    """base64 of little-endian float32 (the compact wire form); a value beyond float32's range is refused."""
    from .errors import InvalidInput

    if HAS_NUMPY:
        with np.errstate(over="ignore"):
            arr = np.asarray(values, dtype="<f4")
        if not np.isfinite(arr).all():
            k = int(np.flatnonzero(~np.isfinite(arr))[0])
            raise InvalidInput(f"{where}[{k}]: {values[k]} is beyond float32's range")
        return base64.b64encode(arr.tobytes()).decode("ascii")
    arr = array.array("f", values)
    for k, v in enumerate(arr):
        if not math.isfinite(v):
            raise InvalidInput(f"{where}[{k}]: {values[k]} is beyond float32's range")
    if sys.byteorder == "big":
        arr.byteswap()
    return base64.b64encode(arr.tobytes()).decode("ascii")


def to_list(values: Sequence[float]) -> List[float]:
    return values.tolist() if HAS_NUMPY and isinstance(values, np.ndarray) else list(values)


def f32_from_bytes(data: bytes):
    """Little-endian float32 bytes as a numpy float32 array, else a list of floats (each a float32 value)."""
    if HAS_NUMPY:
        return np.frombuffer(data, dtype="<f4").astype(np.float32)
    arr = array.array("f")
    arr.frombytes(data)
    if sys.byteorder == "big":
        arr.byteswap()
    return arr.tolist()


def f32_array(values: Sequence[float]):
    """The values rounded to float32: a numpy float32 array when numpy is installed, else a list of floats."""
    return np.asarray(values, dtype=np.float32) if HAS_NUMPY else array.array("f", values).tolist()
