"""The one greedy forward-selection driver shared by every greedy method.

A *criterion* keeps per-candidate (and, where needed, per-sample) state that grows
incrementally: adding a feature costs the counts of that feature against all candidates
(one bincount) and a few vector operations, never a recomputation over the selected set.

Criterion protocol (see :class:`Criterion`):

- ``start(data)``: receive the :class:`tensorprob.counting.SelectionData`.
- ``first_scores()``: scores of the first pick; default ``I(X_m; C)`` for every feature.
- ``scores()``: the criterion of every feature given the current selection, shape (N,).
- ``accept(j, score)``: called with the best candidate (and its score) before it is added;
  returning False selects nothing this iteration (the VI restart rule uses it to drop its
  chain).
- ``update(j)``: add feature j to the criterion's state.
- ``pending()`` / ``exact_scores(first)``: a check the last scores left on the device (a 0-d
  bool tensor, or None), read together with the pick; when it is set the driver picks again
  from the exact scores (the VI bounds defer their underflow test this way).
- ``pair_needed``: the pair quantities the criterion reads at each step (names of
  :class:`~tensorprob.counting.TableInformation`'s quantities), which the data's planner
  counts (class-free tables when none involves the class).
- ``state_bytes(n_rows, n_features, n_classes, dtype)``: the per-sample state the criterion keeps
  for that many rows (0 by default); a batch of selections is split into groups whose states
  fit ``memory_budget`` together.
- ``joint(criteria, batch)`` (class method): how :func:`greedy_forward_batched` drives the
  started criteria of a batch: by default one member at a time (:class:`Separately`); a
  criterion may return an object that scores and updates all members with shared tensor ops.

The driver masks selected features, breaks ties to the lowest index (a value within
:func:`tie_tolerance` relative of the maximum counts as tied, as a sequential scan with a
strict ``>`` would do), and records the criterion value of each pick. A column without a
single observed entry (see :attr:`tensorprob.counting.SelectionData.unobserved`) is held
back until every other column is selected: it scores 0 and carries no information, so it
never wins a tie (or a contest with negative scores) against an observed column. On a GPU a step
costs one device-to-host transfer (the pick, its value and any pending check); everything else
stays queued.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .._config import progress_bar
from ..counting import SelectionData


class Criterion:
    """Base criterion: scores by relevance ``I(X_m; C)``; subclasses keep incremental state.

    ``name`` labels the progress bar of the greedy driver.
    """

    name = "mim"
    #: The quantities of the (x_m, x_j, class) tables that ``update`` reads.
    pair_needed: tuple[str, ...] = ("mi_xa_b",)

    def start(self, data: SelectionData) -> None:
        self.data = data
        self.selected: list[int] = []

    def first_scores(self) -> torch.Tensor:
        return self.data.relevance

    def scores(self) -> torch.Tensor:
        return self.data.relevance

    def accept(self, j: int, score: float) -> bool:
        return True

    def update(self, j: int) -> None:
        self.selected.append(j)

    def pending(self) -> torch.Tensor | None:
        """A check left on the device by the last scores: a 0-d bool tensor, or None (nothing to check).

        A criterion whose fast scores can be inexact on rare entries (the VI bounds, when a
        sum underflows) may leave that test on the device; the driver reads it together with the
        pick and, when it is true, picks again from :meth:`exact_scores`. Reading it clears it.
        """
        return None

    def exact_scores(self, first: bool) -> torch.Tensor:
        """The scores with every check done at once (what ``pending`` asks for)."""
        return self.first_scores() if first else self.scores()

    def static(self) -> bool:
        """True when the scores never change and every pick is accepted (MIM).

        The driver then orders all picks from the first scores at once (:func:`static_order`)
        instead of stepping; the selections are the same. A subclass that overrides
        ``scores``, ``first_scores``, ``accept`` or ``update`` is not static unless it says so.
        """
        t = type(self)
        return all(getattr(t, m) is getattr(Criterion, m) for m in ("first_scores", "scores", "accept", "update"))

    def state_bytes(self, n_rows: int, n_features: int, n_classes: int, dtype: torch.dtype) -> int:
        """Bytes of per-sample state the criterion keeps on ``n_rows`` rows (none: 0)."""
        return 0

    @classmethod
    def joint(cls, criteria: list[Criterion], batch) -> Separately:
        """The driver of a batch's started criteria (one per member): :class:`Separately` by default."""
        return Separately(criteria)


