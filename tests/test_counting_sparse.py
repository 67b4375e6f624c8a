"""Tables of sparse codes counted from their stored entries, against dense counts of the same codes."""
import numpy as np
import pytest
import scipy.sparse as sp
import torch

from tensorprob.counting import joint_table
from tensorprob.counting._sparse import SparseCodes, sparse_class_table, sparse_pair_tables


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
def test_class_and_pair_tables_equal_dense_counts(fmt, card, C):
    X = _sparse_codes(card * 10 + C, card=card)
    y = np.random.default_rng(C).integers(0, C, X.shape[0])
    S = getattr(sp, f"{fmt}_matrix")(X.astype(np.int8))
    codes = SparseCodes.from_scipy(S)
    assert codes.shape == X.shape and codes.nnz == int((X != 0).sum())
    dense = torch.from_numpy(X)
    CT = sparse_class_table(codes, card, y, C)
    ref = joint_table(dense, card, torch.from_numpy(y), C, dtype=torch.float64, complete=True)
    np.testing.assert_array_equal(CT, ref.numpy()[:, :, :, 0])
    for j in (0, 3, 5, 6, 11):  # 5 and 6 are nonzero in most rows: the rows off their top code are read
        card_j = int(X[:, j].max()) + 1
        T = sparse_pair_tables(codes, card, j, card_j, y, C, CT)
        ref = joint_table(dense, card, dense[:, j], card_j, torch.from_numpy(y), C, complete=True)
        np.testing.assert_array_equal(T, ref.numpy(), err_msg=f"pick {j}")
        # a block of candidates
        Tb = sparse_pair_tables(codes, card, j, card_j, y, C, CT, cols=(4, 17))
        np.testing.assert_array_equal(Tb, ref.numpy()[4:17])


def test_stored_zeros_and_duplicates_count_as_their_values():
    """An explicitly stored 0 is code 0; duplicate COO entries are summed (SciPy's meaning)."""
    X = _sparse_codes(7, card=3)
    y = np.random.default_rng(0).integers(0, 2, X.shape[0])
    r, c = np.nonzero(X)
    extra_r, extra_c = np.array([0, 1, 2]), np.array([3, 3, 4])  # stored zeros
    coo = sp.coo_matrix((np.concatenate([X[r, c], np.zeros(3, np.int64)]),
                         (np.concatenate([r, extra_r]), np.concatenate([c, extra_c]))), shape=X.shape)
    codes = SparseCodes.from_scipy(coo)
    assert codes.nnz == r.size
    CT = sparse_class_table(codes, 3, y, 2)
    T = sparse_pair_tables(codes, 3, 4, 3, y, 2, CT)
    ref = joint_table(torch.from_numpy(X), 3, torch.from_numpy(X[:, 4]), 3, torch.from_numpy(y), 2, complete=True)
    np.testing.assert_array_equal(T, ref.numpy())
    with pytest.raises(TypeError, match="scipy.sparse"):
        SparseCodes.from_scipy(X)


def test_a_step_reads_only_the_rows_off_the_picks_top_value():
    """The pair tables of a rare pick read the stored entries of its few rows only: the same
    tables whatever the entries of the other rows (here scrambled where the pick is 0), given
    their class table."""
    X = _sparse_codes(3, M=500, N=30, card=3, density=0.3)
    y = np.random.default_rng(1).integers(0, 3, 500)
    j = 2
    X[:, j] = 0
    X[[10, 20, 30], j] = [1, 2, 1]
    codes = SparseCodes.from_scipy(sp.csr_matrix(X))
    CT = sparse_class_table(codes, 3, y, 3)
    other = X.copy()
    off = X[:, j] == 0
    other[off] = np.random.default_rng(9).permutation(X[off].ravel()).reshape(X[off].shape)
    other[:, j] = X[:, j]
    codes2 = SparseCodes.from_scipy(sp.csr_matrix(other))
    T2 = sparse_pair_tables(codes2, 3, j, 3, y, 3, sparse_class_table(codes2, 3, y, 3))
    ref2 = joint_table(torch.from_numpy(other), 3, torch.from_numpy(other[:, j]), 3, torch.from_numpy(y), 3,
                       complete=True)
    np.testing.assert_array_equal(T2, ref2.numpy())
    T = sparse_pair_tables(codes, 3, j, 3, y, 3, CT)
    # the cells with x_j != 0 are the same in both: only the pick's rows were read for them
    np.testing.assert_array_equal(T[:, :, 1:, :], T2[:, :, 1:, :])


def test_listed_pairs_equal_the_rows_of_the_pick_tables():
    """CMIM's listed (candidate, selected) pairs: each pair's table is the row of its pick's tables."""
    from tensorprob.counting._sparse import sparse_listed_pair_tables

    X = _sparse_codes(11, card=4)
    y = np.random.default_rng(2).integers(0, 3, X.shape[0])
    cards = X.max(0) + 1
    codes = SparseCodes.from_scipy(sp.csr_matrix(X))
    CT = sparse_class_table(codes, 4, y, 3)
    rng = np.random.default_rng(4)
    sel = rng.choice([0, 5, 6, 9], 25)
    cand = rng.integers(0, X.shape[1], 25)
    T = sparse_listed_pair_tables(codes, 4, cand, sel, cards, y, 3, CT)
    for i in range(25):
        ref = joint_table(torch.from_numpy(X[:, [cand[i]]]), 4, torch.from_numpy(X[:, sel[i]]), 4,
                          torch.from_numpy(y), 3, complete=True)
        np.testing.assert_array_equal(T[i], ref.numpy()[0], err_msg=f"pair {i}")
    with pytest.raises(ValueError, match="one length"):
        sparse_listed_pair_tables(codes, 4, cand, sel[:3], cards, y, 3, CT)
