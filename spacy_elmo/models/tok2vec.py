"""`spacy-elmo.ElmoTok2Vec.v1`: the paper's recipe as a spaCy tok2vec."""
from typing import List

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Maxout, Model, chain, concatenate, with_array
from thinc.types import Floats2d


@registry.architectures("spacy-elmo.ElmoTok2Vec.v1")
def ElmoTok2Vec(
    embed: Model[List[Doc], List[Floats2d]],
    elmo: Model[List[Doc], List[Floats2d]],
    encode: Model[List[Floats2d], List[Floats2d]],
) -> Model[List[Doc], List[Floats2d]]:
    """ELMo concatenated with a context-independent token representation, then
    the task encoder (Peters et al. 2018, section 3.3).

    embed: e.g. spaCy's `MultiHashEmbed` or `CharacterEmbed`.
    elmo: an `ElmoListener` (or a standalone biLM with its mix).
    encode: e.g. `MaxoutWindowEncoder` or `TorchBiLSTMEncoder`; the
        concatenation is projected to the encoder's width (its `nO`).
    """
    width = encode.get_dim("nO")
    project = with_array(Maxout(nO=width, nP=3, normalize=True))
    model = chain(concatenate(elmo, embed), project, encode)
    model.set_ref("embed", embed)
    model.set_ref("elmo", elmo)
    model.set_ref("encode", encode)
    return model
