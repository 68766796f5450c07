"""A character table looked up by code point, a word table, and the token
encoder over them (ELMoForManyLangs' token encoder), against straightforward
computations written out here."""

import json
import os

import pytest
import torch

from spacy_elmo.bilm import BiLM
from spacy_elmo.bilm.char_ids import BOS_TOKEN, EOS_TOKEN, ByteIds, CodePointIds, batch_to_ids, token_ids
from spacy_elmo.bilm.options import BiLMOptions, CharTable, WordTable
from spacy_elmo.bilm.token_encoder import CharCNNTokenEncoder
from spacy_elmo.errors import DamagedFileError

MAX_CHARS = 8
MARKS = dict(
    begin_word="<eow>", end_word="<bow>", begin_sentence="<bos>", end_sentence="<eos>", padding="<pad>", unknown="<oov>"
)
CHARS = CharTable(("<pad>", "b", "<oov>", "<bow>", "a", "<eow>", "é", "<bos>", "中", "<eos>", "\u3000"), **MARKS)
WORDS = WordTable(
    ("cat", "<oov>", "<bos>", "a", "ééééééé"), dim=3, unknown="<oov>", begin_sentence="<bos>", end_sentence="<eos>"
)
# Non-ASCII letters, characters not in the table, words not in the word table,
# tokens longer than the limit in code points (and far longer in bytes), an
# empty token, a lone surrogate, and the table's marks written as tokens.
TOKENS = [
    "a",
    "cat",
    "bab",
    "é",
    "中a",
    "x",
    "Ж",
    "ab\u3000",
    "éééééééééé",
    "aaaaaaaaaaaa",
    "",
    "\ud800",
    "<bos>",
    "<eos>",
    "<pad>",
    BOS_TOKEN,
    EOS_TOKEN,
]


def _reference_ids(word: str) -> list:
    """One token's ids as ELMoForManyLangs' create_one_batch makes them (its
    ids + 1), the word id last."""
    char_id = {entry: k + 1 for k, entry in enumerate(CHARS.entries)}
    word_id = {entry: k + 1 for k, entry in enumerate(WORDS.entries)}
    word = {BOS_TOKEN: "<bos>", EOS_TOKEN: "<eos>"}.get(word, word)[: MAX_CHARS - 2]
    ids = [char_id["<pad>"]] * MAX_CHARS
    ids[0] = char_id["<eow>"]
    if word in ("<bos>", "<eos>"):
        ids[1], ids[2] = char_id[word], char_id["<bow>"]
    else:
        for k, c in enumerate(word):
            ids[k + 1] = char_id.get(c, char_id["<oov>"])
        ids[len(word) + 1] = char_id["<bow>"]
    return ids + [word_id.get(word, word_id["<oov>"])]


def test_tokens_become_the_ids_elmoformanylangs_gives_them():
    scheme = CodePointIds(CHARS, MAX_CHARS, WORDS)
    assert scheme.words_to_ids(TOKENS).tolist() == [_reference_ids(word) for word in TOKENS]
    assert scheme.lengths(scheme.words_to_ids(["", "ab", "éééééééééé"])).tolist() == [2, 4, 8]


def test_without_a_word_table_the_rows_are_the_characters_alone():
    scheme = CodePointIds(CHARS, MAX_CHARS)
    assert scheme.width == MAX_CHARS
    assert scheme.words_to_ids(TOKENS).tolist() == [_reference_ids(word)[:-1] for word in TOKENS]


def test_a_batch_of_sentences_gets_the_schemes_ids():
    scheme = CodePointIds(CHARS, MAX_CHARS, WORDS)
    ids = batch_to_ids([["a", "é"], ["Ж"]], scheme=scheme)
    assert ids.shape == (2, 2, MAX_CHARS + 1)
    assert ids[0].tolist() == [_reference_ids("a"), _reference_ids("é")]
    assert ids[1].tolist() == [_reference_ids("Ж"), [0] * (MAX_CHARS + 1)]


def test_options_without_tables_keep_the_byte_scheme():
    options = BiLMOptions()
    assert isinstance(token_ids(options), ByteIds) and options.n_char_ids == 262
    assert "char_table" not in options.to_allennlp()["char_cnn"] and "word_table" not in options.to_allennlp()
    assert list(options.to_files()) == ["options.json"]


def _table_options(**changes) -> BiLMOptions:
    settings = dict(
        char_embedding_dim=4,
        filters=[(1, 4), (2, 6), (3, 5)],
        n_highway=2,
        lstm_dim=16,
        projection_dim=8,
        n_layers=1,
        max_characters_per_token=MAX_CHARS,
        n_characters=len(CHARS.entries),
        char_table=CHARS,
        word_table=WORDS,
    )
    return BiLMOptions(**{**settings, **changes})


