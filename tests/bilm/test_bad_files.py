import json
import shutil

import h5py
import numpy
import pytest
import torch

from spacy_elmo.bilm import BiLM, batch_to_ids
from spacy_elmo.bilm import model as bilm_model
from spacy_elmo.bilm.options import BiLMOptions
from spacy_elmo.errors import ElmoError


@pytest.fixture
def copied(tmp_path, fixture_paths):
    options, weights = fixture_paths
    shutil.copy(options, tmp_path / "options.json")
    shutil.copy(weights, tmp_path / "weights.hdf5")
    return tmp_path / "options.json", tmp_path / "weights.hdf5"


def edit_options(path, edit):
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def test_missing_weights_file(copied):
    options, weights = copied
    with pytest.raises(ElmoError, match=r"E001.*nope\.hdf5"):
        BiLM.from_allennlp(options, weights.parent / "nope.hdf5")


def test_missing_options_file(copied):
    with pytest.raises(ElmoError, match=r"E001.*options"):
        BiLM.from_allennlp(copied[0].parent / "missing.json", copied[1])


def test_truncated_weights_file(copied):
    options, weights = copied
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    with pytest.raises(ElmoError, match=r"E001.*weights\.hdf5"):
        BiLM.from_allennlp(options, weights)


def test_missing_dataset(copied):
    options, weights = copied
    with h5py.File(weights, "a") as f:
        del f["CNN_high_1/W_carry"]
    with pytest.raises(ElmoError, match=r"E004.*CNN_high_1/W_carry"):
        BiLM.from_allennlp(options, weights)


@pytest.mark.parametrize("key", ["lstm.dim", "char_cnn.filters", "char_cnn.embedding.dim", "lstm.use_skip_connections"])
def test_options_missing_a_key(copied, key):
    options, weights = copied
    *parents, last = key.split(".")

    def drop(data):
        node = data
        for part in parents:
            node = node[part]
        del node[last]

    edit_options(options, drop)
    with pytest.raises(ElmoError, match=rf"E002.*'{key}'"):
        BiLM.from_allennlp(options, weights)


@pytest.mark.parametrize(
    "section,key,value",
    [
        ("lstm", "dim", "64"),
        ("lstm", "n_layers", 2.5),
        ("char_cnn", "activation", "gelu"),
        ("char_cnn", "filters", [[1, "4"]]),
        ("char_cnn", "n_characters", 300),
        ("lstm", "use_skip_connections", "yes"),
    ],
)
def test_options_with_a_wrong_type(copied, section, key, value):
    options, weights = copied
    edit_options(options, lambda d: d[section].__setitem__(key, value))
    with pytest.raises(ElmoError, match=rf"E003.*{key}.*found"):
        BiLM.from_allennlp(options, weights)


def test_weights_contradicting_the_options(copied):
    options, weights = copied
    edit_options(options, lambda d: d["lstm"].__setitem__("dim", 32))
    with pytest.raises(ElmoError, match=r"E005.*W_0.*\(32, 256\).*\(32, 128\)"):
        BiLM.from_allennlp(options, weights)


def test_weights_that_do_not_fit_the_options_are_refused_before_the_model_is_built(copied, monkeypatch):
    options, weights = copied
    # 600 million parameters (2.4 GB to build), within the limit, beside the fixture's tiny weights.
    edit_options(options, lambda d: d["lstm"].update(dim=8192, projection_dim=2048))
    assert BiLMOptions.from_file(options).n_parameters > 600_000_000

    def never_built(*args, **kwargs):
        raise AssertionError("a part of the biLM was built before its weights were checked")

    monkeypatch.setattr(bilm_model, "CharCNNTokenEncoder", never_built)
    monkeypatch.setattr(bilm_model, "BiLSTMStack", never_built)
    with pytest.raises(ElmoError, match=r"E005.*'CNN_proj/W_proj' has shape \(124, 16\), expected \(124, 2048\)"):
        BiLM.from_allennlp(options, weights)


def test_directory_without_weights(tmp_path):
    with pytest.raises(ElmoError, match="E006"):
        BiLM.from_allennlp(tmp_path)


