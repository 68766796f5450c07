"""The state a stateful biLM carries from each call to the next, as bilm-tf did; it exists to
reproduce bilm-tf's reference outputs (`BiLM` with ``stateful=True``)."""

import threading
from typing import List, Optional

import torch

from .recurrence import BiLSTMStack, LayerState


class CopyableLock:
    """A mutex for state a module's calls share, which a copy or a pickle of the
    module gets anew and free (being held is no state to copy)."""

    def __init__(self):
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc_info) -> None:
        self._lock.release()

    def __getstate__(self) -> dict:
        return {}

    def __setstate__(self, state: dict) -> None:
        self.__init__()  # type: ignore[misc]


class CarriedState:
    """Each batch row's final LSTM state, which the same row of the next call
    starts from; rows beyond a call's keep theirs. One call at a time: the
    state is shared by every thread's calls."""

    def __init__(self):
        self.states: Optional[List[LayerState]] = None
        self._lock = CopyableLock()

    def reset(self) -> None:
        """Forget the state: the next call starts from zeros."""
        with self._lock:
            self.states = None

    def run(
        self, lstm: BiLSTMStack, inputs: torch.Tensor, batch_sizes: List[int], order: torch.Tensor
    ) -> List[torch.Tensor]:
        """The LSTMs' packed outputs from the state each row carried over from
        the last call; their final state is the next call's.

        inputs: (2, n_packed, projection_dim); order: (rows,) the caller's row
            at each sorted position (`TimeMajor.order`).
        """
        with self._lock:
            initial = self._initial_state(order, order.shape[0])
            outputs, final = lstm(inputs, batch_sizes, initial, return_final_state=True)
            self._store_state(final, order)
        return outputs

    def _initial_state(self, order: torch.Tensor, batch: int) -> Optional[List[LayerState]]:
        if self.states is None:
            return None
        states = []
        for h, c in self.states:
            h_new = h.new_zeros(2, batch, h.shape[2])
            c_new = c.new_zeros(2, batch, c.shape[2])
            keep = min(batch, h.shape[1])
            h_new[:, :keep], c_new[:, :keep] = h[:, :keep], c[:, :keep]
            states.append((h_new[:, order], c_new[:, order]))
        return states

    def _store_state(self, final: List[LayerState], order: torch.Tensor) -> None:
        unsort = torch.argsort(order)
        new = [(h[:, unsort].detach(), c[:, unsort].detach()) for h, c in final]
        if self.states is not None:
            # Rows beyond this batch keep what they had.
            merged = []
            for (h_old, c_old), (h, c) in zip(self.states, new):
                if h_old.shape[1] > h.shape[1]:
                    h = torch.cat([h, h_old[:, h.shape[1] :]], dim=1)
                    c = torch.cat([c, c_old[:, c.shape[1] :]], dim=1)
                merged.append((h, c))
            new = merged
        self.states = new
