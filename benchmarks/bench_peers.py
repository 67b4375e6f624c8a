"""Peer benchmark: tensorprob against the peer libraries, same codes, same process conditions.

    python benchmarks/bench_peers.py                     # the full tables (hours on 2 cores: see below)
    python benchmarks/bench_peers.py --quick             # small subsets, one warm run: a smoke test
    python benchmarks/bench_peers.py --datasets chess,madelon --libraries FEAST,fast-select --no-cpd
    python benchmarks/bench_peers.py --devices cuda --no-peers --no-cpd --tag cuda   # tensorprob CUDA rows only

This is the one peer runner: ``bench_selectors.py`` (tensorprob's own selectors and scaling)
imports its data sets and its timed child process from here.

**Data.** chess (kr-vs-kp, 3196 x 36), optdigits (5620 x 64), madelon (2600 x 500), COIL-20
(1440 x 1024), MNIST-5k (5000 x 784), splice (3190 x 60), and planted latent class samples
(``tensorprob.datasets.make_planted``, 5 values per feature) of the satimage shape (6435 x 36,
6 classes), the arcene shape (200 x 10,000, 2 classes) and 100,000 x 1,000 (10 classes, k = 20).
madelon and COIL-20 are the scikit-feature ``.mat`` files, read from ``--mat-dir`` (default
``$TENSORPROB_SKFEATURE_DATA`` or /work/shared/data/skfeature; never copied into the
repository); a missing file skips its data set with the reason printed. Every data set is
encoded once (``tensorprob.encode``: categorical columns by value, continuous ones in 5
equal-width bins) and the same integer codes go to every library (converted, outside the
timings, to the dtype and layout each one takes). k = 50 (``--k``; all features when fewer).

**Process conditions.** Every timed run (tensorprob's included) happens in a child process
forked from one ``forkserver`` (NumPy, torch and tensorprob preloaded, no thread pool started),
with a time limit (``--timeout`` for the first call and for each warm call, ``--cpd-timeout`` for
CPD fits). In the child, after the untimed set-up (imports, data, thread caps through
threadpoolctl, ``torch.set_num_threads`` and Numba), the **first call** is timed on its own
(it pays Numba's JIT compilation, torch's first use, lazy imports), then ``--repeats`` warm
calls (default 3; 1 with ``--quick``) whose **median** is the reported figure. tensorprob's
selectors run at every thread count of ``--tp-threads`` (default 1,2) and on every device of
``--devices``; peers run with ``--peer-threads`` (default: the largest of ``--tp-threads``) as
their thread cap. FEAST is single-threaded C, so compare it with the 1-thread column.

**Selector peers** (``selection agreement`` = common ordered prefix and set overlap |A & B| / k
of each (tensorprob method, peer method) pair, with tensorprob's CPU picks at the fewest
threads; ``same definition`` says whether the pair computes the same criterion, read from
the peers' source; ties may still break differently):

* skfeature-chappers: its ``MRMR`` is LCSI with a fixed beta = 0.8, gamma = 0 (not the 1/|S|
  of mRMR): compared with ``MIFS(beta=0.8)``; its ``JMI`` is LCSI with beta = 0.8, gamma = 0.5
  (not 1/|S|): definitions differ; its ``ICAP`` computes the CMIM update (no clipping at 0):
  compared with CMIM; its ``DISR`` divides the summed normalized joint MI by
  sum_j (1 + I(f; f_j)): definitions differ. Its wrappers return ranks in 1.2.1, so LCSI is
  called directly.
* ITMO_FS: Brown et al. (2012) criteria, except ICAP, which clips the summed redundancy term
  once instead of every term.
* mrmr_selection: ``mrmr_classif`` is an F-statistic / Pearson mRMR, not an MI method: a speed
  reference (``n_jobs`` = the peer thread cap).
* FEAST through ``fstoolbox`` 0.0.2 (ctypes wrapper of FEAST's C library; single-threaded:
  neither ``libFSToolbox.so`` nor its ``libMIToolbox`` links OpenMP or pthreads).
  Calling convention, read from its source: ``fstoolbox.<METHOD>(data, labels, k[, beta,
  gamma])`` with ``data`` n_samples x n_features of nonnegative integer codes (converted to a
  Fortran-ordered uint32 array: one contiguous array per feature, as FEAST's ``uint**``
  expects), ``labels`` n_samples codes (uint32); it returns ``(selected, scores)`` with
  0-based feature indices in the order of selection (CondMI pads with 2**32 - 1 once the
  conditional MI reaches 0). The ``disc*`` float variants are not used: their wrapper passes
  row pointers of a C-ordered uint32 copy where FEAST expects per-feature double arrays.
  Pairs: MIM, mRMR_D (= MRMR), JMI, DISR, ICAP, CMIM, BetaGamma(0.5, 0) (= MIFS, beta 0.5) and
  BetaGamma(1, 1) (= CIFE). FEAST's CMIM is Fleuret's original (the score starts at I(X;C) and
  each conditional MI can only lower it): compared with ``CMIM(variant="fleuret")`` when
  tensorprob's CMIM has that parameter, else with the default CMIM (Brown's unbounded
  min_j I(X;C|X_j)) and marked as a different definition. CondMI (conditioning on the joint
  of all selected features) has no tensorprob counterpart and is not run.
* fast-select 0.3.0 (Numba): ``fast_select.mRMR(n_features_to_select=k, method="MID",
  backend="cpu").fit(X, y).top_features_`` (0-based indices; MID = relevance minus mean
  redundancy, i.e. MRMR; MI in bits; its ties go to the lower mean redundancy). It computes
  the full pairwise MI matrix first. Its first call compiles its Numba kernels: each child
  gets an empty ``NUMBA_CACHE_DIR``, so the first call always includes the JIT compilation
  (what a first session pays; later sessions load numba's on-disk cache).

**CPD peers.** The latent class model (CPD of the joint PMF) of MNIST-5k and of COIL-20 (the
papers' 1440 x 1024 file, 5 equal-width bins) with the label as a column (rank 20) and of chess
with its label (rank 10), fitted by EM from each library's own
initialization: ``tensorprob.fit_cpd`` with default settings (500 iterations at most,
relative tolerance 1e-6) and ``n_restarts`` 1, 4 and 8; pomegranate 1.1.0 and StepMix 3.0.0
with the same iteration cap and stopping rule. Columns: EM iterations, seconds per EM
iteration (median), seconds to the final model (warm median of ``--repeats`` fits; the first
fit separately) and the final mean log-likelihood per sample in nats, computed for every
library by ``tensorprob.CPDModel.log_prob`` on the same codes from the library's fitted
weights and factors (``own loglik``: the library's own figure of the same quantity).

* pomegranate: ``GeneralMixtureModel([Categorical(n_categories=L) for _ in range(rank)],
  random_state=seed)`` on an int64 tensor of the codes (L = the largest alphabet; the padding
  values of smaller alphabets keep probability 0, pseudocount 0 as tensorprob's alpha = 0).
  Its ``fit`` stops on an absolute improvement of the summed log-likelihood (``tol=0.1``), so
  the benchmark runs the same steps as ``fit`` (``_initialize``: 3 k-means iterations on the
  codes, then ``summarize`` / ``from_summaries`` per iteration) and stops by tensorprob's
  relative rule. float32 (pomegranate's default dtype).
* StepMix: ``StepMix(n_components=rank, measurement="categorical", max_iter=500, abs_tol=0,
  rel_tol=1e-6, n_init=1 or 4, random_state=seed, progress_bar=0).fit(codes)`` (integer codes,
  one-hot internally; probabilities clipped to [1e-15, 1 - 1e-15]). ``stepmix`` 3.0.0 installs
  from a wheel without changing torch, NumPy or scikit-learn.

Then pyttb's ``cp_apr`` on chess (rank 10, the sparse count tensor) against tensorprob, run
in this process as in ``bench_cpd.py`` (``--cp-apr-iters``; 0 skips it).

A full run takes hours on 2 cores: every peer that reaches ``--timeout`` on a large data set
(skfeature, ITMO_FS and mrmr_selection on MNIST-5k, COIL-20, the arcene shape and the 100k set)
costs that limit once per method, and the CPD fits on MNIST-5k take minutes each. Use
``--datasets``, ``--libraries`` and ``--no-cpd`` to split it (``--datasets ""``: the CPD sections
only); ``--tag`` keeps the parts apart. Peers that are not installed give "skipped" rows.
"""
from __future__ import annotations