def test_bad_char_ids(fixture_paths):
    model = BiLM.from_allennlp(*fixture_paths)
    with pytest.raises(ElmoError, match=r"E101.*batch_to_ids\(sentences, max_chars=50\)"):
        model(torch.zeros(2, 3, 49, dtype=torch.long))
    with pytest.raises(ElmoError, match="E101"):
        model(torch.zeros(2, 3, 50))
    ids = batch_to_ids([["a"]])
    ids[0, 0, 3] = 999
    with pytest.raises(ElmoError, match="E102.*999"):
        model(ids)
    with pytest.raises(ElmoError, match="E101.*uint8"):  # 8 bits cannot hold the ids above 255
        model(batch_to_ids([["a"]]).to(torch.uint8))


@pytest.mark.parametrize(
    "make,found",
    [
        (lambda ids: ids.roll(1, dims=1), "a token after padding in row 1"),  # left-padded
        (
            lambda ids: torch.cat([ids[:, :1], torch.zeros_like(ids[:, :1]), ids[:, 1:]], dim=1),
            "after padding in row 0",
        ),
        (lambda ids: torch.cat([ids[:1], ids[1:].index_fill(2, torch.tensor([5]), 7)]), "holding other ids in row 1"),
    ],
)
def test_char_ids_that_are_not_tokens_then_padding(fixture_paths, make, found):
    # What batch_to_ids never makes: a token behind a padding slot would be read as
    # another row's </S> slot, a padding slot's ids dropped.
    ids = batch_to_ids([["a", "b"], ["c"]])
    assert ids.shape[1] == 2
    with pytest.raises(ElmoError, match=f"E108.*{found}"):
        BiLM.from_allennlp(*fixture_paths)(make(ids))


def test_empty_batch_and_empty_sentences(fixture_paths):
    model = BiLM.from_allennlp(*fixture_paths).eval()
    with torch.inference_mode():
        assert model(batch_to_ids([])).layers.shape == (3, 0, 0, 32)
        out = model(batch_to_ids([[], []]))
        assert out.layers.shape == (3, 2, 0, 32)
        out = model(batch_to_ids([[], [" ", "", "\ud800", "🙂" * 200]]))
    assert out.layers.shape == (3, 2, 4, 32)
    assert torch.isfinite(out.layers).all()
    assert (out.layers[:, 0] == 0).all()


def test_directory_with_allennlp_file_names(tmp_path, fixture_paths):
    shutil.copy(fixture_paths[0], tmp_path / "elmo_2x4096_512_2048cnn_2xhighway_options.json")
    shutil.copy(fixture_paths[1], tmp_path / "elmo_2x4096_512_2048cnn_2xhighway_weights.hdf5")
    model = BiLM.from_allennlp(tmp_path)
    assert model.options.lstm_dim == 64
    shutil.copy(fixture_paths[1], tmp_path / "other_weights.hdf5")  # two candidates: ambiguous
    with pytest.raises(ElmoError, match="E006"):
        BiLM.from_allennlp(tmp_path)


@pytest.mark.parametrize(
    "section,key,value,dataset",
    [("char_cnn", "n_highway", 1, "CNN_high_1/"), ("lstm", "n_layers", 1, "RNN_0/RNN/MultiRNNCell/Cell1/")],
)
def test_options_describing_fewer_layers_than_the_weights_are_refused(copied, section, key, value, dataset):
    options, weights = copied
    edit_options(options, lambda d: d[section].__setitem__(key, value))
    with pytest.raises(ElmoError, match=rf"E501.*'{dataset}.*'{section}\.{key}'"):
        BiLM.from_allennlp(options, weights)


