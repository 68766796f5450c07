import pytest
import torch

from spacy_elmo.bilm import batch_to_ids
from spacy_elmo.errors import ElmoError


def expected_ids(word: str) -> list:
    """The ELMo scheme written out plainly, one word at a time."""
    if word == "<S>":
        body = [256]
    elif word == "</S>":
        body = [257]
    else:
        body = list(word.encode("utf-8", "ignore")[:48])
    ids = [258] + body + [259]
    ids += [260] * (50 - len(ids))
    return [i + 1 for i in ids]


WORDS = ["The", "cat", "", " ", "\t", "naïve", "東京", "🙂👍🏽", "x" * 500, "é" * 30, "a\ud800b", "<S>", "</S>", "a/b"]


def test_ids_match_the_scheme():
    ids = batch_to_ids([WORDS, ["short"]])
    assert ids.dtype == torch.long
    assert ids.shape == (2, len(WORDS), 50)
    for i, word in enumerate(WORDS):
        assert ids[0, i].tolist() == expected_ids(word), word
    assert ids[1, 0].tolist() == expected_ids("short")
    assert (ids[1, 1:] == 0).all()


def test_long_tokens_keep_48_bytes_and_multibyte_is_cut_by_bytes():
    ids = batch_to_ids([["x" * 500, "é" * 30]])
    assert ids[0, 0, 49].item() == 260  # end-of-word in the last position
    assert (ids[0, 0, 1:49] == ord("x") + 1).all()
    # 30 two-byte characters = 60 bytes, cut to 48
    assert ids[0, 1, 49].item() == 260


def test_empty_inputs():
    assert batch_to_ids([]).shape == (0, 0, 50)
    empty = batch_to_ids([[], ["a"]])
    assert empty.shape == (2, 1, 50)
    assert (empty[0] == 0).all()
    assert batch_to_ids([[]]).shape == (1, 0, 50)


def test_empty_token_is_begin_end_word():
    ids = batch_to_ids([["", "\ud800"]])
    assert ids[0, 0, :3].tolist() == [259, 260, 261]
    assert ids[0, 1].tolist() == ids[0, 0].tolist()


@pytest.mark.parametrize("bad", [["a string"], [[1, 2]], "abc"])
def test_bad_sentences_are_reported(bad):
    with pytest.raises(ElmoError, match="E103"):
        batch_to_ids(bad if not isinstance(bad, str) else [bad])


def test_the_byte_schemes_id_count_is_its_marks_and_no_token():
    from spacy_elmo.bilm.char_ids import BOS_CHAR, EOS_CHAR, EOW_CHAR, PAD_CHAR
    from spacy_elmo.bilm.options import BYTE_CHAR_IDS, BiLMOptions

    assert BYTE_CHAR_IDS == PAD_CHAR + 2 == max(BOS_CHAR, EOS_CHAR, EOW_CHAR, PAD_CHAR) + 2
    assert BiLMOptions().n_characters == BYTE_CHAR_IDS