import os
import sys
import types
import warnings
from typing import NamedTuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (
    Script,
    add_cp_apr_ref_args,
    forkserver,
    guarded,
    machine,
    markdown,
    measure_in_child,
    set_torch_threads,
    settle_threads,
    sync,
    warm_heap,
    warm_median,
)

SCRIPT = Script("peers", __doc__, default_threads=0)  # torch's default threads unless --threads

import numpy as np

import tensorprob as tp
from tensorprob.evaluation import selection_agreement

warnings.simplefilter("ignore")

# ------------------------------------------------------------------ data sets
MAT_DIR = os.environ.get("TENSORPROB_SKFEATURE_DATA", "/work/shared/data/skfeature")
MAT_FILES = {"madelon": "madelon.mat", "coil20": "COIL20.mat"}
PLANTED = {"planted-satimage": (6435, 36, 5, 6), "planted-arcene": (200, 10000, 5, 2),
           "planted-100k": (100000, 1000, 5, 10)}
DATASETS = ["chess", "optdigits", "madelon", "coil20", "mnist", "splice", "planted-satimage", "planted-arcene",
            "planted-100k"]
K_OF = {"planted-100k": 20}
# --quick: (rows, columns) of each data set (None: all)
QUICK = {"wine": (None, None), "chess": (800, None), "madelon": (300, 60), "coil20": (240, 120),
         "planted-arcene": (100, 400)}


class Skip(Exception):
    """A data set that cannot be loaded here (the message says why)."""


