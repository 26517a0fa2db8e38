"""Which library computes the fused update's matrix products (``model.fused_update_matmul``): the CPU's vendor and
family, the choice ``"auto"`` resolves to, and the oneDNN calls `rlkit_td3.update.fused_update.FusedUpdate` makes with
``"onednn"`` / ``"mixed"`` (see that module's docstring for the measurements behind the choice).
"""

from __future__ import annotations

import platform
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch

MATMUL_CHOICES = ("auto", "reference", "onednn", "mixed")
"""The values of ``model.fused_update_matmul``: which library computes the fused update's matrix products
(`resolve_matmul`)."""
_ONEDNN_CHOICES = ("onednn", "mixed")  # the choices that compute some products with oneDNN
_ONEDNN_MIN_SIZE = 64  # smaller products (the input layer, the width-1 Q output) are faster as the reference calls
_ONEDNN_VENDORS = ("AuthenticAMD", "HygonGenuine")  # x86 CPUs on which MKL runs its non-Intel (AVX2) code path
_FULL_WIDTH_AVX512_FAMILY = 26  # AMD's family 1Ah (Zen 5) and later: AVX-512 on 512-bit units
try:  # oneDNN's inner product on plain (dense) tensors, the kernel torch.compile's CPU backend calls for Linear
    _linear_pointwise: Any = torch.ops.mkldnn._linear_pointwise.default
except (AttributeError, RuntimeError):  # a torch built without oneDNN
    _linear_pointwise = None


@lru_cache(maxsize=1)
def _cpu_id() -> tuple[str, int]:
    """``(vendor, family)`` of the CPU (see `cpu_vendor`, `cpu_family`), read once per process."""
    vendor, family = "", 0
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "vendor_id" and not vendor:
                vendor = value.strip()
            elif key == "cpu family" and not family and value.strip().isdigit():
                family = int(value)
            if vendor and family:
                break
        if vendor:
            return vendor, family
    except OSError:
        pass
    name = platform.processor()  # on Windows, e.g. "AMD64 Family 25 Model 17 Stepping 1, AuthenticAMD"
    match = re.search(r"Family (\d+)", name)
    family = int(match.group(1)) if match else 0
    for vendor in ("GenuineIntel", *_ONEDNN_VENDORS):
        if vendor in name:
            return vendor, family
    if platform.system() == "Darwin" and platform.machine() == "x86_64":
        return "GenuineIntel", family
    return "", family


def cpu_vendor() -> str:
    """The CPU's vendor string as the CPU reports it (``"GenuineIntel"``, ``"AuthenticAMD"``, ...), or ``""`` where
    it cannot be read (read once per process: ``/proc/cpuinfo`` on Linux, the processor name on Windows; every x86
    Mac has an Intel CPU)."""
    return _cpu_id()[0]


def cpu_family() -> int:
    """The CPU's family number as the CPU reports it (``/proc/cpuinfo``'s ``cpu family``, the processor name on
    Windows), or 0 where it cannot be read. On AMD CPUs: 23 for Zen 1-2, 25 for Zen 3-4, 26 for Zen 5."""
    return _cpu_id()[1]


def onednn_matmul_available(dtype: torch.dtype) -> bool:
    """Whether this torch can compute the fused update's products with oneDNN at ``dtype`` (float32 only: oneDNN
    has no float64 kernels)."""
    return _linear_pointwise is not None and dtype == torch.float32 and torch.backends.mkldnn.is_available()


def check_matmul_choice(choice: Any) -> str:
    """``choice`` if it is one of `MATMUL_CHOICES`.

    Raises:
        ValueError: it is not (the message names the attribute, the value and the allowed values).
    """
    if not isinstance(choice, str) or choice not in MATMUL_CHOICES:
        raise ValueError(f"fused_update_matmul={choice!r} is not allowed: use one of {', '.join(MATMUL_CHOICES)}")
    return choice


def resolve_matmul(choice: Any, dtype: torch.dtype) -> str:
    """The library that computes the products for ``model.fused_update_matmul = choice`` at ``dtype``:
    ``"reference"``, ``"onednn"`` or ``"mixed"``.

    * ``"reference"``: the calls autograd makes (MKL on x86): the update is the autograd one bit for bit.
    * ``"onednn"``: oneDNN's inner product for every float32 product whose dimensions are all 64 or more.
    * ``"mixed"``: at several torch threads, oneDNN for those products of a single network (the actor's layers, Q1
      in the actor step, a single critic) except the weight gradients, and the reference calls for the weight
      gradients (their left operand is a transposed view, which oneDNN's op copies first) and for the products of
      the critic ensemble (one batched call, which gives each thread one critic); at one thread, as ``"onednn"``.

    ``"auto"`` picks, for float32 on CPUs on which MKL (when it is torch's BLAS) runs its AVX2 code path, AMD's and
    Hygon's: ``"onednn"`` from AMD's family 26 (Zen 5, full-width AVX-512: oneDNN about twice MKL's speed on every
    product), ``"mixed"`` on earlier families (Zen 4 runs AVX-512 on 256-bit units, where MKL's kernels are nearly as
    fast and its batched call gives each thread one critic); and the reference calls everywhere else. The choice
    depends on the machine and the dtype only, never on a timing, so a run repeats bit for bit.

    Raises:
        ValueError: ``choice`` is not one of `MATMUL_CHOICES`, or it uses oneDNN where oneDNN cannot be used.
    """
    check_matmul_choice(choice)
    if choice == "auto":
        fast = onednn_matmul_available(dtype) and torch.backends.mkl.is_available()
        if not fast or cpu_vendor() not in _ONEDNN_VENDORS:
            return "reference"
        return "onednn" if cpu_family() >= _FULL_WIDTH_AVX512_FAMILY else "mixed"
    if choice in _ONEDNN_CHOICES and not onednn_matmul_available(dtype):
        raise ValueError(
            f"fused_update_matmul={choice!r} needs float32 parameters and a torch built with oneDNN (got {dtype}, "
            f"oneDNN available: {torch.backends.mkldnn.is_available()}); use 'auto' or 'reference'"
        )
    return choice


def _onednn_product(a: torch.Tensor, weight: torch.Tensor, bias: Any, attr: str, *, out: torch.Tensor) -> None:
    """``out = a @ weight.T (+ bias)`` (then ReLU for ``attr="relu"``), computed by oneDNN."""
    out.copy_(_linear_pointwise(a, weight, bias, attr, [], ""))


def _dot_rows(
    x: torch.Tensor, y: torch.Tensor, tmp: torch.Tensor, dim: int, bias: Any, dest: torch.Tensor, *, out: torch.Tensor
) -> None:
    """``dest = sum(x * y, dim) (+ bias)`` through the buffer ``tmp`` (``dest`` is a view of ``out``)."""
    torch.mul(x, y, out=tmp)
    torch.sum(tmp, dim=dim, keepdim=True, out=dest)
    if bias is not None:
        dest.add_(bias)


def _onednn_products(items: tuple, attr: str, *, out: torch.Tensor) -> None:
    """`_onednn_product` for each critic: ``items`` holds ``(a, weight, bias, out)`` per critic (``out`` is unused:
    each item names its own slice of it)."""
    for a, weight, bias, dest in items:
        dest.copy_(_linear_pointwise(a, weight, bias, attr, [], ""))
