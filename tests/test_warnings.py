"""Library warnings fail the test run (issue 42 item 8); the causes found in the suite are fixed."""
import warnings

import numpy as np
import pytest

import tensorprob as tp


def test_a_warning_raised_in_tensorprob_code_fails_the_run():
    # pyproject's filterwarnings has "error::Warning:tensorprob": a warning attributed to a tensorprob
    # module (a deprecated torch call there, a read-only array given to torch) is an error
    code = compile("import warnings\nwarnings.warn('resized output', DeprecationWarning)", "<probe>", "exec")
    with pytest.raises(DeprecationWarning, match="resized output"):
        exec(code, {"__name__": "tensorprob.counting._probe"})
    # the library's warnings to its callers point at the caller and stay warnings
    with pytest.warns(UserWarning, match="to the caller"):
        exec(compile("import warnings\nwarnings.warn('to the caller')", "<probe>", "exec"), {"__name__": "user_code"})


def test_gmi_takes_a_read_only_array_without_a_warning(device, dtype):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 5))
    y = (X[:, 0] > 0).astype(int)
    X.setflags(write=False)  # e.g. a memory-mapped file, or a pandas frame's values
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch warned "The given NumPy array is not writable"
        a = tp.GMI(k=3, random_state=0, device=device, dtype=dtype).fit(X, y)
        b = tp.PairwiseDp(k=3, device=device, dtype=dtype).fit(X, y)
    assert len(a.selected_) == 3 and len(b.selected_) == 3
    np.testing.assert_array_equal(a.selected_, tp.GMI(k=3, random_state=0, device=device, dtype=dtype)
                                  .fit(X.copy(), y).selected_)