def load_codes(name: str, rows: int | None = None, cols: int | None = None, mat_dir: str = MAT_DIR, seed: int = 0):
    """``(codes, labels, description)`` of a data set of the table, or of any ``tensorprob.datasets`` name.

    ``rows``: a seeded random subset of that many rows; ``cols``: the first ``cols`` features (planted
    sets are drawn at that shape). Raises :class:`Skip` when a ``.mat`` file is missing.
    """
    if name in PLANTED:
        n, p, values, classes = PLANTED[name]
        n, p = rows or n, cols or p
        d = tp.datasets.make_planted((n, p, values, classes), random_state=seed)
        return d.X.astype(np.uint8), d.y.astype(np.int64), f"{name} ({n}x{p})"
    if name in MAT_FILES:
        path = os.path.join(mat_dir, MAT_FILES[name])
        if not os.path.exists(path):
            raise Skip(f"{name}: {path} not found (--mat-dir or $TENSORPROB_SKFEATURE_DATA)")
        from scipy.io import loadmat

        mat = loadmat(path)
        X, y = np.asarray(mat["X"], dtype=np.float64), np.asarray(mat["Y"]).ravel()
    else:
        X, y, _ = tp.datasets.load_dataset(name)
    n = len(y)
    if rows and rows < n:
        idx = np.sort(np.random.default_rng(seed).choice(n, rows, replace=False))
        X, y = (X.iloc[idx] if hasattr(X, "iloc") else X[idx]), np.asarray(y)[idx]
    if cols:
        X = X.iloc[:, :cols] if hasattr(X, "iloc") else X[:, :cols]
    codes = tp.encode(X, discretizer="uniform", n_bins=5).codes
    return codes, tp.encode_labels(y)[0].astype(np.int64), f"{name} ({codes.shape[0]}x{codes.shape[1]})"


def save_data(folder: str, name: str, X, y=None) -> str:
    """Write the codes (and labels) as ``.npy`` files for the child processes; returns the path stem."""
    stem = os.path.join(folder, name.replace("/", "_"))
    np.save(stem + "_X.npy", np.ascontiguousarray(X))
    if y is not None:
        np.save(stem + "_y.npy", np.asarray(y))
    return stem


# ------------------------------------------------------------------ libraries and pairs
class Pair(NamedTuple):
    library: str
    peer: str  # the peer's method, e.g. "MIM" or "BetaGamma(0.5,0)"
    method: str  # tensorprob's
    opts: tuple = ()  # tensorprob options as (name, value) items
    note: str = ""  # "" = same definition, else how they differ


MODULES = {"skfeature": "skfeature", "ITMO_FS": "ITMO_FS", "mrmr_selection": "mrmr", "FEAST": "fstoolbox",
           "fast-select": "fast_select", "pomegranate": "pomegranate", "StepMix": "stepmix"}
DISTRIBUTIONS = {"skfeature": "skfeature-chappers", "ITMO_FS": "ITMO_FS", "mrmr_selection": "mrmr_selection",
                 "FEAST": "fstoolbox", "fast-select": "fast-select", "pomegranate": "pomegranate",
                 "StepMix": "stepmix", "pyttb": "pyttb"}
SELECTOR_LIBRARIES = ("skfeature", "ITMO_FS", "mrmr_selection", "FEAST", "fast-select")
CPD_LIBRARIES = ("pomegranate", "StepMix")
CPD_RANKS = {"mnist": 20, "coil20": 20, "chess": 10}  # rank of the CPD fits per data set
CPD_LABELS = {"mnist": "MNIST-5k", "coil20": "COIL-20"}

_JMI_NOTE = "skfeature: fixed beta 0.8, gamma 0.5 instead of 1/|S|"
_DISR_NOTE = "skfeature divides the DISR sum by sum(1 + I(f; f_j))"
_ICAP_NOTE = "ITMO_FS clips the summed term, max(0, sum(...)), not sum(max(0, ...))"
FLEURET = "variant" in tp.CMIM().get_params()  # CMIM(variant="fleuret"): Fleuret's bounded CMIM
_FEAST_CMIM = (("variant", "fleuret"),) if FLEURET else ()
_FEAST_CMIM_NOTE = "" if FLEURET else ("FEAST: Fleuret's CMIM, min(I(X;C), min_j I(X;C|X_j)); this tensorprob's "
                                       "CMIM has no variant='fleuret': min_j I(X;C|X_j), unbounded")
_B5, _B8 = (("beta", 0.5),), (("beta", 0.8),)
PAIRS = [Pair("skfeature", peer, ours, opts, note) for peer, ours, opts, note in (
    ("MIM", "mim", (), ""), ("MIFS", "mifs", _B5, ""), ("MRMR", "mifs", _B8, ""), ("JMI", "jmi", (), _JMI_NOTE),
    ("CIFE", "cife", (), ""), ("CMIM", "cmim", (), ""), ("ICAP", "cmim", (), ""), ("DISR", "disr", (), _DISR_NOTE))]
PAIRS += [Pair("ITMO_FS", peer, ours, opts, _ICAP_NOTE if peer == "ICAP" else "") for peer, ours, opts in (
    ("MIM", "mim", ()), ("MIFS", "mifs", _B5), ("MRMR", "mrmr", ()), ("JMI", "jmi", ()), ("CIFE", "cife", ()),
    ("CMIM", "cmim", ()), ("ICAP", "icap", ()), ("MRI", "mri", ()))]
PAIRS += [Pair("mrmr_selection", "mrmr_classif", "mrmr", (), "F-statistic / Pearson mRMR, not MI")]
PAIRS += [Pair("FEAST", peer, ours, opts, note) for peer, ours, opts, note in (
    ("MIM", "mim", (), ""), ("mRMR_D", "mrmr", (), ""), ("JMI", "jmi", (), ""), ("DISR", "disr", (), ""),
    ("ICAP", "icap", (), ""), ("CMIM", "cmim", _FEAST_CMIM, _FEAST_CMIM_NOTE), ("BetaGamma(0.5,0)", "mifs", _B5, ""),
    ("BetaGamma(1,1)", "cife", (), ""))]
