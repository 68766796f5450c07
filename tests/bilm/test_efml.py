"""ELMoForManyLangs' models: our biLM gives the layers its own code gives, for
a random-weight model built and saved with its own classes (its last release,
fetched from PyPI at run time and unpacked, never installed), and gives them deterministically,
which its code does not; the converted folder reads no pickle."""

import json
import logging
import shutil

import numpy
import pytest
import torch

from spacy_elmo.bilm.char_ids import batch_to_ids
from spacy_elmo.bilm.conversion import convert_efml, load_efml
from spacy_elmo.bilm.efml import CHAR_TABLE_NAME, read_efml
from spacy_elmo.bilm.model import BiLM
from spacy_elmo.errors import DamagedFileError, OutputError

from .efml_reference import build_efml_model, efml_importable

# Words of the word table and not, non-ASCII letters, characters not in the
# character table (emoji, Cyrillic but for Ж, a lone surrogate), U+3000 (a
# table line of one field), and tokens longer than the limit of 8 code points
# (far longer in UTF-8 bytes).
SENTENCES = [
    ["the", "cat", "sat"],
    ["straße", "über", "中文", "Ж", "ß", "Жизнь"],
    ["😀", "a\u3000b", "dog", "\ud800x"],
    ["éééééééééééé", "abcdefghijklmnop", "中文中文中文中文中文", "cat"],
    ["a"],
]
OTHER_SENTENCES = [["ab", "ab", "über"], ["the", "dog"], ["zzz"] * 7]


@pytest.fixture(scope="module")
def efml(tmp_path_factory):
    """(the folder of a random-weight ELMoForManyLangs model, its Embedder class)."""
    where = tmp_path_factory.mktemp("efml")
    with efml_importable(where / "site"):
        logging.getLogger("elmoformanylangs").setLevel(logging.WARNING)
        folder = build_efml_model(where / "model")
        from elmoformanylangs import Embedder

        yield folder, Embedder


def _by_sentence(layers: torch.Tensor, sentences) -> list:
    """(n_layers, n_tokens, width) -> each sentence's (n_layers, its tokens, width)."""
    ends = numpy.cumsum([len(s) for s in sentences])[:-1]
    return numpy.split(layers.numpy(), ends, axis=1)


def _assert_parity(ours: list, theirs: list) -> None:
    """Each layer within 1e-5 of that layer's largest value, over all tokens."""
    ours_all, theirs_all = numpy.concatenate(ours, axis=1), numpy.concatenate(theirs, axis=1)
    assert ours_all.shape == theirs_all.shape
    for layer in range(ours_all.shape[0]):
        scale = numpy.abs(theirs_all[layer]).max()
        assert scale > 0.1  # the layers are not near zero: the tolerance means something
        assert numpy.abs(ours_all[layer] - theirs_all[layer]).max() <= 1e-5 * scale, layer


def test_the_layers_equal_elmoformanylangs_own_on_a_first_batch(efml):
    folder, Embedder = efml
    embedder = Embedder(str(folder))
    embedder.sents2elmo(OTHER_SENTENCES, output_layer=-2)
    embedder.model.encoder.reset_states()  # a first batch: every sentence from the zero state
    theirs = embedder.sents2elmo(SENTENCES, output_layer=-2)
    with torch.no_grad():
        ours = _by_sentence(load_efml(folder).encode_words(SENTENCES), SENTENCES)
    _assert_parity(ours, theirs)


def test_the_converted_folder_gives_the_same_layers_without_a_pickle(efml, tmp_path, monkeypatch):
    folder, _ = efml
    loaded_model = load_efml(folder)
    with torch.no_grad():
        loaded = loaded_model.encode_words(SENTENCES)
    convert_efml(folder, tmp_path / "converted")
    assert sorted(p.name for p in (tmp_path / "converted").iterdir()) == [
        "chars.json",
        "options.json",
        "weights.hdf5",
        "words.json",
    ]

    def no_pickles(*args, **kwargs):
        raise AssertionError("a pickle was read")

    monkeypatch.setattr("spacy_elmo.bilm.safe_pickle.read_state_dict", no_pickles)
    monkeypatch.setattr("spacy_elmo.bilm.efml.read_state_dict", no_pickles)
    converted = BiLM.from_allennlp(tmp_path / "converted")
    with torch.no_grad():
        assert torch.equal(converted.encode_words(SENTENCES), loaded)
    assert converted.options == loaded_model.options


def test_a_sentence_gets_the_same_bits_alone_in_a_batch_and_after_others(efml, threads):
    folder, _ = efml
    model = load_efml(folder)
    with torch.no_grad():
        alone = [model.encode_words([sentence]).numpy() for sentence in SENTENCES]
        model.encode_words(OTHER_SENTENCES)
        batch = OTHER_SENTENCES + SENTENCES[::-1]
        in_batch = _by_sentence(model.encode_words(batch), batch)[len(OTHER_SENTENCES) :][::-1]
        after = [model.encode_words([sentence]).numpy() for sentence in SENTENCES]
    for sentence, layers, batched, later in zip(SENTENCES, alone, in_batch, after):
        assert numpy.array_equal(batched, layers) and numpy.array_equal(later, layers), sentence


