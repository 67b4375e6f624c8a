"""Row chunks of data too large for memory: re-iterable sources, Parquet files, and file shards per rank."""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

_PARQUET_SUFFIXES = (".parquet", ".pq")
_STORAGES = ("auto", "table", "spill")


class RowChunks:
    """Data given as row chunks, read again at every pass (out-of-core fits).

    :func:`tensorprob.fit_cpd` and :func:`tensorprob.fit_cpds` take a ``RowChunks`` as ``X``
    and read it twice: once to learn the encoding (a summary of every column and the classes,
    combined over the chunks: categories, cardinalities, bin edges) and once to code every
    chunk and merge its rows into a table of distinct rows with summed weights. The EM then
    runs on that table, exactly as on the data held in memory; only one chunk and the table of
    distinct rows are in memory at a time. When the distinct rows are too many for a table (see
    ``storage``), the rows are written to temporary files instead and every EM iteration reads
    them back a block at a time. The source must give the same chunks at every pass: the second
    pass checks each chunk's number of rows and a digest of a few of its rows against the
    first, and a source that changed raises a ``ValueError``.

    The count-based selectors (:class:`tensorprob.JMI`, :class:`tensorprob.CMIM`, ...) take it
    as ``fit(chunks)`` too: the same first pass, then the codes are spilled to temporary
    files and counted back in blocks of rows.

    Parameters
    ----------
    source : callable or sequence
        A callable taking no argument and returning a fresh iterator of chunks at each call
        (a generator function, for instance), or a sequence (list, tuple) of chunks. A plain
        iterator or generator object is refused: it can be read only once. Each chunk is
        ``X``, ``(X, y)`` or ``(X, y, sample_weight)``: ``X`` an array, tensor or DataFrame
        with the same columns in every chunk, ``y`` its labels (or None), ``sample_weight``
        its row weights (1-D, or 2-D for several weight sets). Every chunk must give labels,
        or none; weights likewise.
    max_distinct_rows : int, optional
        Largest number of distinct rows the merged table may hold (see ``storage``). Default:
        as many as fit in 8 x ``memory_budget`` bytes (see :func:`tensorprob.get_config`) as
        compact codes and float64 weights.
    storage : {"auto", "table", "spill"}, default="auto"
        Where the coded rows are kept for the EM. ``"table"``: the table of distinct rows in
        memory; more than ``max_distinct_rows`` distinct rows raise a ``ValueError``.
        ``"spill"``: every chunk's rows (duplicates within a chunk merged) are written to
        temporary files and every EM iteration reads them back one block of
        ``block_rows`` rows at a time, so memory holds one block and the model, whatever
        the number of rows; the files are removed when the fit ends, also on error.
        ``"auto"``: the table, switching to the spill (the table so far is written out
        first) when it outgrows ``max_distinct_rows``. The results are those of the fit in
        memory either way (to rounding: the sums are taken in another order), except the
        k-means++ seeds of spilled rows, which are drawn by passes over the files: the same
        random rule, another random draw.
    block_rows : int, optional
        Rows per block of an EM pass over spilled rows, and of every count of a streamed
        selection (selectors always spill their coded rows). Default: as many as the memory
        budget allows for the batch being fitted, or for the codes of a block of a selection.
    spill_dir : str or path, optional
        Directory of the temporary files of the CPD fits and the selectors (default
        :func:`tempfile.gettempdir`); each fit makes its own subdirectory there and removes it.

    Attributes
    ----------
    n_rows_ : int
        Rows read by the last fit (over all ranks with ``distributed=True``); 0 before.
    n_distinct_ : int
        Distinct rows of the last fit's table, or rows written to its spill (this rank's with
        ``distributed=True``).
    spilled_ : bool
        Whether the last fit spilled its rows (this rank's with ``distributed=True``).

    See Also
    --------
    RowChunks.from_parquet : Chunks read from Parquet files, one row group at a time.
    shard_files : The files of one rank of a distributed fit.

    Examples
    --------
    >>> import numpy as np
    >>> import tensorprob as tp
    >>> data = tp.datasets.make_latent_class(3000, [3, 4, 2], 2, random_state=0)
    >>> X = np.asarray(data.X)
    >>> chunks = tp.datasets.RowChunks([X[:1000], X[1000:2000], X[2000:]])
    >>> model = tp.fit_cpd(chunks, rank=2, device="cpu", random_state=0)
    >>> chunks.n_rows_
    3000
    """

    def __init__(self, source: Callable[[], Iterable[Any]] | Sequence[Any], *,
                 max_distinct_rows: int | None = None, storage: str = "auto", block_rows: int | None = None,
                 spill_dir: str | os.PathLike | None = None) -> None:
        if isinstance(source, Iterator):
            raise TypeError("RowChunks needs a source that can be read several times: a callable returning a "
                            "fresh iterator (e.g. a generator function) or a sequence of chunks, not an iterator")
        if not (callable(source) or isinstance(source, Sequence)) or isinstance(source, (str, bytes)):
            raise TypeError(f"RowChunks source must be a callable or a sequence of chunks, got "
                            f"{type(source).__name__}")
        if max_distinct_rows is not None and (isinstance(max_distinct_rows, bool) or int(max_distinct_rows) < 1):
            raise ValueError(f"max_distinct_rows must be an integer >= 1, got {max_distinct_rows!r}")
        if storage not in _STORAGES:
            raise ValueError(f"storage must be one of {_STORAGES}, got {storage!r}")
        if block_rows is not None and (isinstance(block_rows, bool) or int(block_rows) < 1):
            raise ValueError(f"block_rows must be an integer >= 1, got {block_rows!r}")
        self.source = source
        self.max_distinct_rows = max_distinct_rows
        self.storage = storage
        self.block_rows = None if block_rows is None else int(block_rows)
        self.spill_dir = spill_dir
        self.n_rows_ = 0
        self.n_distinct_ = 0
        self.spilled_ = False

    def __iter__(self) -> Iterator[tuple[Any, Any, Any]]:
        """A fresh pass: ``(X, y, sample_weight)`` per chunk (``y``, ``sample_weight`` None when absent)."""
        it = self.source() if callable(self.source) else iter(self.source)
        for item in it:
            if isinstance(item, tuple):
                if not 1 <= len(item) <= 3:
                    raise ValueError(f"a chunk tuple is (X,), (X, y) or (X, y, sample_weight); got {len(item)} items")
                item = tuple(item) + (None,) * (3 - len(item))
                yield item
            else:
                yield item, None, None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.source!r})"

    @classmethod
    def from_parquet(cls, paths: str | os.PathLike | Sequence[str | os.PathLike], *, target: str | None = None,
                     columns: Sequence[str] | None = None, max_distinct_rows: int | None = None,
                     storage: str = "auto", block_rows: int | None = None,
                     spill_dir: str | os.PathLike | None = None) -> RowChunks:
        """Chunks read from Parquet files, one row group at a time (needs ``pyarrow``: extra ``parquet``).

        Parameters
        ----------
        paths : path or sequence of paths
            A Parquet file, a directory (its ``*.parquet`` / ``*.pq`` files, searched
            recursively, in sorted order) or a list of files (read in the order given).
        target : str, optional
            Column holding the labels: each chunk becomes ``(X, y)`` with that column as ``y``.
        columns : sequence of str, optional
            The feature columns to read (default all, ``target`` excepted).
        max_distinct_rows : int, optional
            As in :class:`RowChunks`.
        storage : {"auto", "table", "spill"}, default="auto"
            As in :class:`RowChunks`.
        block_rows : int, optional
            As in :class:`RowChunks`.
        spill_dir : str or path, optional
            As in :class:`RowChunks`.

        Returns
        -------
        RowChunks
            Its chunks are pandas DataFrames (and label arrays with ``target``).

        Raises
        ------
        ImportError
            ``pyarrow`` is not installed.
        FileNotFoundError
            A path does not exist, or a directory holds no Parquet file.
        ValueError
            ``target`` is not a column of a file.
        """
        try:
            import pyarrow.parquet as pq
        except ImportError as exc:  # pragma: no cover - pyarrow comes with the parquet extra
            raise ImportError("reading Parquet files needs pyarrow: pip install 'tensorprob[parquet]'") from exc
        files = parquet_files(paths)

        def chunks() -> Iterator[Any]:
            for f in files:
                pf = pq.ParquetFile(f)
                names = pf.schema_arrow.names
                if target is not None and target not in names:
                    raise ValueError(f"target column {target!r} is not in {str(f)!r} (columns: "
                                     f"{', '.join(names[:10])}{', ...' if len(names) > 10 else ''})")
                feats = [c for c in (columns if columns is not None else names) if c != target]
                read = feats + ([target] if target is not None else [])
                for g in range(pf.num_row_groups):
                    df = pf.read_row_group(g, columns=read).to_pandas()
                    if target is None:
                        yield df[feats]
                    else:
                        yield df[feats], df[target].to_numpy()

        out = cls(chunks, max_distinct_rows=max_distinct_rows, storage=storage, block_rows=block_rows,
                  spill_dir=spill_dir)
        out.files = files
        return out


