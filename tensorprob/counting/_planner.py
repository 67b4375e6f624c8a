"""The counting planner: every way of counting a table is a named strategy, and one planner picks.

A selection run asks for tables of a few kinds (:data:`KINDS`). Each kind can be counted in
several ways with the same result: the exact integer counts (or float64 sums of the same
weights), hence the same information quantities up to the order of a float64 sum. A
:class:`Strategy` is one way: it says whether it applies to a request (and why not), what it
would cost (seconds, from the constants of :mod:`~tensorprob.counting._costs`) and counts.
The :class:`Planner` of a run asks every registered strategy of the request's kind, takes the
cheapest that applies (ties to the earlier registered), records the choice in a
:class:`CountingPlan` and logs it at DEBUG level on the ``tensorprob.counting`` logger.

The plain reference, ``"bincount"`` (:func:`~tensorprob.counting.joint_table` and
:class:`~tensorprob.counting.TableInformation`, blocked over candidates to the memory
budget), applies to every request. ``set_config(counting="reference")`` (or the
``TENSORPROB_COUNTING`` environment variable) makes it count every table;
``counting="<name>"`` forces one strategy for the kinds it serves, and raises where it does
not apply (the planner keeps choosing for the other kinds).
"""
from __future__ import annotations

import abc
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .. import _config

logger = logging.getLogger("tensorprob.counting")

#: The kinds of tables a run asks for, and what each gives.
KINDS: dict[str, str] = {
    "class": "the (x_c, class) table of every feature (dense)",
    "relevance": "the entropies h_x, h_b, h_xb of the (x_c, class) tables of every feature (complete, unweighted rows)",
    "pair": "quantities of the (x_c, x_j, class) tables of the candidates against a pick j",
    "pair_free": "quantities of the (x_c, x_j) tables of the candidates against a pick j (no class)",
    "pairs": "quantities of the (x_c, x_s, class) tables of listed (candidate, selected) pairs",
    "triple": "quantities of the (x_c, x_r, x_j) tables of every candidate against two picks",
    "pair_table": "the (x_c, x_j, class) tables of every candidate against a pick j (dense)",
    "triple_table": "the (x_c, x_r, x_j) tables of every candidate against two picks (dense)",
    "members": "the (x_c, x_j_b, class) tables of weighted members b of a batch against their own picks",
}

#: Name of the plain reference strategy, which counts every kind.
REFERENCE = "bincount"


@dataclass(eq=False)
class Request:
    """One table request of a run.

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.
    j, r : int, optional
        The pick (``a`` of the tables); ``r``: the second one of a triple (``a = x_r``, ``b = x_j``).
    cols : ndarray of int64, optional
        Count only these candidates (in order); None: every feature.
    needed : tuple of str
        The quantities the caller reads (``mi_xa_b``, ``h_xab``, ...), for the quantity kinds.
    cand, sel : ndarray of int64, optional
        The pairs of kind ``"pairs"``: candidate ``cand[i]`` against selected ``sel[i]``.
    batch : object, optional
        Kind ``"members"``: the details a batch passes to its strategies (see
        :mod:`~tensorprob.counting._batched`).
    """

    kind: str
    j: int | None = None
    r: int | None = None
    cols: np.ndarray | None = None
    needed: tuple[str, ...] = ()
    cand: np.ndarray | None = None
    sel: np.ndarray | None = None
    batch: Any = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown kind of table {self.kind!r}; one of {', '.join(KINDS)}")


class Strategy(abc.ABC):
    """One way of counting tables: what it applies to, its estimated cost, its count.

    A subclass sets the class attributes ``name`` (what ``counting_plan_`` records and
    ``counting=`` forces), ``kinds`` (the kinds of tables it counts), ``devices`` where it
    counts codes on some devices only (``frozenset({"cpu"})``: the planner asks it nothing
    about codes elsewhere) and, where its count gives every feature's quantities whatever the
    open candidates, ``subsets = False``; it implements
    :meth:`applies`, :meth:`seconds` and :meth:`count`, and registering it (:func:`register`)
    makes the planner consider it.

    Parameters
    ----------
    data : SelectionData or BatchedSelectionData
        The run's data: an instance belongs to one run and may keep what it builds for later
        requests (bitsets, keys, the tables of all pairs).
    """

    # name of the strategy (what ``counting_plan_`` records and ``counting=`` forces)
    name: ClassVar[str] = ""
    # the kinds of tables it counts (keys of KINDS)
    kinds: ClassVar[frozenset[str]] = frozenset()
    # whether count() counts only the candidates ``req.cols`` (else it gives every feature's)
    subsets: ClassVar[bool] = True
    # whether it counts sparse codes (SparseRows); the others read dense codes and never see them
    reads_sparse: ClassVar[bool] = False
    # the device types of the codes it counts (the NumPy strategies: the CPU alone)
    devices: ClassVar[frozenset[str]] = frozenset({"cpu", "cuda"})

    def __init__(self, data: Any) -> None:
        self.data = data

    def applies(self, req: Request) -> str | None:
        """Whether the strategy can count a request.

        Parameters
        ----------
        req : Request
            The request.

        Returns
        -------
        str or None
            None when it can; otherwise why not, in one short phrase.
        """
        return None

    @abc.abstractmethod
    def seconds(self, req: Request) -> float:
        """Estimate the seconds that :meth:`count` takes on a request.

        Parameters
        ----------
        req : Request
            The request (one that the strategy applies to).

        Returns
        -------
        float
            Rough seconds, from the constants of ``_costs.py``: only comparisons between strategies matter.
        """

    @abc.abstractmethod
    def count(self, req: Request) -> Any:
        """Count a request.

        Parameters
        ----------
        req : Request
            The request (one that the strategy applies to).

        Returns
        -------
        torch.Tensor or object
            The dense tables of a table kind, or the quantities ``req.needed`` (as attributes,
            float64 tensors) of a quantity kind.
        """


