"""ELMo's learned layer mix (Peters et al. 2018, eq. 1) as a Thinc layer."""

from typing import Callable, Optional, Tuple

from spacy.util import registry
from thinc.api import Model
from thinc.types import Floats1d, Floats2d, Floats3d

from ..errors import ConfigError
from .settings import SETTINGS, ConfigSettings, ScalarMixSettings, check_settings

LAYER_NORM_EPS = 1e-12
# The Thinc name of the mix layer: how listeners, `mix-weights` and reports find it in a model.
SCALAR_MIX_NAME = "elmo-scalar-mix"


@registry.layers("spacy-elmo.ScalarMix.v1")
def ScalarMix(
    layer_norm: bool = False,
    layer_dropout: float = 0.0,
    l2_to_uniform: float = 0.0,
    n_layers: Optional[int] = None,
    layer: Optional[int] = None,
    average: bool = False,
) -> Model[Floats3d, Floats2d]:
    """``γ · Σ_j softmax(s)_j · h_j`` over the biLM's L + 1 layers.

    The L + 1 scalars `s` start equal (a uniform mix) and γ starts at 1.

    layer_norm: normalise each layer before mixing, as bilm-tf and AllenNLP
        do: one mean and one variance per layer, over every token of the batch
        and every feature (no learned scale), so the layers' scales do not
        weigh in the mix. Each token's features are not normalised on their
        own: that would also remove what sets tokens apart in a layer's
        scale. The statistics are the batch's, so with layer_norm a token's
        vector depends on the other docs of its batch, as in the paper.
    layer_dropout: in training, drop each layer from the mix with this
        probability (its weight is renormalised away; one layer is always kept).
    l2_to_uniform: λ of an L2 penalty ``λ · ‖s − mean(s)‖²`` that pulls the
        mix towards the uniform average (the paper's regulariser).
    n_layers: L + 1; inferred from the data at initialisation when unset.
    layer: use this one layer only (0 = the token representation, j = LSTM j):
        a fixed one-hot mix whose scalars are not learned, for layer probes.
        γ is still learned.
    average: use the plain average of the layers, weights fixed at 1 / (L + 1)
        and not learned (the paper's "average" in its Table 2; γ is still
        learned). Not together with `layer`.

    Input (n_layers, n_tokens, width) -> output (n_tokens, width).
    """
    check_settings(
        ScalarMixSettings,
        {
            "layer_norm": layer_norm,
            "layer_dropout": layer_dropout,
            "l2_to_uniform": l2_to_uniform,
            "n_layers": n_layers,
            "layer": layer,
            "average": average,
        },
        "spacy-elmo.ScalarMix.v1",
        "the component's [model.tok2vec.elmo.mix]",
    )
    return Model(
        SCALAR_MIX_NAME,
        forward,
        init=init,
        params={"s": None, "gamma": None},
        dims={"nL": n_layers, "nO": None},
        attrs={
            SETTINGS: ConfigSettings(
                layer_norm=layer_norm,
                layer_dropout=layer_dropout,
                l2_to_uniform=l2_to_uniform,
                layer=layer,
                average=average,
            )
        },
    )


def init(model: Model, X: Optional[Floats3d] = None, Y=None) -> None:
    if X is not None:
        model.set_dim("nL", X.shape[0])
        model.set_dim("nO", X.shape[2])
    n_layers = model.get_dim("nL")
    layer = model.attrs[SETTINGS]["layer"]
    if layer is not None and not 0 <= layer < n_layers:
        raise ConfigError("E408", layer=layer, n_layers=n_layers)
    model.set_param("s", model.ops.alloc1f(n_layers))
    gamma = model.ops.alloc1f(1)
    gamma[0] = 1.0
    model.set_param("gamma", gamma)


def forward(model: Model, X: Floats3d, is_train: bool) -> Tuple[Floats2d, Callable]:
    ops = model.ops
    xp = ops.xp
    s = model.get_param("s")
    gamma = model.get_param("gamma")
    fixed = is_fixed(model)
    settings = model.attrs[SETTINGS]
    rate = settings["layer_dropout"]
    if fixed:
        weights = mix_weights(model)
    elif is_train and rate > 0.0:
        keep = ops.get_dropout_mask(s.shape, rate)
        keep[int(xp.random.randint(s.shape[0]))] = 1.0  # one layer is always kept
        weights = ops.softmax(s) * keep
        weights /= weights.sum()  # the dropped layers' weight, renormalised away
    else:
        weights = ops.softmax(s)
    if settings["layer_norm"]:
        H, normalise_backprop = _layer_norm(xp, X)
    else:
        H, normalise_backprop = X, None
    mixed = xp.tensordot(weights, H, axes=1)  # (n_tokens, width)
    Y = gamma[0] * mixed

    def backprop(dY: Floats2d) -> Floats3d:
        if not fixed:
            dweights = gamma[0] * xp.tensordot(H, dY, axes=([1, 2], [0, 1]))  # (n_layers,)
            # A dropped layer has weight 0, so the softmax's backward leaves its scalar alone.
            ds = ops.backprop_softmax(weights, dweights)
            lam = settings["l2_to_uniform"]
            if lam:
                ds += 2.0 * lam * (s - s.mean())
            model.inc_grad("s", ds.astype(s.dtype))
        model.inc_grad("gamma", xp.asarray([(dY * mixed).sum()], dtype=gamma.dtype))
        dH = (gamma[0] * weights)[:, None, None] * dY[None]
        return normalise_backprop(dH) if normalise_backprop is not None else dH

    return Y, backprop


def is_fixed(model: Model) -> bool:
    """True when the mix's weights are fixed (one `layer`, or the plain `average`), not learned."""
    settings = model.attrs[SETTINGS]
    return settings["layer"] is not None or settings["average"]


def mix_weights(model: Model) -> Floats1d:
    """The weights the mix applies at prediction: softmax(s), one-hot for a fixed `layer`,
    or 1 / (L + 1) each for the plain `average`."""
    s = model.get_param("s")
    layer, average = model.attrs[SETTINGS]["layer"], model.attrs[SETTINGS]["average"]
    if average:
        return model.ops.xp.full_like(s, 1.0 / s.shape[0])
    if layer is None:
        return model.ops.softmax(s)
    weights = model.ops.xp.zeros_like(s)
    weights[layer] = 1.0
    return weights


def _layer_norm(xp, X: Floats3d):
    """Each layer of X (n_layers, n_tokens, width) to zero mean and unit
    variance over all its tokens and features (Peters et al. 2018; bilm-tf's
    and AllenNLP's `_do_layer_norm`): every row of X is a real token, so no
    mask is needed."""
    axes = (1, 2)
    mean = X.mean(axis=axes, keepdims=True)
    centred = X - mean
    inv_std = 1.0 / xp.sqrt((centred * centred).mean(axis=axes, keepdims=True) + LAYER_NORM_EPS)
    H = centred * inv_std

    def backprop(dH: Floats3d) -> Floats3d:
        # d/dX of (X - mean) / std, with mean and std over each layer.
        mean_dH = dH.mean(axis=axes, keepdims=True)
        mean_dH_H = (dH * H).mean(axis=axes, keepdims=True)
        return inv_std * (dH - mean_dH - H * mean_dH_H)

    return H, backprop