def test_a_dataset_outside_the_layout_is_refused(copied):
    options, weights = copied
    with h5py.File(weights, "a") as f:
        f.create_dataset("softmax/W", data=numpy.zeros((3, 16), dtype="float32"))
    with pytest.raises(ElmoError, match=r"E501.*'softmax/W'.*not part of the bilm-tf layout"):
        BiLM.from_allennlp(options, weights)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_weights_that_are_not_finite_are_refused(copied, value):
    options, weights = copied
    with h5py.File(weights, "a") as f:
        f["RNN_1/RNN/MultiRNNCell/Cell0/LSTMCell/W_0"][3, 5] = value
    dataset = "RNN_1/RNN/MultiRNNCell/Cell0/LSTMCell/W_0"
    with pytest.raises(ElmoError, match=rf"E502.*weights\.hdf5.*'{dataset}' holds 1 NaN"):
        BiLM.from_allennlp(options, weights)


def test_a_clip_that_is_not_finite_is_refused(copied):
    options, weights = copied
    options.write_text(options.read_text().replace('"cell_clip": 3', '"cell_clip": NaN'))
    with pytest.raises(ElmoError, match=r"E003.*lstm\.cell_clip.*finite"):
        BiLM.from_allennlp(options, weights)


@pytest.mark.parametrize("key,value", [("cell_clip", -3), ("proj_clip", -1), ("cell_clip", -0.5)])
def test_a_negative_clip_is_refused(copied, key, value):
    options, weights = copied
    edit_options(options, lambda d: d["lstm"].__setitem__(key, value))
    with pytest.raises(ElmoError, match=rf"E003.*'lstm\.{key}'.*>= 0.*found {value}"):
        BiLM.from_allennlp(options, weights)


@pytest.mark.parametrize("key", ["cell_clip", "proj_clip"])
def test_a_clip_of_zero_or_null_means_no_clipping(copied, key):
    options, weights = copied
    sentences = [["The", "cat", "sat", "on", "the", "mat", "."]]
    outputs = []
    for value in (0, None, 1e30):
        edit_options(options, lambda d: d["lstm"].__setitem__(key, value))
        with torch.no_grad():
            outputs.append(BiLM.from_allennlp(options, weights)(batch_to_ids(sentences)).layers)
    assert torch.equal(outputs[0], outputs[1]) and torch.equal(outputs[0], outputs[2])


NUMBERS = [
    ("char_cnn", "embedding.dim"),
    ("char_cnn", "n_highway"),
    ("char_cnn", "max_characters_per_token"),
    ("lstm", "dim"),
    ("lstm", "projection_dim"),
    ("lstm", "n_layers"),
    ("lstm", "cell_clip"),
    ("lstm", "proj_clip"),
]


@pytest.mark.parametrize("section,key", NUMBERS)
@pytest.mark.parametrize("text", ["1e400", "-1e400", "NaN", "true", '"3"', "[3]"])
def test_a_number_option_that_is_not_a_sane_number_is_a_coded_error(copied, section, key, text):
    options, weights = copied
    data = json.loads(options.read_text())
    node = data[section]
    *parents, last = key.split(".")
    for part in parents:
        node = node[part]
    node[last] = "@VALUE@"
    options.write_text(json.dumps(data).replace('"@VALUE@"', text))
    with pytest.raises(ElmoError, match=rf"E003.*'{section}\.{key}': expected .*, found"):
        BiLM.from_allennlp(options, weights)


@pytest.mark.parametrize(
    "section,key,value",
    [
        ("char_cnn", "max_characters_per_token", 10**12),
        ("char_cnn", "max_characters_per_token", 1025),
        ("char_cnn", "n_highway", 10**9),
        ("char_cnn", "n_highway", -1),
        ("lstm", "n_layers", 65),
        ("lstm", "dim", 10**9),
        ("lstm", "projection_dim", 0),
        ("char_cnn", "filters", [[1, 10**9]]),
        ("char_cnn", "filters", [[1, 4]] * 65),
        ("char_cnn", "filters", [[1, 4, 5]]),
    ],
)
def test_a_size_out_of_bounds_is_refused_before_anything_is_built(copied, section, key, value):
    options, weights = copied
    edit_options(options, lambda d: d[section].__setitem__(key, value))
    with pytest.raises(ElmoError, match=rf"E003.*'{section}\.{key}.*': expected .*, found"):
        BiLM.from_allennlp(options, weights)