_REGISTRY: dict[str, type[Strategy]] = {}
#: Choices made for runs of the same signature (a refit of same-shaped data decides alike): the
#: decision, with what was considered, by (kind, setting, request shape, data signature, registry).
_DECISIONS: dict[tuple, tuple[str, list]] = {}
_DECISIONS_MAX = 4096


def register(cls: type[Strategy]) -> type[Strategy]:
    """Class decorator: add a strategy to the planner (the order of registration breaks cost ties)."""
    if not cls.name or not cls.kinds or not set(cls.kinds) <= set(KINDS):
        raise ValueError(f"strategy {cls.__name__} needs a name and kinds among {list(KINDS)}")
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"a strategy named {cls.name!r} is registered already")
    _REGISTRY[cls.name] = cls
    return cls


def strategies(kind: str | None = None, device: str | None = None) -> list[str]:
    """Names of the registered counting strategies, of one kind of table or of all.

    Parameters
    ----------
    kind : str, optional
        One of :data:`KINDS` (``"class"``, ``"relevance"``, ``"pair"``, ``"pair_free"``,
        ``"pairs"``, ``"triple"``, ``"pair_table"``, ``"triple_table"``, ``"members"``); None
        lists every strategy.
    device : str, optional
        Only the strategies that count codes on this device type (``"cpu"``, ``"cuda"``); None:
        on any.

    Returns
    -------
    list of str
        In registration order (the order that breaks ties of estimated cost).

    Examples
    --------
    >>> from tensorprob.counting import strategies
    >>> "bincount" in strategies("pair")
    True
    >>> "sorted" in strategies("pair", device="cuda")
    False
    """
    if kind is not None and kind not in KINDS:
        raise ValueError(f"unknown kind of table {kind!r}; one of {', '.join(KINDS)}")
    dev = None if device is None else str(device).split(":")[0]
    return [n for n, c in _REGISTRY.items()
            if (kind is None or kind in c.kinds) and (dev is None or dev in c.devices)]


def check_counting(value: str) -> str:
    """The ``counting`` setting validated: ``"auto"``, ``"reference"`` or a registered strategy name."""
    if not isinstance(value, str):
        raise TypeError(f"counting must be a string, got {type(value).__name__}")
    v = value.strip().lower()
    if v in ("auto", "reference") or v in _REGISTRY:
        return v
    raise ValueError(f"counting must be 'auto', 'reference' or one of the strategies {', '.join(_REGISTRY)}; "
                     f"got {value!r}")


_config.VALIDATORS["counting"] = check_counting


