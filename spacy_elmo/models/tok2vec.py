"""`spacy-elmo.ElmoTok2Vec.v1` and `.v2`: the paper's recipe as a spaCy tok2vec."""

from typing import List, Optional

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Linear, Maxout, Model, chain, concatenate, with_array
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


@registry.architectures("spacy-elmo.ElmoTok2Vec.v2")
def ElmoTok2Vec_v2(
    embed: Model[List[Doc], List[Floats2d]],
    elmo: Model[List[Doc], List[Floats2d]],
    encode: Model[List[Floats2d], List[Floats2d]],
    output_elmo: Optional[Model[List[Doc], List[Floats2d]]] = None,
) -> Model[List[Doc], List[Floats2d]]:
    """`ElmoTok2Vec.v1`, and optionally ELMo at the encoder's output too: the
    encoder's output h_k becomes [h_k; ELMo_k] (Peters et al. 2018, section 3.3).

    output_elmo: a second `ElmoListener` (its own mix, listening to the same
        `elmo` component as `elmo`), or None for exactly `ElmoTok2Vec.v1`.
        Its vectors are concatenated to the encoder's output, and a linear
        layer projects [h_k; ELMo_k] back to the encoder's width.

    The model's width (`nO`) is the encoder's width either way. A downstream
    component sizes its first layer by its tok2vec's `nO` when it is built,
    before the biLM (and so the ELMo width) is known; and the NER's and the
    tagger's first layer is itself linear, so the linear projection before it
    takes nothing away from the paper's [h_k; ELMo_k] but the rank above the
    encoder's width.
    """
    model = ElmoTok2Vec(embed, elmo, encode)
    if output_elmo is None:
        return model
    width = encode.get_dim("nO")
    model = chain(concatenate(model, output_elmo), with_array(Linear(nO=width)))
    for name, part in (("embed", embed), ("elmo", elmo), ("encode", encode), ("output_elmo", output_elmo)):
        model.set_ref(name, part)
    return model
