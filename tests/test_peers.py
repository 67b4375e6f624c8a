"""Agreement with peer libraries where their definitions equal ours (skipped when a peer is not installed).

Data: scikit-learn's wine, 5 equal-width bins per feature (``tensorprob.encode``), k = 8. The ordered picks
must be identical. Which peer function has which definition is read from the peers' source (see
``benchmarks/bench_peers.py``): skfeature's wrappers return ranks and its ``MRMR`` / ``JMI`` use fixed
coefficients, so skfeature is an oracle only through ``LCSI.lcsi`` with explicit (beta, gamma); ITMO_FS
follows Brown et al. (2012) for MIM, mRMR, JMI and CMIM. FEAST (``fstoolbox``) has a file of its own,
``tests/test_feast.py``, which also says how its wrapper must be called (its ``disc*`` functions are broken).
"""
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import load_wine

import tensorprob as tp
from tensorprob.evaluation import selection_agreement

K = 8


def _importable(module: str) -> bool:
    """Import in a subprocess, so that a peer that exits or crashes at import time cannot stop the test run."""
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0


def _skip_unless(module: str) -> None:
    if not _importable(module):
        pytest.skip(f"{module} is not installed (or cannot load)")


@pytest.fixture(scope="module")
def wine_codes():
    d = load_wine()
    return tp.encode(d.data, n_bins=5).codes.astype(np.int64), d.target.astype(np.int64)


def _ours(codes, y, method, **opts):
    return [int(i) for i in tp.select_features(codes, y, K, method=method, **opts).selected_]


def _same(ours, peer):
    agree = selection_agreement(ours, peer)
    assert agree.common_prefix == K, f"ours {ours} vs peer {list(peer)}: {agree}"


@pytest.mark.parametrize("method,beta,gamma,opts", [("mim", 0.0, 0.0, {}), ("mifs", 0.5, 0.0, {"beta": 0.5}),
                                                     ("cife", 1.0, 1.0, {})])
def test_skfeature_lcsi(wine_codes, method, beta, gamma, opts):
    _skip_unless("skfeature")
    from skfeature.function.information_theoretical_based.LCSI import lcsi

    codes, y = wine_codes
    out = lcsi(codes.astype(float), y, mode="index", beta=beta, gamma=gamma, n_selected_features=K)
    _same(_ours(codes, y, method, **opts), np.asarray(out).ravel()[:K])


@pytest.mark.slow  # ITMO_FS imports in about 2 s per test
@pytest.mark.parametrize("method,peer", [("mim", "MIM"), ("mrmr", "MRMR"), ("jmi", "JMI"), ("cmim", "CMIM")])
def test_itmo_fs(wine_codes, method, peer):
    _skip_unless("ITMO_FS")
    from ITMO_FS.filters.multivariate import MultivariateFilter

    codes, y = wine_codes
    f = MultivariateFilter(peer, K)
    f.fit(codes, y)
    _same(_ours(codes, y, method), [int(i) for i in np.asarray(f.selected_features).ravel()[:K]])