class CountingPlan(Mapping):
    """What counted a run's tables: per kind of table, how many requests each strategy served.

    A mapping ``{kind: {strategy: requests}}`` (read it like a dict); ``str()`` gives a report
    with the last estimate of every strategy considered and why the others did not apply.

    Examples
    --------
    >>> import numpy as np, tensorprob as tp
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.integers(0, 3, (200, 6)), rng.integers(0, 2, 200)
    >>> plan = tp.JMI(k=3).fit(X, y).counting_plan_
    >>> sum(plan["pair"].values())  # the tables of each pick but the last
    2
    >>> with tp.config_context(counting="reference"):
    ...     plan = tp.JMI(k=3).fit(X, y).counting_plan_
    >>> dict(plan["pair"])
    {'bincount': 2}
    """

    def __init__(self) -> None:
        self._counts: dict[str, dict[str, int]] = {}
        self._last: dict[str, list[tuple[str, float | None, str | None]]] = {}

    def record(self, kind: str, name: str, considered: list[tuple[str, float | None, str | None]] | None) -> None:
        """Add one request served.

        Parameters
        ----------
        kind : str
            The kind of table.
        name : str
            The strategy that counted it.
        considered : list of (str, float or None, str or None), or None
            Every strategy considered: its name, its estimate (None where it did not apply) and
            why it did not apply (None where it did); None keeps the last list.
        """
        per = self._counts.setdefault(kind, {})
        per[name] = per.get(name, 0) + 1
        if considered is not None:
            self._last[kind] = considered

    def merge(self, other: CountingPlan) -> None:
        """Add another plan's counts (a batch's members, a run's parts).

        Parameters
        ----------
        other : CountingPlan
            The plan whose requests are added to this one's.
        """
        for kind, per in other._counts.items():
            mine = self._counts.setdefault(kind, {})
            for name, n in per.items():
                mine[name] = mine.get(name, 0) + n
        self._last.update(other._last)

    def __getitem__(self, kind: str) -> dict[str, int]:
        return dict(self._counts[kind])

    def __iter__(self) -> Iterator[str]:
        return iter(self._counts)

    def __len__(self) -> int:
        return len(self._counts)

    def __repr__(self) -> str:
        return f"CountingPlan({self._counts!r})"

    def __str__(self) -> str:
        lines = []
        for kind, per in self._counts.items():
            served = ", ".join(f"{n} x{c}" for n, c in per.items())
            lines.append(f"{kind}: {served}")
            for name, sec, why in self._last.get(kind, []):
                what = (f"not applicable: {why}" if why is not None else f"{sec * 1e3:.3g} ms estimated"
                        if np.isfinite(sec) else "not chosen here, only when forced (its cost model rules it out)")
                lines.append(f"    {name}: {what}")
        return "\n".join(lines) if lines else "(no tables counted)"


