"""CPD (latent class) joint-PMF models fitted by batched KL-EM."""
from ._fit import fit_cpd
from ._model import CPDModel
from ._rank import RankSelection, select_rank

__all__ = ["CPDModel", "RankSelection", "fit_cpd", "select_rank"]