def test_a_model_too_large_to_build_is_refused(copied):
    options, weights = copied
    # Every size within its bounds, but together 2 * 64 LSTM layers of 65536 cells.
    edit_options(options, lambda d: d["lstm"].update(dim=65536, projection_dim=65536, n_layers=64))
    with pytest.raises(ElmoError, match=r"E007.*options\.json.*GiB in float32"):
        BiLM.from_allennlp(options, weights)


def test_unknown_keys_of_bilm_tf_are_ignored(copied):
    options, weights = copied
    edit_options(options, lambda d: (d.update(n_epochs=10, unroll_steps=20), d["lstm"].update(dropout=0.1)))
    assert BiLM.from_allennlp(options, weights).options.lstm_dim == 64


BIAS = "CNN/b_cnn_0"  # shape (4,)
LOOP = "a loop of soft links, or a chain of more than HDF5 follows"


def replace_dataset(weights, name, make):
    """Put what `make(file, old_value)` returns in place of the dataset `name`."""
    with h5py.File(weights, "a") as f:
        value = f[name][...]
        del f[name]
        made = make(f, value)
        if made is not None:
            f[name] = made


def layers_of(options, weights):
    with torch.no_grad():
        return BiLM.from_allennlp(options, weights)(batch_to_ids([["The", "cat", "sat", "."]])).layers


@pytest.mark.parametrize(
    "make,message",
    [
        (lambda f, v: numpy.array([b"1.0"] * len(v), dtype=object), r"E009.*'CNN/b_cnn_0' as strings"),
        (lambda f, v: v.astype(numpy.complex64), r"E009.*'CNN/b_cnn_0' as complex64.*complex numbers"),
        (lambda f, v: v > 0, r"E009.*'CNN/b_cnn_0' as bool"),
        (lambda f, v: numpy.array([(x, x) for x in v], dtype=[("a", "f4"), ("b", "f4")]), r"E009.*'CNN/b_cnn_0'"),
        (lambda f, v: numpy.full(v.shape, 1e300), r"E009.*'CNN/b_cnn_0' as float64.*float32 range"),
        (lambda f, v: f.create_group("CNN/b_cnn_0") and None, r"E004.*'CNN/b_cnn_0'"),
        (lambda f, v: h5py.SoftLink("/nowhere"), r"E008.*'CNN/b_cnn_0' to '/nowhere'"),
        (lambda f, v: h5py.SoftLink("/CNN/b_cnn_0"), rf"E008.*'CNN/b_cnn_0' to '/CNN/b_cnn_0' \({LOOP}\)"),
        (
            lambda f, v: f.__setitem__("other", h5py.SoftLink("/CNN/b_cnn_0")) or h5py.SoftLink("/other"),
            rf"E008.*'CNN/b_cnn_0' to '/other' \({LOOP}\)",
        ),
        (lambda f, v: h5py.ExternalLink("missing.h5", "/b"), r"E012.*'CNN/b_cnn_0' from the file 'missing\.h5'"),
    ],
    ids=[
        "strings",
        "complex",
        "bool",
        "compound",
        "beyond-float32",
        "group",
        "dangling-soft-link",
        "soft-link-to-itself",
        "soft-links-in-a-loop",
        "dangling-external-link",
    ],
)
def test_a_dataset_that_is_not_real_numbers_or_not_reachable_is_a_coded_error(copied, make, message):
    options, weights = copied
    replace_dataset(weights, BIAS, make)
    with pytest.raises(ElmoError, match=rf"{message}") as caught:
        BiLM.from_allennlp(options, weights)
    assert "weights.hdf5" in str(caught.value)


@pytest.mark.parametrize(
    "make,found",
    [
        (lambda f, v: numpy.array([b"x"], dtype=object), r"\(1,\)"),
        (lambda f, v: h5py.Empty("f4"), "None"),
        (lambda f, v: numpy.float32(1), r"\(\)"),
    ],
    ids=["strings", "empty", "scalar"],
)
def test_a_dataset_of_the_wrong_shape_is_a_shape_error(copied, make, found):
    options, weights = copied
    replace_dataset(weights, BIAS, make)
    with pytest.raises(ElmoError, match=rf"E005.*'CNN/b_cnn_0' has shape {found}, expected \(4,\)"):
        BiLM.from_allennlp(options, weights)