class Planner:
    """The strategies of one run's data, the choice per request, and the record.

    Parameters
    ----------
    data : SelectionData or BatchedSelectionData
        What the strategies count from.
    """

    def __init__(self, data: Any) -> None:
        self.data = data
        self.plan = CountingPlan()
        self._instances: dict[str, Strategy] = {}
        #: requests of each kind the run still expects (strategies that build once spread it over them)
        self.expected: dict[str, int] = {}
        # the choice per kind and shape of request: a run decides once, not at every step
        self._chosen: dict[tuple, Strategy] = {}

    def strategy(self, name: str) -> Strategy:
        """The run's instance of the strategy ``name`` (made on first use)."""
        s = self._instances.get(name)
        if s is None:
            s = self._instances[name] = _REGISTRY[name](self.data)
        return s

    def choose(self, req: Request) -> Strategy:
        """The strategy that counts ``req`` (see the module notes); records the choice.

        The choice is made once per kind and shape of request (every candidate or the open ones,
        the pick's alphabet, the number of listed pairs to a power of two) and setting.
        """
        mode = _mode()
        key = (req.kind, mode, _shape(self.data, req))
        best = self._chosen.get(key)
        # a run's data never change, so what applies to a shape holds; a batch's members differ
        # in their weights, so what applies to them is asked again
        if best is not None and (req.kind != "members" or best.applies(req) is None):
            self.plan.record(req.kind, best.name, None)
            return best
        sig = getattr(self.data, "signature", None)
        # distributed: no decision remembered across runs (keyed by this rank's rows, it could differ by rank)
        if getattr(self.data, "distributed", False):
            sig = None
        full = None if sig is None else (key, sig(), self.expected.get(req.kind, 0), tuple(_REGISTRY),
                                         _config.setting("memory_budget"))
        known = None if full is None or best is not None else _DECISIONS.get(full)
        if known is not None and self._why_not(self.strategy(known[0]), req) is None:  # decided before for this signature
            best = self.strategy(known[0])
            self.plan.record(req.kind, best.name, known[1])
            if logger.isEnabledFor(logging.DEBUG):
                _log(req.kind, best.name, known[1])
        else:
            best = self._choose(req, mode)
            if full is not None:
                if len(_DECISIONS) >= _DECISIONS_MAX:
                    _DECISIONS.clear()
                _DECISIONS[full] = (best.name, self.plan._last.get(req.kind, []))
        self._chosen[key] = best
        return best

    def estimate(self, req: Request, strategy: str | None = None) -> float:
        """Estimated seconds of ``req`` by the strategy the planner would choose; no choice is made or recorded.

        What a caller weighs when it can ask for its tables in more than one way (CMIM's lazy
        rounds against eager steps). Under a forced setting: that strategy's estimate (inf where
        it cannot count the request). ``strategy``: that strategy's estimate alone (one that
        counted the run's earlier requests of the kind; a fraction of the cost of weighing all).
        The estimates may count the class tables, which every run reads.
        """
        if strategy is not None:
            s = self.strategy(strategy)
            return np.inf if self._why_not(s, req) is not None else float(s.seconds(req))
        considered = self._considered(req, self._names(req, _mode()), costed=True)
        return min((sec for _, sec, why in considered if why is None), default=np.inf)

    def _considered(self, req: Request, names: list[str], costed: bool) -> list[tuple[str, float | None, str | None]]:
        """Every strategy of ``names``: its estimate (0 unless ``costed``) where it applies, else why not."""
        out: list[tuple[str, float | None, str | None]] = []
        for name in names:
            s = self.strategy(name)
            why = self._why_not(s, req)
            out.append((name, None, why) if why is not None else (name, float(s.seconds(req)) if costed else 0.0, None))
        return out

    def _why_not(self, s: Strategy, req: Request) -> str | None:
        """Why ``s`` cannot count ``req`` (None: it can)."""
        if not s.reads_sparse and getattr(self.data, "sparse", None) is not None:
            return "the codes are sparse (it reads dense codes)"
        codes = getattr(self.data, "codes", None)
        dev = "cpu" if codes is None else codes.device.type
        if dev not in s.devices:
            return "the codes are not on the CPU" if s.devices == {"cpu"} else f"the codes are on {dev}"
        return s.applies(req)

    @staticmethod
    def _names(req: Request, mode: str) -> list[str]:
        """The strategies that a request's kind can be counted by under ``mode``."""
        if mode == "reference":
            return [REFERENCE]
        names = [n for n, c in _REGISTRY.items() if req.kind in c.kinds]
        return [mode] if mode in names else names  # a forced strategy of another kind leaves this kind to the planner

    def _choose(self, req: Request, mode: str) -> Strategy:
        names = self._names(req, mode)
        if mode not in ("auto", "reference") and names == [mode]:
            s = self.strategy(mode)
            why = self._why_not(s, req)
            if why is not None:
                raise ValueError(f"counting={mode!r} was asked for, but it cannot count this {req.kind!r} request: "
                                 f"{why}; use counting='auto' or 'reference'")
        considered = self._considered(req, names, costed=len(names) > 1)
        usable = [(sec, name) for name, sec, why in considered if why is None]
        if not usable:  # the reference applies to every request: a strategy's bug, not the user's
            raise RuntimeError(f"no counting strategy applies to a {req.kind!r} request: {considered}")
        best = self.strategy(min(usable, key=lambda t: t[0])[1])  # the first of the cheapest
        self.plan.record(req.kind, best.name, considered)
        if logger.isEnabledFor(logging.DEBUG):
            _log(req.kind, best.name, considered)
        return best

    def forget(self) -> None:
        """Decide anew at the next request of every kind (what the strategies may build has changed)."""
        self._chosen.clear()

    def count(self, req: Request) -> Any:
        """Count ``req`` with the chosen strategy."""
        return self.choose(req).count(req)

    def expect(self, kind: str, n: int) -> None:
        """Tell the strategies that about ``n`` more requests of ``kind`` will come (a greedy run's steps)."""
        self.expected[kind] = max(0, int(n))

    def served(self, kind: str) -> None:
        """One request of ``kind`` was served (what is left expected drops by one)."""
        if self.expected.get(kind):
            self.expected[kind] -= 1


def _mode() -> str:
    """The ``counting`` setting, checked (it may come from the environment variable)."""
    mode = _config.setting("counting")
    return mode if mode == "auto" else check_counting(mode)


def _log(kind: str, name: str, considered: list[tuple[str, float | None, str | None]]) -> None:
    """The DEBUG record of a choice: the strategy, its estimate, and every other one's estimate or reason."""
    est = next((t for n, t, w in considered if n == name and t is not None), 0.0)
    others = "; ".join(f"{n}: {w if w is not None else '%.3g ms' % (t * 1e3) if np.isfinite(t) else 'ruled out'}"
                       for n, t, w in considered if n != name)
    logger.debug("%s table(s) by %s (%.3g ms estimated)%s", kind, name, est * 1e3, f"; {others}" if others else "")


def _shape(data: Any, req: Request) -> tuple:
    """What of a request the estimates depend on, besides its kind."""
    cols = req.cols is None  # every candidate, or the open ones (the choice holds as they shrink)
    if req.kind == "pairs":
        return (len(req.cand).bit_length(),)
    if req.kind == "members":
        m = req.batch
        return (len(m.members), len(set(m.a_cols)), m.card_a, m.classes, m.raw)
    cards = getattr(data, "cards", None)
    a = -1 if req.j is None or cards is None else int(cards[req.j])
    return cols, a