PAIRS += [Pair("fast-select", "mRMR(MID)", "mrmr", (), "")]
# skfeature's LCSI family as (beta, gamma), from its wrappers' source. The wrappers themselves
# (MIM.mim, MIFS.mifs, ...) return the rank transform of the picks even with mode="index" in
# skfeature-chappers 1.2.1 (they call lcsi in its default "rank" mode), so we call lcsi directly.
_LCSI = {"MIM": (0.0, 0.0), "MIFS": (0.5, 0.0), "MRMR": (0.8, 0.0), "JMI": (0.8, 0.5), "CIFE": (1.0, 1.0)}
_FEAST_NONE = 2**32 - 1  # FEAST's "no feature" (CondMI stops early)


def peer_threads(library: str, n: int) -> int:
    """Threads a peer runs with under the cap ``n``: FEAST is single-threaded C."""
    return 1 if library == "FEAST" else n


def installed(libraries) -> dict[str, str]:
    """``{library: version}`` of the libraries that import here (checked in a subprocess: ``fstoolbox``
    calls ``exit(1)`` at import when its C library is missing)."""
    import subprocess
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for lib in libraries:
        module = MODULES.get(lib, lib)
        ok = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0
        if ok:
            try:
                out[lib] = version(DISTRIBUTIONS.get(lib, lib))
            except PackageNotFoundError:
                out[lib] = "?"
    return out


def tp_label(method: str, opts) -> str:
    opts = dict(opts)
    return method.upper() + (f"({', '.join(f'{k}={v}' for k, v in opts.items())})" if opts else "")


