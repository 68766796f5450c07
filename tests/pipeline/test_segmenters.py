"""How docs are cut for the biLM is a registered setting of BiLM.v1: the
default is what it always was, and `spacy-elmo.windows.v1` reads windows
across sentences, overlapping ones kept where each token is most central."""

import numpy
import pytest
import spacy
from spacy.tokens import Doc
from thinc.api import Config

from spacy_elmo.errors import ElmoError
from spacy_elmo.models.bilm import _segments, sentence_starts
from spacy_elmo.models.segmenters import overlapping_windows, read_sentences, window_segmenter

from ..numeric import assert_close_to_scale
from .pipelines import elmo_pipeline

BILM = {"@architectures": "spacy-elmo.BiLM.v1", "max_batch_tokens": 40, "window_size": 6}
LONG = "One two three four five six seven eight nine ten eleven twelve thirteen fourteen ."
TEXTS = [LONG, "Short . And then another sentence that is long enough to window it .", ""]


def doc_with_sentences(words, starts):
    return Doc(spacy.blank("en").vocab, words=words, sent_starts=[i in starts for i in range(len(words))])


def test_the_default_segments_are_sentences_then_windows_of_window_size():
    plain = Doc(spacy.blank("en").vocab, words=[str(i) for i in range(10)])
    with_sentences = doc_with_sentences([str(i) for i in range(12)], {0, 3, 9})
    segments = _segments([plain, with_sentences], read_sentences, 4)
    assert segments == [
        (0, 0, 4, 0, 4),
        (0, 4, 8, 4, 8),
        (0, 8, 10, 8, 10),
        (1, 0, 3, 0, 3),
        (1, 3, 7, 3, 7),
        (1, 7, 9, 7, 9),
        (1, 9, 12, 9, 12),
    ]
    touching = window_segmenter()
    assert [w for w in touching(plain, sentence_starts(plain), 4)] == [s[1:] for s in segments[:3]]
    assert touching(with_sentences, sentence_starts(with_sentences), 4) == [(0, 4, 0, 4), (4, 8, 4, 8), (8, 12, 8, 12)]


def test_overlapping_windows_keep_each_token_where_it_is_most_central():
    assert overlapping_windows(10, 4, 2) == [(0, 4, 0, 3), (2, 6, 3, 5), (4, 8, 5, 7), (6, 10, 7, 10)]
    assert overlapping_windows(3, 4, 2) == [(0, 3, 0, 3)]
    assert overlapping_windows(0, 4, 2) == []
    for n in range(1, 30):
        for size in (1, 2, 3, 5, 8):
            for stride in range(1, size + 1):
                windows = overlapping_windows(n, size, stride)
                kept = [t for _, _, a, b in windows for t in range(a, b)]
                assert kept == list(range(n))
                spans = {(s, e) for s, e, _, _ in windows}
                for start, end, a, b in windows:
                    assert start <= a < b <= end and end - start <= size
                    for t in range(a, b):
                        best = max(min(t - s, e - 1 - t) for s, e in spans if s <= t < e)
                        assert min(t - start, end - 1 - t) == best


def layers_of(nlp):
    return [doc._.elmo.layers for doc in nlp.pipe(TEXTS)]


@pytest.mark.parametrize("sentencizer", [False, True])
def test_a_config_without_a_segmenter_gives_the_same_output_as_before(bilm_dir, tmp_path, sentencizer):
    nlp, _ = elmo_pipeline(bilm_dir, with_ner=False, model=BILM)
    explicit, _ = elmo_pipeline(
        bilm_dir, with_ner=False, model={**BILM, "segmenter": {"@misc": "spacy-elmo.sentences.v1"}}
    )
    if sentencizer:
        nlp.add_pipe("sentencizer", first=True)
        explicit.add_pipe("sentencizer", first=True)
    for a, b in zip(layers_of(explicit), layers_of(nlp)):
        assert numpy.array_equal(a, b)
    # A pipeline saved before the setting existed (its config has no
    # `segmenter`) predicts exactly what the same pipeline with it does.
    nlp.to_disk(tmp_path / "new")
    assert Config().from_disk(tmp_path / "new" / "config.cfg")["components"]["elmo"]["model"]["segmenter"] is None
    nlp.to_disk(tmp_path / "old")
    config = Config().from_disk(tmp_path / "old" / "config.cfg", interpolate=False)
    del config["components"]["elmo"]["model"]["segmenter"]
    config.to_disk(tmp_path / "old" / "config.cfg")
    for a, b in zip(layers_of(spacy.load(tmp_path / "old")), layers_of(spacy.load(tmp_path / "new"))):
        assert numpy.array_equal(a, b)