def test_options_with_tables_round_trip_through_their_files(tmp_path):
    options = _table_options()
    for name, text in options.to_files().items():
        (tmp_path / name).write_text(text, encoding="utf8")
    saved = json.loads((tmp_path / "options.json").read_text())
    assert saved["char_cnn"]["char_table"]["file"] == "chars.json" and "entries" not in saved["word_table"]
    assert BiLMOptions.from_file(tmp_path / "options.json") == options
    assert BiLMOptions.from_allennlp(options.to_allennlp()) == options


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["char_cnn"].update(n_characters=5), "E003.*n_characters.*size of char_cnn.char_table"),
        (lambda d: d["char_cnn"]["char_table"].update(padding="<none>"), "E003.*char_table.padding"),
        (
            lambda d: (d["char_cnn"]["char_table"]["entries"].append("a"), d["char_cnn"].update(n_characters=12)),
            "E003.*entries.*more than once.*'a'",
        ),
        (lambda d: d["word_table"].update(unknown="<unk>"), "E003.*word_table.unknown"),
        (lambda d: d["char_cnn"]["char_table"].update(file="../chars.json"), "E003.*file"),
    ],
)
def test_wrong_tables_are_coded_errors(tmp_path, edit, message):
    options = _table_options().to_allennlp()
    edit(options)
    if "file" in options["char_cnn"]["char_table"]:
        del options["char_cnn"]["char_table"]["entries"]
    path = tmp_path / "options.json"
    path.write_text(json.dumps(options), encoding="utf8")
    with pytest.raises(DamagedFileError, match=message):
        BiLMOptions.from_file(path)


def test_a_table_file_that_is_not_a_list_of_strings_is_e903(tmp_path):
    for name, text in _table_options().to_files().items():
        (tmp_path / name).write_text(text, encoding="utf8")
    (tmp_path / "words.json").write_text('{"cat": 1}', encoding="utf8")
    with pytest.raises(DamagedFileError, match="E903.*words.json.*not a list of strings"):
        BiLMOptions.from_file(tmp_path / "options.json")


def _straightforward(encoder: CharCNNTokenEncoder, ids: torch.Tensor) -> torch.Tensor:
    """The token encoder as ELMoForManyLangs computes it: every filter over
    all max_chars positions, max-pooled, the activation, the highways, then
    [word vector; that] through the projection."""
    chars = torch.nn.functional.embedding(ids[:, :MAX_CHARS], encoder.char_embed).transpose(1, 2)
    x = torch.relu(torch.cat([conv(chars).amax(dim=2) for conv in encoder.convs], dim=1))
    for highway in encoder.highways:
        gate = torch.sigmoid(x @ highway.W_carry + highway.b_carry)
        x = gate * torch.relu(x @ highway.W_transform + highway.b_transform) + (1 - gate) * x
    words = torch.nn.functional.embedding(ids[:, MAX_CHARS], encoder.word_embed)
    return encoder.projection(torch.cat([words, x], dim=1))


def test_the_encoder_joins_word_vectors_in_front_of_the_cnn_features():
    torch.manual_seed(0)
    options = _table_options()
    encoder = CharCNNTokenEncoder(options)
    with torch.no_grad():
        for parameter in encoder.parameters():
            parameter.normal_(0.0, 0.8)  # the padding's row too: ELMoForManyLangs trains it
    ids = torch.from_numpy(token_ids(options).words_to_ids(TOKENS))
    with torch.no_grad():
        ours, expected = encoder(ids), _straightforward(encoder, ids)
    assert ours.shape == (len(TOKENS), options.projection_dim)
    assert (ours - expected).abs().max() <= 1e-5 * expected.abs().max()
    # The word vectors matter: another word id changes the vector.
    other = ids.clone()
    other[:, MAX_CHARS] = 1
    with torch.no_grad():
        assert not torch.allclose(encoder(other), ours)


def test_the_parameters_follow_the_tables():
    encoder = CharCNNTokenEncoder(_table_options())
    assert encoder.char_embed.shape == (len(CHARS.entries) + 1, 4)
    assert encoder.word_embed.shape == (len(WORDS.entries) + 1, 3)
    assert encoder.projection.weight.shape == (8, 15 + 3)
    assert not encoder.char_embed[0].any() and not encoder.word_embed[0].any()
    plain = CharCNNTokenEncoder(_table_options(word_table=None))
    assert "word_embed" not in dict(plain.named_parameters()) and plain.projection.weight.shape == (8, 15)


def test_the_size_of_a_bilm_with_tables_is_counted_before_it_is_built():
    options = _table_options()
    built = sum(p.numel() for p in BiLM(options).parameters())
    # The count is of the weights the files hold: not the two "no token" rows of zeros.
    assert options.n_parameters == built - options.char_embedding_dim - options.word_dim


def test_a_table_file_that_is_a_named_pipe_is_refused_not_waited_on(tmp_path):
    for name, text in _table_options().to_files().items():
        (tmp_path / name).write_text(text, encoding="utf8")
    (tmp_path / "chars.json").unlink()
    os.mkfifo(tmp_path / "chars.json")
    with pytest.raises(DamagedFileError, match="E903.*chars.json.*not a regular file"):
        BiLMOptions.from_file(tmp_path / "options.json")
