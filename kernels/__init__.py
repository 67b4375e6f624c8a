"""Optional Triton kernels for tensorprob, installed as ``tensorprob_kernels``.

Every kernel here replaces a torch reference in :mod:`tensorprob.ops` that stays in the
package, is what the kernel is tested against, and is what runs on the CPU. ``tensorprob``
imports this package only through :func:`tensorprob.ops.use_triton`, on CUDA tensors with
triton installed (``pip install tensorprob[triton]``).

- ``incidence.incidence_gather_sum``: the E-step product ``S @ log_A`` as a gather-sum over
  the codes (:func:`tensorprob.ops.incidence_matmul`).
- ``incidence.incidence_scatter_sum``: the M-step product ``S^T @ Y`` as one-hot tiles of the
  codes multiplied into Y (:func:`tensorprob.ops.incidence_matmul_t`).
"""

__all__ = ["incidence"]
