from .elmo import Elmo, make_elmo

__all__ = ["Elmo", "make_elmo"]
