"""Row-chunk input below the CPD fits and the selectors: sources read in passes, Parquet files, shards.

:class:`RowChunks` (also ``tensorprob.datasets.RowChunks``) is data given as row chunks;
:func:`learn_encoding` is the first pass over them, :meth:`ChunkEncoding.replay` every later
one, checked against the first.
"""
from ._chunks import RowChunks, parquet_files, shard_files
from ._passes import ChunkEncoding, as_chunks, check_weights, is_streamed, learn_encoding

__all__ = ["ChunkEncoding", "RowChunks", "as_chunks", "check_weights", "is_streamed", "learn_encoding",
           "parquet_files", "shard_files"]
