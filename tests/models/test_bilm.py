"""`spacy-elmo.BiLM.v1`, the biLM as a Thinc model: torch on one thread in forked workers."""
import multiprocessing

import torch

from spacy_elmo.models.bilm import BiLMModel


def torch_threads() -> int:
    return torch.get_num_threads()


def test_a_forked_worker_runs_torch_on_one_thread():
    # As nlp.pipe(n_process=2) forks its workers: torch's thread pool does not
    # survive a fork, so each worker runs torch on one thread.
    BiLMModel()
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with multiprocessing.get_context("fork").Pool(1) as pool:
            in_worker = pool.apply(torch_threads)
        in_parent = torch.get_num_threads()
    finally:
        torch.set_num_threads(threads)
    assert (in_parent, in_worker) == (2, 1)
