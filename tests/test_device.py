"""Device and dtype resolution, and random_state to torch.Generator (tensorprob._device)."""
import numpy as np
import pytest
import torch

import tensorprob as tp
from tensorprob._device import make_generator, resolve_device, resolve_dtype, seed_from_random_state


def test_device_and_dtype_resolution(device, dtype):
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")).type == "cpu"
    assert resolve_device("auto").type == device  # the lane's configured default
    assert resolve_dtype(None, torch.device(device)) == dtype
    with tp.config_context(device="auto", dtype=None):
        assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
        assert resolve_dtype(None, torch.device("cpu")) == torch.float64
        assert resolve_dtype(None, torch.device("cuda")) == torch.float32
    with pytest.raises(ValueError, match="dtype must be"):
        tp.set_config(dtype="float16")
    with pytest.raises(ValueError, match="not supported"):
        tp.set_config(device="meta")
    assert resolve_dtype("float32", torch.device("cpu")) == torch.float32
    with pytest.raises(ValueError, match="dtype must be"):
        resolve_dtype("float16", torch.device("cpu"))
    with pytest.raises(ValueError, match="not supported"):
        resolve_device("meta")
    with pytest.raises(TypeError):
        resolve_device(3)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            resolve_device("cuda")


def test_random_state_to_generator():
    cpu = torch.device("cpu")
    a = torch.rand(5, generator=make_generator(7, cpu))
    b = torch.rand(5, generator=make_generator(7, cpu))
    assert torch.equal(a, b)
    g1 = make_generator(np.random.default_rng(3), cpu)
    g2 = make_generator(np.random.default_rng(3), cpu)
    assert torch.equal(torch.rand(3, generator=g1), torch.rand(3, generator=g2))
    tg = torch.Generator().manual_seed(1)
    assert make_generator(tg, cpu) is tg
    assert seed_from_random_state(None) != seed_from_random_state(None)
    with pytest.raises(ValueError, match="non-negative"):
        seed_from_random_state(-1)
    with pytest.raises(TypeError, match="random_state"):
        seed_from_random_state("seed")