def test_overlapping_windows_read_each_token_in_its_most_central_window(bilm_dir, tmp_path):
    segmenter = {"@misc": "spacy-elmo.windows.v1", "size": 6, "stride": 3}
    nlp, _ = elmo_pipeline(bilm_dir, with_ner=False, model={**BILM, "segmenter": segmenter})
    nlp.add_pipe("sentencizer", first=True)  # windows.v1 reads across sentences
    doc = nlp(LONG)
    words = [t.text for t in doc]
    elmo = nlp.get_pipe("elmo")
    for start, end, keep_start, keep_end in overlapping_windows(len(doc), 6, 3):
        alone = elmo.predict([Doc(nlp.vocab, words=words[start:end])])[0]
        got = doc._.elmo.layers[:, keep_start:keep_end]
        assert numpy.abs(got - alone[:, keep_start - start : keep_end - start]).max() <= 1e-5
    nlp.to_disk(tmp_path / "windows")
    assert_close_to_scale(spacy.load(tmp_path / "windows")(LONG)._.elmo.layers, doc._.elmo.layers)
    # In training, each token's gradient goes to the window it was kept from.
    outputs, backprop = elmo.model.begin_update([doc])
    assert numpy.abs(outputs[0] - doc._.elmo.layers).max() <= 1e-5
    backprop([elmo.model.ops.alloc3f(*outputs[0].shape) + 1.0])


def test_windows_settings_out_of_range_are_coded_errors(bilm_dir):
    with pytest.raises(ElmoError, match=r"E411.*stride = 5 is more than size = 4"):
        window_segmenter(size=4, stride=5)
    with pytest.raises(ElmoError, match=r"E411.*size = 0"):
        window_segmenter(size=0)
    with pytest.raises(ElmoError, match=r"E411.*stride = 7 is more than size = 6.*window_size"):
        elmo_pipeline(
            bilm_dir, with_ner=False, model={**BILM, "segmenter": {"@misc": "spacy-elmo.windows.v1", "stride": 7}}
        )


def first_half(doc, sentence_starts, window_size):
    """Windows over the doc's first half only: the second half is in none."""
    half = len(doc) // 2
    return [
        (start, min(half, start + window_size), start, min(half, start + window_size))
        for start in range(0, half, window_size)
    ]


def each_token_twice(doc, sentence_starts, window_size):
    return [(0, len(doc), 0, len(doc)), (0, 2, 0, 2)] if len(doc) else []


def past_the_end(doc, sentence_starts, window_size):
    return [(0, len(doc) + 2, 0, len(doc) + 2)]


def floats(doc, sentence_starts, window_size):
    return [(0.0, float(len(doc)), 0.0, float(len(doc)))]


def register(segmenter):
    spacy.registry.misc(f"test.{segmenter.__name__}.v1", func=lambda: segmenter)


for _segmenter in (first_half, each_token_twice, past_the_end, floats):
    register(_segmenter)


@pytest.fixture(scope="module")
def saved(tmp_path_factory, fixture_paths):
    path = tmp_path_factory.mktemp("segmenters") / "pipeline"
    nlp, _ = elmo_pipeline(fixture_paths[0].parent, with_ner=False, model=BILM)
    nlp.to_disk(path)
    return path


@pytest.mark.parametrize(
    "segmenter,problem",
    [
        (first_half, r"keep no vectors for tokens 7\.\.15"),
        (each_token_twice, r"keep tokens 0\.\.2 from more than one window"),
        (past_the_end, r"include \(0, 17, 0, 17\), which is not a range inside the doc"),
        (floats, r"include \(0\.0, 15\.0, 0\.0, 15\.0\), not 4 whole numbers"),
    ],
)
def test_a_registered_segmenter_must_keep_every_token_exactly_once(saved, segmenter, problem):
    segmenter_cfg = {"@misc": f"test.{segmenter.__name__}.v1"}
    nlp = spacy.load(saved, config={"components": {"elmo": {"model": {"segmenter": segmenter_cfg}}}})
    name = rf"'tests\.pipeline\.test_segmenters\.{segmenter.__name__}'"
    with pytest.raises(
        ElmoError, match=rf"E412\] The segmenter {name} cut the doc '{LONG[:20]}.*\(15 tokens\).*{problem}"
    ):
        nlp(LONG)


def test_a_segmenter_that_leaves_tokens_out_fails_at_initialisation(bilm_dir):
    with pytest.raises(ElmoError, match=r"E412\] The segmenter '\S+first_half' .* keep no vectors for tokens"):
        elmo_pipeline(bilm_dir, with_ner=False, model={**BILM, "segmenter": {"@misc": "test.first_half.v1"}})
