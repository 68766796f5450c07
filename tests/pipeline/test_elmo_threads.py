"""One pipeline called from several threads (as a threaded server calls it)
gives every doc the layers a single thread gives it, bit for bit."""

import random
from concurrent.futures import ThreadPoolExecutor

import numpy

from .pipelines import tiny_pipeline


def random_texts(n: int, length: int, n_words: int, seed: int = 0) -> list:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(n_words)]
    return [" ".join(rng.choices(words, k=length)) for _ in range(n)]


def test_a_pipeline_called_from_a_thread_pool_gives_what_one_thread_gives():
    # A token cache far smaller than the words, so that the threads' docs evict each other's words.
    nlp = tiny_pipeline(token_cache_size=24)
    texts = random_texts(48, 12, n_words=300)
    expected = [nlp(text)._.elmo.layers for text in texts]
    with ThreadPoolExecutor(4) as pool:
        docs = list(pool.map(nlp, texts))
    wrong = [
        i for i, (doc, layers) in enumerate(zip(docs, expected)) if not numpy.array_equal(doc._.elmo.layers, layers)
    ]
    assert wrong == []
    # and the pipeline the threads leave gives the same layers again on one thread
    assert all(numpy.array_equal(nlp(text)._.elmo.layers, layers) for text, layers in zip(texts, expected))
