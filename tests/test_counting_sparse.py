"""The class table of sparse codes counted from their stored entries, against dense counts of the same codes."""
import numpy as np
import pytest
import scipy.sparse as sp
import torch

from tensorprob.counting import joint_table
from tensorprob.counting._sparse import SparseRows, sparse_class_table


def _sparse_codes(seed, M=300, N=40, card=4, density=0.1):
    """Dense codes mostly 0, with some all-zero rows and columns, and their sparse matrix."""
    rng = np.random.default_rng(seed)
    X = np.where(rng.random((M, N)) < density, rng.integers(1, card, (M, N)), 0)
    X[:, 3] = 0  # a column never stored
    X[7] = 0  # a row with no entry
    X[:, 5] = np.where(rng.random(M) < 0.9, 1, 0)  # a dense column
    X[:, 6] = np.where(rng.random(M) < 0.8, card - 1, rng.integers(0, card, M))  # mostly its top code
    return X


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("card, C", [(2, 2), (4, 3), (5, 1)])
def test_class_table_equals_dense_counts(fmt, card, C):
    X = _sparse_codes(card * 10 + C, card=card)
    y = np.random.default_rng(C).integers(0, C, X.shape[0])
    rows = SparseRows(getattr(sp, f"{fmt}_matrix")(X.astype(np.int8)), y, None, block_rows=64)
    assert rows.nnz == int((X != 0).sum()) and rows.complete
    ref = joint_table(torch.from_numpy(X), card, torch.from_numpy(y), C, dtype=torch.float64, complete=True)
    np.testing.assert_array_equal(sparse_class_table(rows.csc, card, y, C), ref.numpy()[:, :, :, 0])


def test_class_table_weights_and_missing_entries():
    """Weighted sums, and a stored -1 (missing) leaves its row out of its column's table, code 0 included."""
    X = _sparse_codes(3, card=4)
    rng = np.random.default_rng(1)
    X[rng.integers(0, X.shape[0], 30), rng.integers(0, X.shape[1], 30)] = -1
    y = rng.integers(0, 3, X.shape[0])
    w = rng.uniform(0.1, 3.0, X.shape[0])
    rows = SparseRows(sp.csr_matrix(X), y, w, block_rows=64)
    assert not rows.complete
    ref = joint_table(torch.from_numpy(X), 4, torch.from_numpy(y), 3, weights=torch.from_numpy(w),
                      dtype=torch.float64, complete=False)
    np.testing.assert_allclose(sparse_class_table(rows.csc, 4, y, 3, w), ref.numpy()[:, :, :, 0], rtol=1e-12)


def test_stored_zeros_and_duplicates_count_as_their_values():
    """An explicitly stored 0 is code 0; duplicate COO entries are summed (SciPy's meaning)."""
    X = _sparse_codes(7, card=3)
    y = np.random.default_rng(0).integers(0, 2, X.shape[0])
    r, c = np.nonzero(X)
    extra_r, extra_c = np.array([0, 1, 2]), np.array([3, 3, 4])  # stored zeros
    coo = sp.coo_matrix((np.concatenate([X[r, c], np.zeros(3, np.int64)]),
                         (np.concatenate([r, extra_r]), np.concatenate([c, extra_c]))), shape=X.shape)
    rows = SparseRows(coo, y, None, block_rows=64)
    assert rows.nnz == r.size
    ref = joint_table(torch.from_numpy(X), 3, torch.from_numpy(y), 2, dtype=torch.float64, complete=True)
    np.testing.assert_array_equal(sparse_class_table(rows.csc, 3, y, 2), ref.numpy()[:, :, :, 0])


@pytest.mark.parametrize("card, C, A", [(2, 2, 2), (4, 3, 3), (5, 1, 4)])
@pytest.mark.parametrize("weighted", [False, True])
def test_baseline_cells_are_the_dense_tables(card, C, A, weighted):
    """The cells the distributed baseline sums over the ranks: every (x_c, g) cell, off-baseline entries and rest,
    cut in blocks of candidates; summed over two halves of the rows they are the whole rows' cells, and their
    c log c sums are those of one process."""
    from tensorprob.counting._baseline import (
        OffBaseline,
        _reduced_entropy_sums,
        baseline_cells,
        baseline_entropy_sums,
    )

    X = _sparse_codes(card + 7 * C, card=card)
    M = X.shape[0]
    rng = np.random.default_rng(card)
    g = rng.integers(0, A, M) * C + rng.integers(0, C, M)
    w = rng.uniform(0.2, 2.0, M) if weighted else None
    off = OffBaseline.of_sparse(sp.csc_matrix(X.astype(np.int8)), card)
    cols = np.array([0, 3, 5, 6, 9, 11])
    got = np.concatenate([c for _, _, c in baseline_cells(off, cols, g, A * C, card, w, max_cells=card * A * C * 4)])
    want = np.zeros((cols.size, card, A * C))
    for i, j in enumerate(cols):
        np.add.at(want[i], (X[:, j], g), 1.0 if w is None else w)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # two "ranks", each half of the rows: their cells add up to the whole rows' cells
    halves = [slice(0, 130), slice(130, M)]
    parts = [np.concatenate([c for _, _, c in baseline_cells(OffBaseline.of_sparse(sp.csc_matrix(X[h].astype(np.int8)),
                                                                                    card), cols, g[h], A * C, card,
                                                                 None if w is None else w[h])]) for h in halves]
    np.testing.assert_allclose(parts[0] + parts[1], want, rtol=1e-12, atol=1e-12)
    full, margin = _reduced_entropy_sums(lambda T: T, off, cols, g, A * C, C, card, margin=True, full=True, weights=w)
    ref_full, ref_margin = baseline_entropy_sums(off, cols, g, A * C, C, card, M, True, full=True, weights=w)
    np.testing.assert_allclose(full, ref_full, rtol=1e-12)
    np.testing.assert_allclose(margin, ref_margin, rtol=1e-12)
