"""The one greedy forward-selection driver shared by every greedy method.

A *criterion* keeps per-candidate (and, where needed, per-sample) state that grows
incrementally: adding a feature costs the counts of that feature against all candidates
(one bincount) and a few vector operations, never a recomputation over the selected set.

Criterion protocol (see :class:`Criterion`):

- ``start(data)``: receive the :class:`SelectionData`.
- ``first_scores()``: scores of the first pick; default ``I(X_m; C)`` for every feature.
- ``scores()``: the criterion of every feature given the current selection, shape (N,).
- ``accept(j, score)``: called with the best candidate (and its score) before it is added;
  returning False selects nothing this iteration (the VI restart rule uses it to drop its
  chain).
- ``update(j)``: add feature j to the criterion's state.

The driver masks selected features, breaks ties to the lowest index (a value within
:func:`tie_tolerance` relative of the maximum counts as tied, as a sequential scan with a
strict ``>`` would do), and records the criterion value of each pick. On a GPU a step
costs one device-to-host transfer (the pick and its value); everything else stays queued.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from .._config import progress_bar
from ..counting import joint_table, table_information
from ..counting._tables import _complete


@dataclass
class SelectionData:
    """Coded data on the device, shared by the criteria.

    Attributes
    ----------
    codes : (M, N) int64 tensor, -1 = missing
    card : int — largest cardinality (tables are padded to it)
    y : (M,) int64 class codes; n_classes : int
    log_base : float — 1 for nats, log(2) for bits
    """

    codes: torch.Tensor
    card: int
    y: torch.Tensor
    n_classes: int
    dtype: torch.dtype = torch.float64
    log_base: float = 1.0
    _class_table: torch.Tensor | None = field(default=None, repr=False)
    _relevance: torch.Tensor | None = field(default=None, repr=False)
    _complete: bool | None = field(default=None, repr=False)

    @property
    def complete(self) -> bool:
        """No missing (-1) entry in the codes or the class (checked once, not per step)."""
        if self._complete is None:
            self._complete = _complete(self.codes, self.y >= 0)
        return self._complete

    @property
    def n_features(self) -> int:
        return int(self.codes.shape[1])

    @property
    def class_table(self) -> torch.Tensor:
        """Counts of (x_m, class) for every feature: (N, I, 1, C)."""
        if self._class_table is None:
            self._class_table = joint_table(self.codes, self.card, None, 1, self.y, self.n_classes, dtype=self.dtype,
                                            complete=self.complete)
        return self._class_table

    @property
    def relevance(self) -> torch.Tensor:
        """``I(X_m; C)`` of every feature (in the chosen base)."""
        if self._relevance is None:
            self._relevance = table_information(self.class_table)["i_xb"] / self.log_base
        return self._relevance

    def pair_information(self, j: int) -> dict[str, torch.Tensor]:
        """Plug-in quantities of every candidate x against (x_j, class): see ``table_information``."""
        T = joint_table(self.codes, self.card, self.codes[:, j], self.card, self.y, self.n_classes, dtype=self.dtype,
                        complete=self.complete)
        return table_information(T, self.log_base)  # quantities computed when first read


class Criterion:
    """Base criterion: scores by relevance; subclasses keep incremental state."""

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


def tie_tolerance(dtype: torch.dtype) -> float:
    """Relative gap under which two criterion values count as tied, for scores in ``dtype``.

    1e-12 for float64 (what a sequential scan with a strict ``>`` over rounded sums would
    see), and a few hundred ulps for float32, whose rounding is 5e-8 relative.
    """
    return max(1e-12, 256 * torch.finfo(dtype).eps)


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
    return j, scores[j].to(torch.float64)


def lowest_argmax(scores: torch.Tensor, available: torch.Tensor) -> int:
    """Index of the maximum over ``available`` entries, ties (see :func:`tie_tolerance`) to the lowest index."""
    j, _ = lowest_argmax_device(scores, available)
    return int(j)


def _pick(scores: torch.Tensor, available: torch.Tensor) -> tuple[int, float]:
    """Index and value of the pick with one device-to-host transfer (one sync per greedy step)."""
    j, v = lowest_argmax_device(scores, available)
    jf, value = torch.stack([j.to(torch.float64), v]).tolist()
    return int(jf), value


def greedy_forward(criterion: Criterion, data: SelectionData, k: int, max_iterations: int | None = None):
    """Run the greedy forward selection of ``k`` features.

    Returns
    -------
    selected : list of int (in pick order); scores : list of float (criterion at each pick)
    """
    criterion.start(data)
    N = data.n_features
    available = torch.ones(N, dtype=torch.bool, device=data.codes.device)
    selected, scores = [], []
    first = True
    limit = max_iterations if max_iterations is not None else 4 * N + 10
    it = 0
    bar = progress_bar(k, f"selecting ({getattr(criterion, 'method', None) or type(criterion).__name__})")
    while len(selected) < k and it < limit:
        it += 1
        s = criterion.first_scores() if first else criterion.scores()
        j, value = _pick(s, available)
        if not criterion.accept(j, value):
            continue
        first = False
        criterion.update(j)
        available[j] = False
        selected.append(j)
        scores.append(value)
        bar.update()
    bar.close()
    return selected, scores