# ------------------------------------------------------------------ what runs in the child processes
def cap_threads(n: int) -> None:
    """Cap BLAS / OpenMP (threadpoolctl) and torch at ``n`` threads in this process (tensorprob's
    selectors too: ``cpu_threads=None`` keeps torch's count instead of their default of one)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(int(n))
    set_torch_threads(n)
    warm_heap()  # the allocator of a process that once held a large array (every library alike)
    settle_threads()


def _feast_call(method: str):
    """``"BetaGamma(0.5,0)"`` -> ``("BetaGamma", (0.5, 0.0))``; ``"JMI"`` -> ``("JMI", ())``."""
    if "(" not in method:
        return method, ()
    name, args = method.rstrip(")").split("(")
    return name, tuple(float(a) for a in args.split(","))


def prepare_selection(library: str, method: str, opts: tuple, stem: str, k: int, threads: int,
                      device: str = "cpu"):
    """Set-up of one selection in the child (not timed); returns the timed call, which returns the picks."""
    X, y = np.load(stem + "_X.npy"), np.load(stem + "_y.npy")
    cap_threads(threads)
    if library == "tensorprob":
        kw = dict(opts)

        def run():
            sel = tp.select_features(X, y, k, method=method, device=device, **kw).selected_
            sync(device)
            return [int(i) for i in sel]
        return run
    if library == "FEAST":
        import logging

        logging.getLogger().setLevel(logging.ERROR)  # fstoolbox logs "failed to find libFSToolbox.so", then finds it
        import fstoolbox
        import fstoolbox.fstoolbox as wrapper

        # fstoolbox 0.0.2 finds the C function by its caller's name through inspect.stack(), twice per
        # call: that reads the source of every frame on the stack, about 12 ms each in this child (1 ms
        # in a shallow script), a cost of the wrapper, not of FEAST's C. The caller's name, read cheaply:
        wrapper.inspect = types.SimpleNamespace(
            stack=lambda: [None, (None, None, None, sys._getframe(2).f_code.co_name)])
        fn, args = _feast_call(method)
        fn = getattr(fstoolbox, fn)
        Xf, yf = np.asfortranarray(X, dtype=np.uint32), y.astype(np.uint32)

        def run():
            sel = [int(i) for i in fn(Xf, yf, k, *args)[0]]
            return sel[:sel.index(_FEAST_NONE)] if _FEAST_NONE in sel else sel
        return run
    if library == "fast-select":
        import tempfile

        os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="numba_", dir=os.path.dirname(stem))
        import numba
        from fast_select import mRMR

        numba.set_num_threads(threads)
        Xi = X.astype(np.int64)
        return lambda: [int(i) for i in mRMR(k, method="MID", backend="cpu").fit(Xi, y).top_features_]
    if library == "skfeature" and method in _LCSI:
        from skfeature.function.information_theoretical_based.LCSI import lcsi

        beta, gamma = _LCSI[method]
        Xf = X.astype(float)
        return lambda: _ints(lcsi(Xf, y, mode="index", beta=beta, gamma=gamma, n_selected_features=k), k)
    if library == "skfeature":
        import importlib

        fn = getattr(importlib.import_module(f"skfeature.function.information_theoretical_based.{method}"),
                     method.lower())
        Xf = X.astype(float)
        return lambda: _ints(fn(Xf, y, mode="index", n_selected_features=k), k)
    if library == "ITMO_FS":
        from ITMO_FS.filters.multivariate import MultivariateFilter

        Xi = X.astype(np.int64)

        def run():
            f = MultivariateFilter(method, k, beta=0.5 if method == "MIFS" else None)
            f.fit(Xi, y)
            return _ints(f.selected_features, k)
        return run
    if library == "mrmr_selection":
        import pandas as pd
        from mrmr import mrmr_classif

        # joblib's resource tracker (a separate process) cleans up the memmapping folders of the workers
        # and warns about each one when the child leaves: silence that warning, not the cleanup
        os.environ["PYTHONWARNINGS"] = "ignore::UserWarning"

        Xd, yd = pd.DataFrame(X.astype(float)), pd.Series(y)

        def run():
            return _ints(mrmr_classif(Xd, yd, K=k, n_jobs=threads, show_progress=False), k)

        def close():  # mrmr_classif runs joblib's loky workers: stop them before the child exits
            from joblib.externals.loky import get_reusable_executor

            get_reusable_executor().shutdown(wait=True)

        run.close = close
        return run
    raise ValueError(f"unknown library {library!r}")


def _ints(out, k: int) -> list[int]:
    return [int(i) for i in np.asarray(out).ravel()[:k]]


def _cpd_loglik(codes, weights, factors) -> float:
    """Mean log p(x) per sample (nats) by tensorprob's CPDModel.log_prob, from a library's fitted parameters."""
    import torch

    model = tp.CPDModel(torch.as_tensor(np.asarray(weights, dtype=np.float64)),
                        [torch.as_tensor(np.asarray(f, dtype=np.float64)) for f in factors], normalize=True)
    return float(model.log_prob(codes, codes=True).mean())


def _median_step(stamps) -> float:
    d = np.diff(np.asarray(stamps, dtype=float))
    return float(np.median(d)) if d.size else float("nan")


def prepare_cpd(library: str, restarts: int, stem: str, rank: int, threads: int, seed: int, max_iter: int | None,
                tol: float = 1e-6, device: str = "cpu"):
    """Set-up of one CPD fit in the child (not timed); the timed call fits, and its ``finish`` (not timed) scores.

    ``max_iter=None``: tensorprob's defaults (500 iterations, ``tol`` 1e-6) and the same for the peers.
    """
    import time

    import torch

    codes = np.load(stem + "_X.npy").astype(np.int64)
    cards = codes.max(axis=0) + 1
    n, d = codes.shape
    cap_threads(threads)
    iters = 500 if max_iter is None else max_iter
    if library == "tensorprob":
        kw = {} if max_iter is None else {"n_iter_max": max_iter}

        def run():
            stamps, t0 = [], time.perf_counter()

            def cb(it, ll):
                sync(device)
                stamps.append(time.perf_counter() - t0)

            m = tp.fit_cpd(codes, rank=rank, n_restarts=restarts, cardinalities=cards, random_state=seed,
                           device=device, callback=cb, **kw)
            stats = {"iterations": int(m.n_iter_), "s_per_iter": _median_step(stamps),
                     "converged": bool(m.converged_), "dtype": str(m.weights.dtype).replace("torch.", "")}
            return {"finish": lambda: {**stats, "loglik": float(m.log_prob(codes, codes=True).mean()),
                                       "own loglik": float(m.loglik_history_[-1])}}
        return run
    if library == "pomegranate":
        from pomegranate.distributions import Categorical
        from pomegranate.gmm import GeneralMixtureModel

        Xt = torch.as_tensor(codes)
        L = int(cards.max())

        def run():
            torch.manual_seed(seed)
            model = GeneralMixtureModel([Categorical(n_categories=L) for _ in range(rank)], max_iter=iters,
                                        random_state=seed)
            stamps = [time.perf_counter()]
            model._initialize(Xt)  # what fit() does first: 3 k-means iterations, one fit per cluster
            prev, n_it, converged = None, 0, False
            for _ in range(iters):  # fit()'s loop, stopped by tensorprob's relative rule
                stamps.append(time.perf_counter())
                ll = float(model.summarize(Xt)) / n
                if prev is not None and abs(ll - prev) <= tol * abs(prev):
                    converged = True
                    break
                model.from_summaries()
                n_it, prev = n_it + 1, ll
            model._reset_cache()
            stats = {"iterations": n_it, "s_per_iter": _median_step(stamps[1:]), "converged": converged,
                     "dtype": str(model.priors.dtype).replace("torch.", "")}

            def finish():
                weights = model.priors.detach().double().numpy()
                probs = [dist.probs.detach().double().numpy() for dist in model.distributions]  # (d, L) each
                factors = [np.stack([p[i, :cards[i]] for p in probs], axis=1) for i in range(d)]
                return {**stats, "loglik": _cpd_loglik(codes, weights, factors),
                        "own loglik": float(model.log_probability(Xt).mean())}
            return {"finish": finish}
        return run
    if library == "StepMix":
        from stepmix import StepMix

        def run():
            model = StepMix(n_components=rank, measurement="categorical", max_iter=iters, abs_tol=0.0, rel_tol=tol,
                            n_init=restarts, random_state=seed, progress_bar=0, verbose=0)
            stamps, e_step = [], model._e_step

            def counted(*a, **kw):
                stamps.append(time.perf_counter())
                return e_step(*a, **kw)

            model._e_step = counted  # one E-step per EM iteration, plus one per start after its loop
            model.fit(codes)
            stats = {"iterations": len(stamps) - restarts, "s_per_iter": _median_step(stamps),
                     "converged": bool(model.converged_), "dtype": "float64"}

            def finish():
                L = int(model._mm.parameters["max_n_outcomes"])
                pis = model._mm.parameters["pis"].reshape(rank, d, L)
                factors = [pis[:, i, :cards[i]].T for i in range(d)]
                return {**stats, "loglik": _cpd_loglik(codes, model.weights_, factors),
                        "own loglik": float(model.score(codes))}
            return {"finish": finish}
        return run
    raise ValueError(f"unknown library {library!r}")


# ------------------------------------------------------------------ the runner
def tp_configs(devices, tp_threads) -> list[tuple[str, int]]:
    """(device, threads) of tensorprob's rows: the CPU at every thread count, other devices once."""
    out = []
    for dev in devices:
        out += [(dev, t) for t in tp_threads] if dev == "cpu" else [(dev, max(tp_threads))]
    return out


