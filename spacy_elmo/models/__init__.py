from .bilm import BiLMModel
from .listener import ElmoListener, ElmoStandalone, mix_docs
from .scalar_mix import ScalarMix
from .tok2vec import ElmoTok2Vec, ElmoTok2Vec_v2

__all__ = ["BiLMModel", "ElmoListener", "ElmoStandalone", "ScalarMix", "ElmoTok2Vec", "ElmoTok2Vec_v2", "mix_docs"]