class Separately:
    """Scores and updates the criteria of a batch one member at a time.

    Parameters
    ----------
    criteria : list of Criterion
        The started criteria, one per member.
    """

    def __init__(self, criteria: list[Criterion]) -> None:
        self.criteria = criteria

    def scores(self, active: list[int], first: list[bool]) -> torch.Tensor:
        """(len(active), N) scores of the active members (``first_scores`` where ``first[b]``)."""
        return torch.stack([checked_scores(self.criteria[b], first[b]) for b in active])

    def update(self, picks: dict[int, int]) -> None:
        """Add each member's pick (member -> feature) to its criterion."""
        for b, j in picks.items():
            self.criteria[b].update(j)


def checked_scores(criterion: Criterion, first: bool) -> torch.Tensor:
    """The criterion's scores with its pending check (:meth:`Criterion.pending`) read at once."""
    s = criterion.first_scores() if first else criterion.scores()
    flag = criterion.pending()
    return criterion.exact_scores(first) if flag is not None and bool(flag) else s


def tie_tolerance(dtype: torch.dtype) -> float:
    """Relative gap under which two criterion values count as tied, for scores in ``dtype``.

    1e-12 for float64 (what a sequential scan with a strict ``>`` over rounded sums would
    see), and a few hundred ulps for float32, whose rounding is 5e-8 relative.
    """
    return max(1e-12, 256 * torch.finfo(dtype).eps)


#: :func:`tie_tolerance` of the floating dtypes, looked up once per greedy step on the CPU.
_TOL = {dt: tie_tolerance(dt) for dt in (torch.float16, torch.bfloat16, torch.float32, torch.float64)}