@pytest.mark.parametrize("dtype", ["float16", "float64", "int8", "int32", "uint16", "int64"])
def test_integer_and_other_float_datasets_are_read_as_float32(copied, dtype):
    """Integers and float16 are exact in float32; float64 rounds to the nearest float32."""
    options, weights = copied
    replace_dataset(weights, BIAS, lambda f, v: numpy.abs(numpy.round(v * 10)))  # small naturals: exact in each dtype
    expected = layers_of(options, weights)
    replace_dataset(weights, BIAS, lambda f, v: v.astype(dtype))
    assert torch.equal(layers_of(options, weights), expected)


def test_a_float64_dataset_is_rounded_to_float32(copied):
    options, weights = copied
    replace_dataset(weights, BIAS, lambda f, v: v.astype(numpy.float64) + 1e-12)
    assert torch.isfinite(layers_of(options, weights)).all()


@pytest.mark.parametrize("where", [BIAS, "CNN", "unused"])
def test_an_external_link_is_refused_even_where_it_resolves(copied, where):
    """A weights file must not make HDF5 open other paths: an external link is
    refused wherever it is, before any is followed."""
    options, weights = copied
    with h5py.File(weights.parent / "part.h5", "w") as part, h5py.File(weights, "a") as f:
        f.copy(f["CNN"], part, "CNN")
        part["bias"] = f[BIAS][...]
        if where == "unused":
            f["unused"] = h5py.ExternalLink("part.h5", "/bias")
        else:
            del f[where]
            f[where] = h5py.ExternalLink("part.h5", "/bias" if where == BIAS else "/CNN")
    with pytest.raises(ElmoError, match=rf"E012.*weights\.hdf5' takes '{where}' from the file 'part\.h5'"):
        BiLM.from_allennlp(options, weights)


def external_storage(f, value):
    """`value` as a dataset whose data lies in a raw file beside the weights."""
    raw = f.filename.replace("weights.hdf5", "bias.bin")
    value.astype("<f4").tofile(raw)
    f.create_dataset(BIAS, shape=value.shape, dtype="<f4", external=[(raw, 0, value.nbytes)])


def virtual_dataset(f, value):
    """`value` as a virtual dataset over another HDF5 file."""
    other = f.filename.replace("weights.hdf5", "part.h5")
    with h5py.File(other, "w") as part:
        part["bias"] = value
    layout = h5py.VirtualLayout(shape=value.shape, dtype=value.dtype)
    layout[:] = h5py.VirtualSource(other, "bias", shape=value.shape)
    f.create_virtual_dataset(BIAS, layout)


@pytest.mark.parametrize(
    "make,source",
    [
        (external_storage, r"the raw file\(s\) '.*bias\.bin' \(external storage\)"),
        (virtual_dataset, r"the file\(s\) '.*part\.h5' \(a virtual dataset\)"),
    ],
    ids=["external-storage", "virtual-dataset"],
)
def test_a_dataset_whose_data_is_in_other_files_is_refused(copied, make, source):
    options, weights = copied
    replace_dataset(weights, BIAS, make)
    with pytest.raises(ElmoError, match=rf"E012.*takes '{BIAS}' from {source}"):
        BiLM.from_allennlp(options, weights)


@pytest.mark.parametrize(
    "link,target",
    [
        ("/gone", "'/gone'"),
        ("/CNN", rf"'/CNN' \({LOOP}\)"),
    ],
    ids=["dangling", "loop"],
)
def test_a_soft_link_on_the_way_to_a_dataset_that_does_not_resolve_is_named(copied, link, target):
    options, weights = copied
    with h5py.File(weights, "a") as f:
        del f["CNN"]
        f["CNN"] = h5py.SoftLink(link)
    with pytest.raises(ElmoError, match=rf"E008.*'CNN/W_cnn_0' to {target} \(through the link 'CNN'\)"):
        BiLM.from_allennlp(options, weights)
