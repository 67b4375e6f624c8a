"""Summaries of numeric columns: what integrality and the cut points of a column depend on.

A :class:`NumberSummary` of a block of numeric columns holds, per column, its missing count,
the range of its finite values, its infinite entries, whether every finite value is whole,
and, when asked, a :class:`Sample` of its finite values (with their labels) for
equal-frequency and MDL cut points. Summaries of row chunks (or of the rows of several
processes) combine into the summary of all the rows: counts add, ranges widen, samples merge.

A single summary keeps every finite value as its sample. A combined one keeps at most
``cap`` of them: the rows whose key (a fixed hash of the global row index, :func:`row_keys`)
is smallest, the same rows whatever the chunks or processes the rows came in, so that
streamed, distributed and in-memory fits of the same rows in the same order cut alike.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

#: Largest number of finite values per column that a combined summary keeps for equal-frequency and
#: MDL cut points (scikit-learn's KBinsDiscretizer subsamples as many by default).
SAMPLE_ROWS = 200_000

_BLOCK = 1 << 20  # entries per block of the statistics passes (a few float64 temporaries of this size)


def row_keys(rows: np.ndarray) -> np.ndarray:
    """A fixed pseudo-random uint64 key of every global row index (splitmix64, a bijection: no ties)."""
    z = np.asarray(rows).astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


class Sample(NamedTuple):
    """Finite values of one column with their global row indices (sorted) and, for MDL, their labels."""

    rows: np.ndarray  # int64
    values: np.ndarray  # float64
    labels: np.ndarray | None

    def merged(self, other: Sample, cap: int | None) -> Sample:
        """The sample of both: every value, or the ``cap`` values of smallest :func:`row_keys`, in row order."""
        rows = np.concatenate([self.rows, other.rows])
        values = np.concatenate([self.values, other.values])
        labels = None if self.labels is None or other.labels is None else _concat_labels(self.labels, other.labels)
        if cap is not None and rows.size > cap:
            keep = np.argpartition(row_keys(rows), cap - 1)[:cap]
        else:
            keep = np.arange(rows.size)
        keep = keep[np.argsort(rows[keep], kind="stable")]
        return Sample(rows[keep], values[keep], None if labels is None else labels[keep])


def _concat_labels(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    try:
        return np.concatenate([a, b])
    except TypeError:  # labels of types that NumPy cannot put in one array
        return np.concatenate([a.astype(object), b.astype(object)])


@dataclass
class NumberSummary:
    """Per column of a block of numeric columns: missing count, finite range, infinite entries, integrality, sample.

    Attributes
    ----------
    n_missing : ndarray of int64, shape (n,)
    lo, hi : ndarray of float64, shape (n,)
        Smallest and largest finite value (``+inf`` / ``-inf`` when the column has none).
    n_inf : ndarray of int64, shape (n,)
        Entries equal to ``+inf`` or ``-inf``.
    integral : ndarray of bool, shape (n,)
        Every finite value is a whole number.
    samples : list of Sample, or None
        Finite values for equal-frequency and MDL cut points; None when not asked for.
    """

    n_missing: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    n_inf: np.ndarray
    integral: np.ndarray
    samples: list | None = None

    @classmethod
    def of(cls, V: np.ndarray, y: Any = None, *, sample: bool = False) -> NumberSummary:
        """Summary of the columns of ``V`` (M, n): floats with NaN for missing entries, or integers.

        With ``sample`` every finite value is kept, with its row (counted from 0) and its label
        from ``y`` when given.
        """
        M, n = V.shape
        if V.dtype.kind in "iub":
            lo = V.min(0).astype(np.float64) if M else np.full(n, np.inf)
            hi = V.max(0).astype(np.float64) if M else np.full(n, -np.inf)
            out = cls(np.zeros(n, np.int64), lo, hi, np.zeros(n, np.int64), np.ones(n, bool))
        else:
            out = cls(np.zeros(n, np.int64), np.full(n, np.inf), np.full(n, -np.inf), np.zeros(n, np.int64),
                      np.ones(n, bool))
            step = max(1, _BLOCK // max(1, n))
            with np.errstate(invalid="ignore"):
                for a in range(0, M, step):
                    B = V[a:a + step]
                    fin = np.isfinite(B)
                    if fin.all():  # the common block: no missing or infinite entry
                        np.minimum(out.lo, B.min(0), out=out.lo)
                        np.maximum(out.hi, B.max(0), out=out.hi)
                        out.integral &= (B == np.round(B)).all(0)
                        continue
                    nan = np.isnan(B)
                    out.n_missing += nan.sum(0)
                    out.n_inf += (~fin & ~nan).sum(0)
                    np.minimum(out.lo, np.where(fin, B, np.inf).min(0), out=out.lo)
                    np.maximum(out.hi, np.where(fin, B, -np.inf).max(0), out=out.hi)
                    out.integral &= ((B == np.round(B)) | ~fin).all(0)
        if sample:
            labels = None if y is None else np.asarray(y)
            rows = np.arange(M, dtype=np.int64)
            out.samples = []
            for j in range(n):
                col = V[:, j]
                ok = slice(None) if col.dtype.kind in "iub" else np.isfinite(col)
                out.samples.append(Sample(rows[ok], col[ok].astype(np.float64),
                                          None if labels is None else labels[ok]))
        return out

    def combine(self, other: NumberSummary, cap: int | None = SAMPLE_ROWS, shift: int = 0) -> NumberSummary:
        """The summary of the rows of both (samples merged, at most ``cap`` values each).

        ``shift``: the number of rows before ``other``'s first (its sample's rows are counted
        from 0), so that the rows of a combined sample are global row indices.
        """
        samples = None
        if self.samples is not None and other.samples is not None:
            samples = [a.merged(b._replace(rows=b.rows + shift) if shift else b, cap)
                       for a, b in zip(self.samples, other.samples)]
        return NumberSummary(self.n_missing + other.n_missing, np.minimum(self.lo, other.lo),
                             np.maximum(self.hi, other.hi), self.n_inf + other.n_inf,
                             self.integral & other.integral, samples)

    def take(self, cols: Any) -> NumberSummary:
        """The summary of the columns ``cols`` only."""
        cols = np.asarray(cols, dtype=np.int64)
        return NumberSummary(self.n_missing[cols], self.lo[cols], self.hi[cols], self.n_inf[cols],
                             self.integral[cols], None if self.samples is None else [self.samples[j] for j in cols])

    @classmethod
    def stack(cls, parts: list[NumberSummary]) -> NumberSummary:
        """One summary of the columns of several summaries, side by side."""
        samples = None if any(p.samples is None for p in parts) else [s for p in parts for s in p.samples]
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("n_missing", "lo", "hi", "n_inf",
                                                                             "integral")), samples)


def sample_cap(n_columns: int, budget: int) -> int:
    """Values per column a combined summary keeps: :data:`SAMPLE_ROWS`, fewer when the samples of
    ``n_columns`` columns (value, row, label: 24 bytes each) would exceed ``budget`` bytes."""
    return int(max(1024, min(SAMPLE_ROWS, budget // (24 * max(1, n_columns)))))
