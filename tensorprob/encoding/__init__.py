"""Encoding of raw data as integer codes, and discretization of continuous columns."""
from ._codes import Encoded
from ._discretize import Discretizer, discretize, mdl_cut_points
from ._encode import Encoder, encode
from ._labels import encode_labels
from ._numeric import to_numeric

__all__ = ["Discretizer", "Encoded", "Encoder", "discretize", "encode", "encode_labels", "mdl_cut_points", "to_numeric"]
