"""The row-chunk input lives in :mod:`tensorprob._io` (below the CPD fits and the selectors); its names are kept here."""
from .._io._chunks import RowChunks, parquet_files, shard_files

__all__ = ["RowChunks", "parquet_files", "shard_files"]