def config_name(device: str, threads: int) -> str:
    return f"{threads}t" if device == "cpu" else device


#: A selection's warm calls go on until they add up to this many seconds (at least ``--repeats``
#: of them): a fresh child's first few sub-millisecond calls still warm up (``measure_in_child``).
WARM_SECONDS = 0.5


def measure_selection(library, method, opts, stem, k, threads, device, repeats, timeout, ctx) -> dict:
    """:func:`prepare_selection` in a child: ``first`` and warm-median ``s`` seconds, ``picks``, ``timing``, ``note``."""
    res = measure_in_child(prepare_selection, (library, method, opts, stem, k, threads, device), repeats, timeout,
                           ctx=ctx, min_seconds=WARM_SECONDS)
    secs, timing = warm_median(res)
    picks = res["value"] if isinstance(res["value"], list) else None
    return {"first s": res["first"], "s": secs, "timing": timing, "picks": picks, "note": res["note"]}


def selector_rows(data, libraries, *, repeats, timeout, tp_threads, n_peer, devices, peers, ctx, rows, tp_rows,
                  pairs=PAIRS):
    """tensorprob rows (``tp_rows``) and peer rows with agreement (``rows``) for one data set.

    ``data``: (label, stem of the saved codes, k). ``libraries``: {installed peer: version}. tensorprob runs
    every criterion that ``pairs`` names.
    """
    label, stem, k = data
    configs = tp_configs(devices, tp_threads)
    ref = ("cpu", min(tp_threads)) if "cpu" in devices else configs[0]
    ours: dict = {}
    for pair in pairs:
        key = (pair.method, pair.opts)
        if key in ours:
            continue
        ours[key] = {}
        for dev, t in configs:
            r = measure_selection("tensorprob", pair.method, pair.opts, stem, k, t, dev, repeats, timeout, ctx)
            ours[key][(dev, t)] = r
            tp_rows.append({"section": "tensorprob", "data": label, "k": k, "tensorprob": tp_label(*key),
                            "device": dev, "threads": t, "first s": r["first s"], "s": r["s"], "timing": r["timing"],
                            "first picks": " ".join(map(str, (r["picks"] or [])[:5])), "note": r["note"]})
        base = ours[key][ref]["picks"]
        if base is not None and any(r["picks"] not in (None, base) for r in ours[key].values()):
            for row in tp_rows[-len(configs):]:
                row["note"] = (row["note"] + "; " if row["note"] else "") + "picks differ across devices / threads"
    for pair in pairs if peers else []:
        ref_r = ours[(pair.method, pair.opts)]
        row = {"section": "peers", "data": label, "k": k, "peer": f"{pair.library} {pair.peer}",
               "tensorprob": tp_label(pair.method, pair.opts),
               "same definition": "no: " + pair.note if pair.note else "yes", "device": "cpu"}
        for t in tp_threads:
            row[f"tp {t}t s"] = ref_r[("cpu", t)]["s"] if ("cpu", t) in ref_r else float("nan")
        if pair.library not in libraries:
            rows.append({**row, "peer s": float("nan"), "note": f"skipped: {pair.library} not installed"})
            continue
        threads = peer_threads(pair.library, n_peer)
        r = measure_selection(pair.library, pair.peer, (), stem, k, threads, "cpu", repeats, timeout, ctx)
        row.update({"peer": f"{pair.library} {pair.peer}", "peer s": r["s"], "peer first s": r["first s"],
                    "peer threads": threads, "timing": r["timing"], "note": r["note"]})
        for t in tp_threads:
            row[f"speedup {t}t"] = r["s"] / row[f"tp {t}t s"]
        if r["picks"] is not None and ref_r[ref]["picks"] is not None:
            agree = selection_agreement(ref_r[ref]["picks"], r["picks"])
            row.update({"common prefix": f"{agree.common_prefix}/{k}", "overlap": agree.overlap})
        rows.append(row)
        print(f"  {label:<26} {row['peer']:<30} vs {row['tensorprob']:<18} "
              f"{row.get('common prefix', row['note'])}", flush=True)


def cpd_rows(name, stem, rank, libraries, *, restarts, stepmix_inits, threads, repeats, timeout, seed, max_iter,
             devices, peers, ctx, rows):
    """tensorprob's fit_cpd (every device, every number of restarts) and the CPD peers on one data set."""
    runs = [("tensorprob", r, dev) for dev in devices for r in restarts]
    if peers:
        runs += [("pomegranate", 1, "cpu")] + [("StepMix", r, "cpu") for r in stepmix_inits]
    for library, r, dev in runs:
        row = {"section": "cpd", "data": name, "rank": rank, "method": library, "restarts": r, "device": dev,
               "threads": threads}
        if library != "tensorprob" and library not in libraries:
            rows.append({**row, "note": f"skipped: {library} not installed"})
            continue
        res = measure_in_child(prepare_cpd, (library, r, stem, rank, threads, seed, max_iter, 1e-6, dev), repeats,
                               timeout, ctx=ctx)
        secs, timing = warm_median(res)
        row.update({"s_total": secs, "first s": res["first"], "timing": timing, "note": res["note"]})
        if isinstance(res["value"], dict):
            row.update(res["value"])
        rows.append(row)
        print(f"  {name:<24} {library:<12} restarts {r}: {row.get('loglik', row['note'])}", flush=True)


