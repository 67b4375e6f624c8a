"""The one kernel dispatcher (see :mod:`tensorprob.ops`)."""
from __future__ import annotations

import functools
import os

import torch

_MODES = ("auto", "reference", "triton")


def kernel_mode() -> str:
    """Read the kernel mode from the ``TENSORPROB_KERNELS`` environment variable.

    Returns
    -------
    {"auto", "reference", "triton"}
        The mode, ``"auto"`` when the variable is unset or empty.

    Raises
    ------
    ValueError
        The variable holds another value.
    """
    mode = os.environ.get("TENSORPROB_KERNELS", "auto").strip().lower() or "auto"
    if mode not in _MODES:
        raise ValueError(f"TENSORPROB_KERNELS must be one of {', '.join(_MODES)}; got {mode!r}")
    return mode


@functools.cache
def triton_available() -> bool:
    """Whether triton and the kernels package import (checked once, never at tensorprob import).

    Returns
    -------
    bool
        True when both ``triton`` and ``tensorprob_kernels`` import.
    """
    try:
        import triton  # noqa: F401

        import tensorprob_kernels  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure means "not available"
        return False
    return True


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def use_triton(*tensors: torch.Tensor) -> bool:
    """Whether an operation on ``tensors`` runs its Triton kernel (see the module docstring).

    Parameters
    ----------
    *tensors : torch.Tensor
        The operands; the kernel runs in ``auto`` mode only when all are on CUDA.

    Returns
    -------
    bool
        True for the Triton kernel, False for the torch reference.

    Raises
    ------
    RuntimeError
        ``TENSORPROB_KERNELS=triton`` but triton is missing, or the tensors are on the CPU
        without ``TRITON_INTERPRET=1``.
    """
    mode = kernel_mode()
    if mode == "reference":
        return False
    on_cuda = all(t.is_cuda for t in tensors)
    if mode == "triton":
        if not triton_available():
            raise RuntimeError("TENSORPROB_KERNELS=triton but triton (or tensorprob_kernels) cannot be imported; "
                               "install the 'triton' extra or unset TENSORPROB_KERNELS")
        if not on_cuda and not _interpreting():
            raise RuntimeError("TENSORPROB_KERNELS=triton on CPU tensors needs TRITON_INTERPRET=1 "
                               "(the Triton interpreter); on a GPU, move the data to CUDA")
        return True
    return on_cuda and triton_available()
