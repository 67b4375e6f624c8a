"""Optional Triton kernels for tensorprob, installed as ``tensorprob.kernels``.

Every kernel here replaces a torch reference implementation that stays in the package
(``tensorprob`` never imports this package at import time, and never needs triton or
CUDA to import or to run): a kernel is used only when triton imports and the data is
on a CUDA device, and it is tested against its reference.
"""

__all__: list[str] = []


def triton_available() -> bool:
    """True when triton can be imported (checked lazily, never at tensorprob import)."""
    try:
        import triton  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure means "not available"
        return False
    return True