def chess_cp_apr_rows(maxiters, devices, peers, repeats, cp_apr_ref):
    """pyttb cp_apr on chess against tensorprob, in this process (``bench_cpd.chess_vs_cp_apr``)."""
    from bench_cpd import chess_vs_cp_apr

    rows = []
    chess_vs_cp_apr(10, rows, maxiters, devices=devices, peers=peers, repeats=repeats, cp_apr_ref=cp_apr_ref)
    return rows


def warm(device):
    """Tiny fits on a CUDA device before the in-process cp_apr section (the children warm up on their own)."""
    from bench_cpd import warm as cpd_warm

    cpd_warm(device)


def int_list(text: str) -> list[int]:
    return [int(v) for v in str(text).split(",") if v.strip()]


def main(argv=None):
    ap = SCRIPT.bench_parser("small subsets of wine, chess, madelon, COIL-20 and an arcene-shaped planted set, "
                             "k = 10, one warm run, short CPD fits on subsets",
                             repeats_help="warm runs per figure, median reported (default 3; 1 with --quick)")
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds a selector's first call, and each warm call, may take (default 60)")
    ap.add_argument("--cpd-timeout", type=float, default=1800.0, help="seconds per CPD fit (default 1800)")
    ap.add_argument("--datasets", help=f"comma-separated data sets (default {','.join(DATASETS)}; any "
                                       "tensorprob.datasets name works)")
    ap.add_argument("--libraries", help="comma-separated peers to run (default all: "
                                        f"{','.join(SELECTOR_LIBRARIES + CPD_LIBRARIES)})")
    ap.add_argument("--k", type=int, default=50, help="features to select (default 50; 20 on planted-100k)")
    ap.add_argument("--tp-threads", default="1,2", help="tensorprob thread counts on the CPU (default 1,2)")
    ap.add_argument("--peer-threads", type=int, default=None,
                    help="thread cap of the peers (default: the largest of --tp-threads); FEAST uses one")
    ap.add_argument("--mat-dir", default=MAT_DIR, help=f"folder of madelon.mat and COIL20.mat (default {MAT_DIR})")
    ap.add_argument("--no-cpd", action="store_true", help="skip the CPD section (tensorprob vs pomegranate, StepMix)")
    ap.add_argument("--restarts", default="1,4,8", help="tensorprob fit_cpd n_restarts values (default 1,4,8)")
    ap.add_argument("--cpd-datasets", default="mnist,chess,coil20",
                    help=f"data sets of the CPD section (default mnist,chess,coil20; any of {','.join(CPD_RANKS)}); "
                         "COIL-20 is the papers' .mat file, read from --mat-dir "
                         "(5 equal-width bins)")
    ap.add_argument("--stepmix-inits", default="1,4", help="StepMix n_init values (default 1,4)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the planted sets, subsets and CPD starts")
    ap.add_argument("--cp-apr-iters", type=int, default=200,
                    help="cp_apr outer iterations on chess (0: skip the chess cp_apr section)")
    add_cp_apr_ref_args(ap)
    wanted = set(SELECTOR_LIBRARIES + CPD_LIBRARIES)
    libraries: dict[str, str] = {}

    def note(args):
        if args.libraries:
            wanted.intersection_update(s.strip() for s in args.libraries.split(","))
        if not args.no_peers:
            libraries.update(installed([lib for lib in (*SELECTOR_LIBRARIES, *CPD_LIBRARIES) if lib in wanted]
                                       + (["pyttb"] if args.cp_apr_iters else [])))
        found = ", ".join(f"{lib} {v}" for lib, v in libraries.items()) or "none"
        return f"\npeers installed: {'not run (--no-peers)' if args.no_peers else found}"

    args = SCRIPT.start(ap, argv, warm, note)
    devices, peers, q = args.device_list, not args.no_peers, args.quick
    repeats = args.repeats if args.repeats is not None else (1 if q else 3)
    tp_threads = int_list(args.tp_threads)
    n_peer = args.peer_threads or max(tp_threads)
    names = ([n.strip() for n in args.datasets.split(",") if n.strip()] if args.datasets is not None else
             list(QUICK) if q else DATASETS)  # --datasets "": the CPD sections only
    k_default = 10 if q else args.k
    ctx = forkserver()
    rows, tp_rows, cpd, chess, failed = [], [], [], [], []
    pairs = [p for p in PAIRS if p.library in wanted]

    def save():
        SCRIPT.save(rows + tp_rows + cpd + chess)

    import tempfile

    with tempfile.TemporaryDirectory(prefix="bench_peers_") as tmp:
        for name in names:
            rows_, cols_ = QUICK.get(name, (None, None)) if q else (None, None)
            try:
                X, y, label = load_codes(name, rows_, cols_, args.mat_dir, args.seed)
            except Skip as exc:
                print(f"skipping {exc}", flush=True)
                continue
            k = min(K_OF.get(name, k_default) if not q else k_default, X.shape[1])
            stem = save_data(tmp, name, X, y)
            print(f"{label}: k = {k}", flush=True)
            guarded("selectors", lambda: selector_rows(
                (label, stem, k), libraries, repeats=repeats, timeout=args.timeout, tp_threads=tp_threads,
                n_peer=n_peer, devices=devices, peers=peers, ctx=ctx, rows=rows, tp_rows=tp_rows, pairs=pairs),
                rows, failed, data=label)
            save()
        if not args.no_cpd:
            from tensorprob.cpd._fit import prepare_data

            for name in [v for v in args.cpd_datasets.split(",") if v.strip()]:
                rank = CPD_RANKS[name]

                def one(name=name, rank=rank):
                    try:
                        Xc, yc, _ = tp.datasets.load_dataset(name, data_home=args.mat_dir)
                    except ValueError as exc:  # the papers' .mat sets live outside the package
                        cpd.append({"section": "cpd", "data": name, "rank": rank, "note": f"skipped: {exc}"[:200]})
                        return
                    if q:
                        idx = np.sort(np.random.default_rng(args.seed).choice(len(yc), 500, replace=False))
                        Xc, yc = (Xc.iloc[idx] if hasattr(Xc, "iloc") else Xc[idx]), np.asarray(yc)[idx]
                    codes = prepare_data(Xc, yc).codes  # features and the label as the last column
                    label = f"{CPD_LABELS.get(name, name)} + label ({codes.shape[0]}x{codes.shape[1]})"
                    cpd_rows(label, save_data(tmp, f"cpd_{name}", codes), rank, libraries,
                             restarts=int_list(args.restarts), stepmix_inits=int_list(args.stepmix_inits),
                             threads=n_peer, repeats=repeats, timeout=args.cpd_timeout, seed=args.seed,
                             max_iter=30 if q else None, devices=devices, peers=peers, ctx=ctx, rows=cpd)

                guarded("cpd", one, cpd, failed, data=name)
                save()
    if args.cp_apr_iters:
        guarded("chess", lambda: chess.extend(chess_cp_apr_rows(
            20 if q else args.cp_apr_iters, devices, peers, args.repeats,
            (args.cp_apr_loglik, args.cp_apr_seconds))), chess, failed)
        save()

    tt = [f"{t}t" for t in tp_threads]
    cols = (["data", "k", "peer", "tensorprob", "same definition", "common prefix", "overlap"]
            + [f"tp {t} s" for t in tt] + ["peer s", "peer first s", "peer threads"] + [f"speedup {t}" for t in tt]
            + ["note"])
    table = markdown(rows, cols) if peers else "(peers not run: --no-peers)"
    configs = [config_name(d, t) for d, t in tp_configs(devices, tp_threads)]
    wide: dict = {}
    for r in tp_rows:
        if "tensorprob" not in r:
            continue
        w = wide.setdefault((r["data"], r["k"], r["tensorprob"]), {"data": r["data"], "k": r["k"],
                                                                   "tensorprob": r["tensorprob"], "note": ""})
        c = config_name(r["device"], r["threads"])
        w[f"{c} first s"], w[f"{c} s"] = r["first s"], r["s"]
        if r.get("note") and r["note"] not in w["note"]:
            w["note"] = (w["note"] + "; " if w["note"] else "") + r["note"]
    tp_cols = ["data", "k", "tensorprob"] + [f"{c} s" for c in configs] + [f"{c} first s" for c in configs] + ["note"]
    tp_table = markdown(list(wide.values()), tp_cols)
    cpd_cols = ["data", "rank", "method", "restarts", "device", "dtype", "threads", "iterations", "converged",
                "s_per_iter", "s_total", "first s", "loglik", "own loglik", "note"]
    cpd_table = markdown(cpd, cpd_cols) if cpd else ""
    chess_cols = ["data", "method", "device", "iterations", "s_total", "s_per_iter", "loglik", "s_to_cp_apr_loglik",
                  "speedup_vs_this", "timing", "note"]
    chess_table = markdown(chess, chess_cols) if chess else ""
    head = (f"machine: {machine()}\n\ncommit: {SCRIPT.commit}\n\npeers: "
            f"{', '.join(f'{lib} {v}' for lib, v in libraries.items()) or 'none'}; k = {k_default} "
            f"({', '.join(f'{n}: {v}' for n, v in K_OF.items())}); warm runs per figure: {repeats} (median; a "
            f"selection's warm calls go on until they fill {WARM_SECONDS:g} s); "
            f"time limit {args.timeout:g} s per call (CPD fits {args.cpd_timeout:g} s); tensorprob threads "
            f"{args.tp_threads}, peer thread cap {n_peer} (FEAST: 1)"
            + ("\n\n**Quick smoke run:** small subsets, one warm run; not the tables." if q else ""))
    text = (head + (f"\n\n## Selectors against peers\n\n{table}\n" if rows else "")
            + (f"\n## tensorprob selectors (warm median, first call)\n\n{tp_table}\n" if wide else "\n")
            + (f"\n## CPD: tensorprob against pomegranate and StepMix\n\n{cpd_table}\n"
                                   if cpd else "")
            + (f"\n## CPD: chess against pyttb cp_apr\n\n{chess_table}\n" if chess else ""))
    SCRIPT.publish(text)
    SCRIPT.done(failed)


if __name__ == "__main__":
    main()