def parquet_files(paths: str | os.PathLike | Sequence[str | os.PathLike]) -> list[str]:
    """The Parquet files named by a file, a directory (recursive, sorted) or a list of paths."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    files: list[str] = []
    for p in items:
        path = Path(p)
        if path.is_dir():
            found = sorted(str(f) for f in path.rglob("*") if f.is_file() and f.suffix.lower() in _PARQUET_SUFFIXES)
            if not found:
                raise FileNotFoundError(f"directory {str(path)!r} holds no .parquet/.pq file")
            files.extend(found)
        elif path.is_file():
            files.append(str(path))
        else:
            raise FileNotFoundError(f"{str(path)!r} does not exist")
    return files


def shard_files(paths: str | os.PathLike | Sequence[str | os.PathLike], rank: int | None = None,
                world_size: int | None = None) -> list[str]:
    """This rank's share of a set of files: round-robin over the sorted paths.

    File ``i`` of the sorted list goes to rank ``i % world_size``, so every file is read by
    exactly one rank and the shares differ in size by at most one file (a rank may get none
    when there are fewer files than ranks; a distributed fit accepts a rank without rows).

    Parameters
    ----------
    paths : path or sequence of paths
        A directory (its Parquet files, recursively), a Parquet file, or a list of paths
        (any files; sorted as strings before sharding).
    rank, world_size : int, optional
        Default: those of the initialized ``torch.distributed`` default process group
        (or 0 and 1 when there is none).

    Returns
    -------
    list of str
        The paths of this rank, in sorted order.

    Examples
    --------
    >>> from tensorprob.datasets import shard_files
    >>> shard_files(["c.pq", "a.pq", "b.pq", "d.pq", "e.pq"], rank=1, world_size=2)
    ['b.pq', 'd.pq']
    """
    if isinstance(paths, (str, os.PathLike)) and Path(paths).is_dir():
        files = parquet_files(paths)
    else:
        files = [str(p) for p in ([paths] if isinstance(paths, (str, os.PathLike)) else paths)]
    if rank is None or world_size is None:
        import torch.distributed as dist

        on = dist.is_available() and dist.is_initialized()
        rank = (dist.get_rank() if on else 0) if rank is None else rank
        world_size = (dist.get_world_size() if on else 1) if world_size is None else world_size
    if not (isinstance(world_size, int) and world_size >= 1):
        raise ValueError(f"world_size must be an integer >= 1, got {world_size!r}")
    if not (isinstance(rank, int) and 0 <= rank < world_size):
        raise ValueError(f"rank must be an integer in [0, {world_size}), got {rank!r}")
    return sorted(files)[rank::world_size]
