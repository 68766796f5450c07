import numpy
import pytest

from spacy_elmo.models.scalar_mix import ScalarMix


def make(**kwargs):
    mix = ScalarMix(**kwargs)
    X = numpy.random.default_rng(0).normal(size=(3, 5, 4)).astype("float64")
    mix.initialize(X=X.astype("float32"))
    mix.set_param("s", numpy.asarray([0.3, -0.2, 0.5], dtype="float64"))
    mix.set_param("gamma", numpy.asarray([1.3], dtype="float64"))
    return mix, X


def test_starts_uniform_and_infers_dims():
    mix = ScalarMix()
    X = numpy.ones((4, 2, 6), dtype="f")
    mix.initialize(X=X)
    assert mix.get_dim("nL") == 4 and mix.get_dim("nO") == 6
    assert numpy.array_equal(mix.get_param("s"), numpy.zeros(4, dtype="f"))
    assert mix.get_param("gamma")[0] == 1.0
    Y = mix.predict(numpy.arange(4, dtype="f")[:, None, None] * X)
    numpy.testing.assert_allclose(Y, numpy.full((2, 6), 1.5))


@pytest.mark.parametrize("layer_norm", [False, True])
@pytest.mark.parametrize("l2", [0.0, 0.5])
def test_gradients_match_finite_differences(layer_norm, l2):
    mix, X = make(layer_norm=layer_norm, l2_to_uniform=l2)
    dY = numpy.random.default_rng(1).normal(size=(5, 4))

    def loss(s=None, gamma=None, X_=X):
        if s is not None:
            mix.set_param("s", s)
        if gamma is not None:
            mix.set_param("gamma", gamma)
        Y, _ = mix(X_, is_train=False)
        penalty = l2 * ((mix.get_param("s") - mix.get_param("s").mean()) ** 2).sum()
        return float((Y * dY).sum()) + penalty

    s0, g0 = mix.get_param("s").copy(), mix.get_param("gamma").copy()
    _, backprop = mix(X, is_train=True)
    dX = backprop(dY)
    ds, dgamma = mix.get_grad("s").copy(), mix.get_grad("gamma").copy()
    eps = 1e-6
    for i in range(3):
        step = numpy.zeros(3)
        step[i] = eps
        numeric = (loss(s=s0 + step, gamma=g0) - loss(s=s0 - step, gamma=g0)) / (2 * eps)
        assert ds[i] == pytest.approx(numeric, rel=1e-4, abs=1e-6)
    numeric = (loss(s=s0, gamma=g0 + eps) - loss(s=s0, gamma=g0 - eps)) / (2 * eps)
    assert dgamma[0] == pytest.approx(numeric, rel=1e-4)
    mix.set_param("s", s0)
    mix.set_param("gamma", g0)
    for index in [(0, 1, 2), (2, 4, 0), (0, 3, 1), (1, 0, 3)]:
        step = numpy.zeros_like(X)
        step[index] = eps
        numeric = (loss(X_=X + step) - loss(X_=X - step)) / (2 * eps)
        assert dX[index] == pytest.approx(numeric, rel=1e-4, abs=1e-6)


def test_layer_dropout_keeps_a_layer_and_renormalises():
    mix = ScalarMix(layer_dropout=0.9)
    X = numpy.stack([numpy.full((2, 3), float(j)) for j in range(4)]).astype("f")
    mix.initialize(X=X)
    numpy.random.seed(0)
    for _ in range(20):
        Y, _ = mix(X, is_train=True)
        # Each output is an average of some kept layers' values: within [0, 3] and not NaN.
        assert numpy.isfinite(Y).all() and Y.min() >= 0 and Y.max() <= 3
    assert numpy.allclose(mix.predict(X), 1.5)  # no dropout at prediction


@pytest.mark.parametrize("layer", [0, 1, 2])
def test_fixed_layer_passes_one_layer_and_learns_only_gamma(layer):
    mix, X = make(layer=layer)
    s_before = mix.get_param("s").copy()
    Y, backprop = mix(X, is_train=True)
    numpy.testing.assert_allclose(Y, 1.3 * X[layer], rtol=1e-6)
    dY = numpy.random.default_rng(2).normal(size=Y.shape)
    dX = backprop(dY)
    numpy.testing.assert_allclose(dX[layer], 1.3 * dY, rtol=1e-6)
    assert not numpy.any(numpy.delete(dX, layer, axis=0))
    assert not mix.has_grad("s") or not numpy.any(mix.get_grad("s"))
    numpy.testing.assert_allclose(mix.get_grad("gamma"), [(dY * X[layer]).sum()], rtol=1e-6)
    assert numpy.array_equal(mix.get_param("s"), s_before)
    from spacy_elmo.models.scalar_mix import mix_weights

    assert mix_weights(mix).tolist() == [float(j == layer) for j in range(3)]


def test_average_is_the_plain_mean_of_the_layers_and_learns_only_gamma():
    from spacy_elmo.models.scalar_mix import mix_weights

    mix, X = make(average=True)  # s is set away from uniform: it must not count
    Y, backprop = mix(X, is_train=True)
    numpy.testing.assert_allclose(Y, 1.3 * X.mean(axis=0), rtol=1e-6)
    dY = numpy.random.default_rng(3).normal(size=Y.shape)
    dX = backprop(dY)
    for j in range(3):
        numpy.testing.assert_allclose(dX[j], 1.3 * dY / 3, rtol=1e-6)
    assert not mix.has_grad("s") or not numpy.any(mix.get_grad("s"))
    numpy.testing.assert_allclose(mix.get_grad("gamma"), [(dY * X.mean(axis=0)).sum()], rtol=1e-6)
    numpy.testing.assert_allclose(mix_weights(mix), [1 / 3] * 3, rtol=1e-6)


def test_average_and_a_fixed_layer_together_are_a_coded_error():
    from spacy_elmo.errors import ElmoError

    with pytest.raises(ElmoError, match="E411.*set one of them"):
        ScalarMix(layer=1, average=True)


def test_fixed_layer_out_of_range_is_a_coded_error():
    from spacy_elmo.errors import ElmoError

    with pytest.raises(ElmoError, match="E408"):
        ScalarMix(layer=3).initialize(X=numpy.ones((3, 2, 4), dtype="f"))


def test_layer_norm_normalises_each_layer_over_the_whole_batch():
    """As bilm-tf and AllenNLP do: one mean and one variance per layer, over
    every token and every dimension of that layer."""
    mix, X = make(layer_norm=True)
    X = X * numpy.arange(1, 6)[None, :, None] + numpy.arange(5)[None, :, None]  # tokens on different scales
    mean = X.mean(axis=(1, 2), keepdims=True)
    var = ((X - mean) ** 2).mean(axis=(1, 2), keepdims=True)
    normalised = (X - mean) / numpy.sqrt(var + 1e-12)
    weights = numpy.exp([0.3, -0.2, 0.5]) / numpy.exp([0.3, -0.2, 0.5]).sum()
    want = 1.3 * numpy.tensordot(weights, normalised, axes=1)
    numpy.testing.assert_allclose(mix.predict(X), want, rtol=1e-10, atol=1e-12)
    # A token's own features are no longer normalised on their own.
    assert not numpy.allclose(normalised.mean(axis=2), 0.0)
