"""Named operations with a torch reference and, where it pays on a GPU, a Triton kernel.

Each operation here is a plain torch function (the reference), always used on the CPU,
and what the optional kernel in the top-level ``kernels/`` directory (installed as
``tensorprob_kernels``) is tested against. One dispatcher, :func:`use_triton`, decides per
call: the kernel runs only on CUDA tensors with triton importable, unless the environment
variable ``TENSORPROB_KERNELS`` says otherwise:

- ``auto`` (default): the kernel on CUDA when triton imports, the reference elsewhere;
- ``reference``: always the torch reference (to rule a kernel out when chasing a bug);
- ``triton``: always the kernel; on CPU tensors only under ``TRITON_INTERPRET=1`` (the tests).
"""
from __future__ import annotations

from ._dispatch import kernel_mode, triton_available, use_triton
from ._incidence import ScatterPlan, incidence_matmul, incidence_matmul_reference, incidence_matmul_t, scatter_plan

__all__ = ["ScatterPlan", "incidence_matmul", "incidence_matmul_reference", "incidence_matmul_t", "kernel_mode",
           "scatter_plan", "triton_available", "use_triton"]
