"""An exported model folder edited or damaged by hand: pretrain.json and
softmax.hdf5 are checked before anything is built from them, and each fault is
a coded error that names the file and the field."""
import re
import shutil

import h5py
import numpy
import pytest
import torch

from spacy_elmo.errors import DamagedFileError
from spacy_elmo.training import PretrainConfig, SoftmaxHead, perplexity, pretrain
from spacy_elmo.training.objective.softmax import parameter_shapes

from .conftest import tiny_settings, write_corpus


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A model exported by a two-step run, and the text it was trained on."""
    path = tmp_path_factory.mktemp("model")
    text = write_corpus(path / "train.txt", 50)
    threads = torch.get_num_threads()
    pretrain(PretrainConfig.from_dict(tiny_settings(text, training={"max_steps": 2})), path / "run", progress=False)
    torch.set_num_threads(threads)
    return path / "run" / "model", text


@pytest.fixture
def model_copy(tmp_path, exported):
    model, _ = exported
    return shutil.copytree(model, tmp_path / "model")


def set_attribute(model, name, value):
    with h5py.File(model / "softmax.hdf5", "a") as f:
        f.attrs[name] = value


@pytest.mark.parametrize("content,field,found", [
    ('{"tokenizer": "spacy-elmo.WhitespaceTokenizer.v1", "max_len', "the file", "unreadable"),
    ("[1, 2]", "the file", "[1, 2]"),
    ('{"tokenizer": "spacy-elmo.WhitespaceTokenizer.v1", "max_length": -1}', "'max_length'", "-1"),
    ('{"tokenizer": "spacy-elmo.WhitespaceTokenizer.v1", "max_length": "abc"}', "'max_length'", '"abc"'),
    ('{"tokenizer": "spacy-elmo.WhitespaceTokenizer.v1", "max_length": null}', "'max_length'", "null"),
    ('{"tokenizer": "spacy-elmo.WhitespaceTokenizer.v1", "max_length": 2.5}', "'max_length'", "2.5"),
    ('{"tokenizer": 7, "max_length": 20}', "'tokenizer'", "7"),
])
def test_a_damaged_pretrain_json_is_named_with_its_field(model_copy, exported, content, field, found):
    (model_copy / "pretrain.json").write_text(content, encoding="utf8")
    expected = rf"E325.*'{re.escape(str(model_copy / 'pretrain.json'))}'.*: {re.escape(field)} is {re.escape(found)}"
    with pytest.raises(DamagedFileError, match=expected):
        perplexity(model_copy, exported[1])


@pytest.mark.parametrize("name,value,field", [
    ("n_classes", 10**13, None),  # E305: the datasets' shapes, before building a 640 TB softmax
    ("n_classes", -5, "n_classes"),
    ("n_classes", 2.5, "n_classes"),
    ("in_dim", 0, "in_dim"),
    ("kind", "sparse", "kind"),
    ("cutoffs", numpy.array([3]), "cutoffs"),  # a full softmax has none
    ("div_value", float("nan"), "div_value"),
])
def test_a_damaged_softmax_is_named_before_anything_is_built(model_copy, exported, name, value, field):
    set_attribute(model_copy, name, value)
    path = re.escape(str(model_copy / "softmax.hdf5"))
    if field is None:
        expected = rf"E305.*'{path}'.*'linear.weight' should have shape \({value}, 16\), found \(\d+, 16\)"
    else:
        expected = rf"E325.*'{path}'.*the attribute '{field}' is"
    with pytest.raises(DamagedFileError, match=expected):
        perplexity(model_copy, exported[1])


def test_no_softmax_is_built_before_its_datasets_are_found_to_fit(model_copy, exported, monkeypatch):
    set_attribute(model_copy, "n_classes", 4 * 10**7)  # 2.6 GB of weights, were it built
    build = SoftmaxHead.__init__

    def small_only(self, in_dim, n_classes, *args, **kwargs):
        assert n_classes < 10**6, f"a softmax of {n_classes:,} words was built before the file was checked"
        build(self, in_dim, n_classes, *args, **kwargs)

    monkeypatch.setattr(SoftmaxHead, "__init__", small_only)
    with pytest.raises(DamagedFileError, match=r"E305.*'linear.weight' should have shape \(40000000, 16\)"):
        perplexity(model_copy, exported[1])


@pytest.mark.parametrize("cutoffs", [[20, 10], [0, 10], [10, 10_000], [10, 10]])
def test_adaptive_cutoffs_out_of_order_or_range_are_named(tmp_path, cutoffs):
    SoftmaxHead(16, 100, kind="adaptive", cutoffs=[10, 20]).save(tmp_path / "softmax.hdf5")
    set_attribute(tmp_path, "cutoffs", numpy.asarray(cutoffs))
    with pytest.raises(DamagedFileError, match=rf"E325.*the attribute 'cutoffs' is {re.escape(str(cutoffs))}, "
                                               r"expected whole numbers rising from 1 to below n_classes \(100\)"):
        SoftmaxHead.load(tmp_path / "softmax.hdf5")


def test_a_softmax_dataset_of_text_is_named(tmp_path):
    SoftmaxHead(16, 10).save(tmp_path / "softmax.hdf5")
    with h5py.File(tmp_path / "softmax.hdf5", "a") as f:
        del f["linear.bias"]
        f["linear.bias"] = numpy.array([b"x"] * 10)
    with pytest.raises(DamagedFileError, match=r"E325.*the dataset 'linear.bias' is of type \|S1"):
        SoftmaxHead.load(tmp_path / "softmax.hdf5")


def test_init_from_a_model_with_a_damaged_softmax_is_a_coded_error(tmp_path, model_copy, tiny_config):
    set_attribute(model_copy, "kind", "adaptive")
    set_attribute(model_copy, "cutoffs", numpy.array([20, 10]))
    with pytest.raises(DamagedFileError, match=rf"E325.*'{re.escape(str(model_copy / 'softmax.hdf5'))}'.*"
                                               r"the attribute 'cutoffs' is \[20, 10\]"):
        pretrain(tiny_config(training={"max_steps": 2}), tmp_path / "run", init_from=model_copy, progress=False)


@pytest.mark.parametrize("settings", [
    {"kind": "full", "cutoffs": []},
    {"kind": "adaptive", "cutoffs": [5]},
    {"kind": "adaptive", "cutoffs": [5, 20, 60], "div_value": 2.0},
    {"kind": "adaptive", "cutoffs": [5, 20], "div_value": 40.0},  # a tail of width 0
])
@pytest.mark.filterwarnings("ignore:Initializing zero-element tensors")
def test_the_shapes_checked_before_loading_are_those_torch_builds(tmp_path, settings):
    settings = {"div_value": 4.0, **settings}
    head = SoftmaxHead(16, 100, **settings)
    assert parameter_shapes(16, 100, **settings) == {name: tuple(p.shape) for name, p in head.state_dict().items()}
    head.save(tmp_path / "softmax.hdf5")
    loaded = SoftmaxHead.load(tmp_path / "softmax.hdf5")
    assert loaded.same_shape(head)
    for name, value in head.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], value)
        assert loaded.state_dict()[name].device.type == "cpu"
    assert all(p.requires_grad for p in loaded.parameters())