def test_elmoformanylangs_gives_a_sentence_other_vectors_after_others(efml):
    # It carries its LSTM state over from one batch to the next.
    folder, Embedder = efml
    embedder = Embedder(str(folder))
    first = embedder.sents2elmo([SENTENCES[1]], output_layer=-2)[0]
    again = embedder.sents2elmo([SENTENCES[1]], output_layer=-2)[0]
    assert not numpy.allclose(first, again, atol=1e-3)


def test_a_folder_without_its_files_is_e902(efml, tmp_path):
    folder, _ = efml
    partial = tmp_path / "partial"
    partial.mkdir()
    for name in ("config.json", "arch.json", "word.dic", "token_embedder.pkl", "encoder.pkl"):
        (partial / name).write_bytes((folder / name).read_bytes())
    with pytest.raises(DamagedFileError, match=f"E902.*{CHAR_TABLE_NAME}"):
        load_efml(partial)


def test_another_architecture_is_e902(efml, tmp_path):
    folder, _ = efml
    other = tmp_path / "lstm"
    shutil.copytree(folder, other)
    architecture = json.loads((other / "arch.json").read_text())
    architecture["token_embedder"]["name"] = "lstm"
    (other / "arch.json").write_text(json.dumps(architecture))
    with pytest.raises(DamagedFileError, match="E902.*'lstm' token embedder"):
        read_efml(other)


def test_a_table_whose_ids_skip_one_is_e903(efml, tmp_path):
    folder, _ = efml
    broken = tmp_path / "broken"
    shutil.copytree(folder, broken)
    lines = (broken / "char.dic").read_text(encoding="utf8").splitlines()
    entry, _ = lines[0].split("\t") if "\t" in lines[0] else ("\u3000", lines[0])
    lines[0] = f"{entry}\t{len(lines) + 5}"
    (broken / "char.dic").write_text("\n".join(lines) + "\n", encoding="utf8")
    with pytest.raises(DamagedFileError, match="E903.*char.dic"):
        read_efml(broken)


def test_converting_over_a_model_is_e202(efml, tmp_path):
    folder, _ = efml
    (tmp_path / "weights.hdf5").write_bytes(b"someone's weights")
    with pytest.raises(OutputError, match="E202"):
        convert_efml(folder, tmp_path)
    assert (tmp_path / "weights.hdf5").read_bytes() == b"someone's weights"


def test_the_folder_loads_where_a_model_folder_does_and_forward_gives_the_same_layers(efml):
    folder, _ = efml
    model = BiLM.from_allennlp(folder)
    scheme = model.token_encoder.token_ids
    with torch.no_grad():
        by_words = model.encode_words(SENTENCES)
        output = model.forward(batch_to_ids(SENTENCES, scheme=scheme))
    assert output.layers.shape[3] == 16 and scheme.width == 10 + 1  # characters, then the word id
    assert torch.equal(output.layers[:, output.mask], by_words)
    with torch.no_grad():
        assert torch.equal(load_efml(folder).encode_words(SENTENCES), by_words)


def test_an_architecture_without_a_setting_is_e902(efml, tmp_path):
    folder, _ = efml
    other = tmp_path / "other"
    shutil.copytree(folder, other)
    architecture = json.loads((other / "arch.json").read_text())
    del architecture["token_embedder"]["filters"]
    (other / "arch.json").write_text(json.dumps(architecture))
    with pytest.raises(DamagedFileError, match="E902.*without 'filters'"):
        read_efml(other)


def _copy_with_config(folder, target, config_path):
    target.mkdir()
    for path in folder.iterdir():
        if path.name != "arch.json":
            (target / path.name).write_bytes(path.read_bytes())
    (target / "config.json").write_text(json.dumps({"config_path": config_path}))
    return target


def test_an_architecture_named_but_missing_is_the_one_elmoformanylangs_ships_under_that_name(efml, tmp_path):
    folder, _ = efml
    shipped = _copy_with_config(folder, tmp_path / "shipped", "/somewhere/configs/cnn_50_100_512_4096_sample.json")
    # Its own 4096-cell architecture, which the small model's weights do not fit.
    expected = (
        r"E902.*token_embedder.pkl' holds 'char_emb_layer.embedding.weight' of shape \(39, 5\), expected \(39, 50\)"
    )
    with pytest.raises(DamagedFileError, match=expected):
        read_efml(shipped)


def test_an_architecture_outside_the_folder_is_not_read(efml, tmp_path):
    folder, _ = efml
    (tmp_path / "outside.json").write_text((folder / "arch.json").read_text())
    escaped = _copy_with_config(folder, tmp_path / "escaped", "../outside.json")
    with pytest.raises(DamagedFileError, match="E902.*lacks the architecture file '../outside.json'"):
        read_efml(escaped)