def lowest_argmax_device(scores: torch.Tensor, available: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`lowest_argmax` without leaving the device: (index, value) as 0-d tensors.

    NaN scores and unavailable entries never win (callers guarantee that one entry is available).
    """
    tol = tie_tolerance(scores.dtype)
    s = torch.where(available, scores.to(torch.float64), torch.full_like(scores, -math.inf, dtype=torch.float64))
    s = torch.nan_to_num(s, nan=-math.inf)
    m = s.max()
    tied = (s >= m - tol * m.abs().clamp_min(1.0)) & available
    j = torch.argmax(tied.to(torch.uint8))  # the first maximum: the lowest tied index
    return j, scores.gather(0, j.view(1))[0].to(torch.float64)  # no scores[j]: a 0-d index reads j back


def lowest_argmax(scores: torch.Tensor, available: torch.Tensor) -> int:
    """Index of the maximum over ``available`` entries, ties (see :func:`tie_tolerance`) to the lowest index.

    The one tie rule of every greedy loop in tensorprob. NaN scores never win.

    Parameters
    ----------
    scores : torch.Tensor of shape (N,), floating
    available : torch.Tensor of shape (N,), bool
        Entries that may be picked (at least one).

    Returns
    -------
    int

    Examples
    --------
    >>> import torch
    >>> from tensorprob.selection._greedy import lowest_argmax
    >>> lowest_argmax(torch.tensor([0.5, 1.0, 1.0]), torch.tensor([True, True, True]))
    1
    >>> lowest_argmax(torch.tensor([0.5, 1.0, 1.0]), torch.tensor([True, False, True]))
    2
    """
    j, _ = lowest_argmax_device(scores, available)
    return int(j)


def _pick(scores: torch.Tensor, available: torch.Tensor,
          check: torch.Tensor | None = None) -> tuple[int, float, bool]:
    """Index and value of the pick with one device-to-host transfer (one sync per greedy step).

    ``check`` (a criterion's :meth:`Criterion.pending`) travels in the same transfer; the third
    value says whether it was set. On the CPU the same float64 operations run in NumPy on the
    tensors' memory: a few microseconds instead of about 50 for six small torch operations,
    which is what a greedy step costs on small data.
    """
    if scores.device.type == "cpu":
        raw = scores.detach().numpy().astype(np.float64, copy=False)
        a = available.numpy()
        s = np.where(a, raw, -math.inf)
        m = s.max()
        if not math.isfinite(m):  # NaN among the available scores, or none above -inf: the full rule
            s = np.where(a & ~np.isnan(raw), raw, -math.inf)
            m = s.max()
            tied = (s >= m - _TOL[scores.dtype] * max(abs(m), 1.0)) & a
        else:  # unavailable entries are -inf, below any finite threshold
            tied = s >= m - _TOL[scores.dtype] * max(abs(m), 1.0)
        j = int(np.argmax(tied))  # the first maximum: the lowest tied index
        return j, float(raw[j]), check is not None and bool(check)
    j, v = lowest_argmax_device(scores, available)
    parts = [j.to(torch.float64), v] + ([] if check is None else [check.to(torch.float64)])
    got = torch.stack(parts).tolist()
    return int(got[0]), got[1], check is not None and got[2] != 0.0


#: More candidates than this tied at the maximum of a selection step make its order arbitrary (a warning).
SATURATED_TIES = 10


def warn_if_saturated(name: str, scores: torch.Tensor, available: torch.Tensor) -> None:
    """Warn when more than :data:`SATURATED_TIES` candidates tie at the maximum of a step's scores.

    ``scores`` (N,) or (B, N) are the scores of one step (of each of B selections) and
    ``available`` the candidates of that step; ties are those of the greedy rule
    (:func:`tie_tolerance`). Many exact ties at the maximum mean that the tables saturate:
    with too few rows per cell every candidate explains the classes perfectly, and the pick
    among them (the lowest index) says nothing. One warning per call, for the worst selection.
    """
    s = scores.detach().to("cpu", torch.float64).reshape(-1, scores.shape[-1]).numpy()
    a = available.detach().cpu().reshape(s.shape).numpy()
    s = np.where(a & ~np.isnan(s), s, -math.inf)
    m = s.max(1, keepdims=True)
    if not np.isfinite(m).any():
        return
    tied = ((s >= m - _TOL.get(scores.dtype, 1e-12) * np.maximum(np.abs(m), 1.0)) & np.isfinite(m)).sum(1)
    b = int(np.argmax(tied))
    if tied[b] <= SATURATED_TIES:
        return
    import warnings

    from ..encoding._columns import _outside_stacklevel

    warnings.warn(f"{name}: the selection's scores saturate: {int(tied[b])} of {int(a[b].sum())} candidate features "
                  f"tie at the maximum ({float(m[b, 0]):.6g}) of the last step, so their order is arbitrary (ties go "
                  "to the lowest index). Its tables have too few rows per cell to tell the features apart: use "
                  "fewer bins or categories (n_bins, tensorprob.config_context(min_cell_count=...)) or more rows",
                  UserWarning, stacklevel=_outside_stacklevel())


def static_order(values: np.ndarray, available: np.ndarray, k: int, tol: float) -> list[int]:
    """The first ``k`` picks of the greedy rule of :func:`_pick` on scores that never change.

    Exactly the picks of ``k`` steps of :func:`_pick` (NaN never wins, a value within ``tol``
    relative of the maximum counts as tied, ties to the lowest index), computed from one sort:
    the entries tied with the best remaining one are a prefix of the remaining entries sorted
    by decreasing value, and the pick is the lowest index in that prefix.

    Parameters
    ----------
    values : ndarray of shape (N,), float64
    available : ndarray of shape (N,), bool
        Entries that may be picked (at least ``k``).
    k : int
    tol : float
        :func:`tie_tolerance` of the scores' dtype.

    Returns
    -------
    list of int
    """
    cand = np.flatnonzero(available)
    v = np.where(np.isnan(values[cand]), -math.inf, values[cand])
    if 0 < k < cand.size // 4:  # many candidates: only those that can be picked are sorted
        # every pick lies at or above the tie threshold of the k-th largest value (the threshold
        # m - tol * max(|m|, 1) grows with m, and each step's maximum is at least that value), and
        # the rule never looks below its own threshold: the picks among these are the picks
        vk = float(np.partition(v, v.size - k)[v.size - k])
        if math.isfinite(vk):
            keep = v >= vk - tol * max(abs(vk), 1.0)
            cand, v = cand[keep], v[keep]
    pos = np.lexsort((cand, -v))  # decreasing value, then increasing index
    order, neg = cand[pos], -v[pos]  # neg: increasing
    # no tie among the first k + 1 (each value above the next one's tie window): the sort is the order
    m = min(k + 1, order.size)
    head = -neg[:m - 1]
    with np.errstate(invalid="ignore"):  # -inf - -inf: NaN, not above: the loop below
        if bool(np.all(head - (-neg[1:m]) > tol * np.maximum(np.abs(head), 1.0))):
            return order[:min(k, order.size)].tolist()
    taken = np.zeros(order.size, dtype=bool)
    picks, head = [], 0
    for _ in range(min(k, order.size)):
        while taken[head]:
            head += 1
        m = -float(neg[head])
        end = int(np.searchsorted(neg, -(m - tol * max(abs(m), 1.0)), side="right"))  # value >= threshold
        if end <= head + 1:
            i = head
        else:  # several tied: the lowest index among those not taken yet
            window = np.where(taken[head:end], np.iinfo(np.int64).max, order[head:end])
            i = head + int(np.argmin(window))
        taken[i] = True
        picks.append(int(order[i]))
    return picks


def greedy_forward(criterion: Criterion, data: SelectionData, k: int) -> tuple[list[int], list[float]]:
    """Run the greedy forward selection of ``k`` features.

    Parameters
    ----------
    criterion : Criterion
    data : tensorprob.counting.SelectionData
    k : int
        Number of features to select (at most ``data.n_features``).

    Returns
    -------
    selected : list of int
        Picks in order.
    scores : list of float
        Criterion value of each pick.
    """
    data.plan(k, criterion.pair_needed or ("mi_xa_b",))
    criterion.start(data)
    N = data.n_features
    available = torch.ones(N, dtype=torch.bool, device=data.codes.device)
    held = data.unobserved
    n_held = 0 if held is None else int(held.sum())
    if n_held:
        available &= ~held  # released when the observed columns run out
    if criterion.static():  # MIM: one sort instead of k steps, one device-to-host transfer
        s = criterion.first_scores()
        raw = s.detach().cpu().numpy().astype(np.float64, copy=False)
        tol, obs = tie_tolerance(s.dtype), available.cpu().numpy()
        selected = static_order(raw, obs, k, tol)
        if n_held and len(selected) < k:  # the held columns, once the observed ones ran out
            selected += static_order(raw, ~obs, k - len(selected), tol)
        for j in selected:
            criterion.update(j)
        warn_if_saturated(criterion.name, s, available)
        return selected, [float(raw[j]) for j in selected]
    selected, scores = [], []
    first = True
    limit = 4 * N + 10  # a criterion that keeps refusing picks (restarts) cannot loop forever
    it = 0
    bar = progress_bar(k, f"selecting ({criterion.name})")
    # on the CPU the mask is cleared through its NumPy view (a torch item assignment is far slower)
    mask = available.numpy() if available.device.type == "cpu" else available
    while len(selected) < k and it < limit:
        it += 1
        if n_held and len(selected) == N - n_held:
            available |= held
            n_held = 0
        s = criterion.first_scores() if first else criterion.scores()
        j, value, recheck = _pick(s, available, criterion.pending())
        if recheck:  # the fast scores were inexact somewhere: pick from the exact ones
            j, value, _ = _pick(criterion.exact_scores(first), available)
        if not criterion.accept(j, value):
            continue
        first = False
        data.retire(j)  # later tables need not count it
        if len(selected) + 1 < k:  # the last pick's tables would never be read
            criterion.update(j)
        if mask is available:  # a device mask: fill a view (an item assignment copies a host scalar)
            mask.narrow(0, j, 1).fill_(False)
        else:
            mask[j] = False
        selected.append(j)
        scores.append(value)
        bar.update()
    bar.close()
    if selected:  # the candidates of the last step: those left and its pick
        last = available.clone()
        last[j] = True
        warn_if_saturated(criterion.name, s, last)
    return selected, scores


def _pick_rows(scores: torch.Tensor, available: torch.Tensor) -> tuple[list[int], list[float]]:
    """:func:`lowest_argmax_device` of every row of (B, N) scores, with one device-to-host transfer."""
    tol = tie_tolerance(scores.dtype)
    s = torch.where(available, scores.to(torch.float64), torch.full_like(scores, -math.inf, dtype=torch.float64))
    s = torch.nan_to_num(s, nan=-math.inf)
    m = s.max(1, keepdim=True).values
    tied = (s >= m - tol * m.abs().clamp_min(1.0)) & available
    j = torch.argmax(tied.to(torch.uint8), dim=1)  # per row, the first maximum: the lowest tied index
    v = scores.gather(1, j[:, None])[:, 0].to(torch.float64)
    jf, values = torch.stack([j.to(torch.float64), v]).tolist()
    return [int(x) for x in jf], values


def greedy_forward_batched(criteria: list[Criterion], batch, k: int) -> tuple[list[list[int]], list[list[float]]]:
    """Run B greedy forward selections of ``k`` features together, one per member of ``batch``.

    Member b is the criterion ``criteria[b]`` on ``batch.members[b]`` (a weighted
    :class:`~tensorprob.counting.SelectionData`); each step picks every member's best candidate
    under the rules of :func:`greedy_forward` (ties to the lowest index, columns without an
    observed entry held back), announces the picks to the batch, whose tables for all members
    are then counted in one pass when the first member reads them, and updates the criteria.
    The selections are those of :func:`greedy_forward` run on each member alone.

    Parameters
    ----------
    criteria : list of Criterion
        One fresh criterion per member.
    batch : tensorprob.counting._batched.BatchedSelectionData
    k : int

    Returns
    -------
    selected, scores : list of lists
        Per member, the picks in order and the criterion value of each.
    """
    members = batch.members
    B = len(members)
    batch.expected_counts = k + 1  # the class tables, then one count per step
    batch.count_class_tables()
    for c, d in zip(criteria, members):
        c.start(d)
    joint = type(criteria[0]).joint(criteria, batch)
    N = members[0].n_features
    dev = batch.codes.device
    available = torch.ones(B, N, dtype=torch.bool, device=dev)
    held = [d.unobserved for d in members]
    n_held = [0 if h is None else int(h.sum()) for h in held]
    for b, h in enumerate(held):
        if n_held[b]:
            available[b] &= ~h
    selected: list[list[int]] = [[] for _ in range(B)]
    scores: list[list[float]] = [[] for _ in range(B)]
    first = [True] * B
    limit = 4 * N + 10
    it = 0
    bar = progress_bar(k, f"selecting ({criteria[0].name}, {B} at once)")
    while it < limit:
        active = [b for b in range(B) if len(selected[b]) < k]
        if not active:
            break
        it += 1
        for b in active:
            if n_held[b] and len(selected[b]) == N - n_held[b]:
                available[b] |= held[b]
                n_held[b] = 0
        S = joint.scores(active, first)
        idx = torch.as_tensor(active, device=dev)
        js, values = _pick_rows(S, available.index_select(0, idx))
        picks = {}
        for b, j, v in zip(active, js, values):
            if criteria[b].accept(j, v):
                picks[b] = j
                selected[b].append(j)
                scores[b].append(v)
                first[b] = False
        more = {b: j for b, j in picks.items() if len(selected[b]) < k}  # a last pick's tables are never read
        batch.announce(more)
        joint.update(more)
        if picks:  # one indexed write (an item assignment per member copies a host scalar each on a GPU)
            pb = torch.tensor(list(picks), dtype=torch.int64)
            pj = torch.tensor(list(picks.values()), dtype=torch.int64)
            available.index_put_((pb.to(dev), pj.to(dev)), torch.zeros((), dtype=torch.bool, device=dev))
        for b in picks:
            if len(selected[b]) == k:
                batch.finished(b)
        bar.update()
    bar.close()
    if it:  # the last step of the members still selecting then (their picks given back)
        last = available.index_select(0, idx).clone()
        for r, jj in enumerate(js):
            last[r, jj] = True
        warn_if_saturated(criteria[0].name, S, last)
    return selected, scores
