"""The biLM architecture, as AllenNLP/bilm-tf ``options.json`` describes it."""
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

from ..errors import ElmoError, Errors


@dataclass
class BiLMOptions:
    """Hyper-parameters of a character-based biLM (ELMo).

    The defaults are those of the original model
    (``elmo_2x4096_512_2048cnn_2xhighway``).
    """

    char_embedding_dim: int = 16
    filters: List[Tuple[int, int]] = field(
        default_factory=lambda: [(1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024)]
    )
    n_highway: int = 2
    n_characters: int = 262
    max_characters_per_token: int = 50
    activation: str = "relu"
    lstm_dim: int = 4096
    projection_dim: int = 512
    n_layers: int = 2
    cell_clip: Optional[float] = 3.0
    proj_clip: Optional[float] = 3.0
    use_skip_connections: bool = True

    @property
    def n_filters(self) -> int:
        return sum(n for _, n in self.filters)

    @property
    def output_dim(self) -> int:
        """Width of every output layer: forward and backward concatenated."""
        return 2 * self.projection_dim

    def to_allennlp(self) -> Dict[str, Any]:
        return {
            "char_cnn": {
                "embedding": {"dim": self.char_embedding_dim},
                "filters": [list(f) for f in self.filters],
                "n_highway": self.n_highway,
                "n_characters": self.n_characters,
                "max_characters_per_token": self.max_characters_per_token,
                "activation": self.activation,
            },
            "lstm": {
                "dim": self.lstm_dim,
                "projection_dim": self.projection_dim,
                "n_layers": self.n_layers,
                "cell_clip": self.cell_clip,
                "proj_clip": self.proj_clip,
                "use_skip_connections": self.use_skip_connections,
            },
        }

    @classmethod
    def from_allennlp(cls, data: Dict[str, Any], path: Union[str, Path] = "<dict>") -> "BiLMOptions":
        """Read and validate the dict of an ``options.json``."""
        reader = _OptionsReader(data, str(path))
        filters = reader.get("char_cnn.filters", list)
        if not filters or not all(
            isinstance(f, (list, tuple)) and len(f) == 2 and all(_is_int(v) and v > 0 for v in f)
            for f in filters
        ):
            raise ElmoError("E003", Errors.E003.format(
                path=path, key="char_cnn.filters",
                expected="a non-empty list of [width, n_filters] positive integer pairs",
                found=filters,
            ))
        activation = reader.get("char_cnn.activation", str)
        if activation not in ("relu", "tanh"):
            raise ElmoError("E003", Errors.E003.format(
                path=path, key="char_cnn.activation", expected="'relu' or 'tanh'", found=activation
            ))
        n_characters = reader.get("char_cnn.n_characters", int)
        if n_characters not in (261, 262):
            raise ElmoError("E003", Errors.E003.format(
                path=path, key="char_cnn.n_characters", expected="261 or 262", found=n_characters
            ))
        max_chars = reader.get("char_cnn.max_characters_per_token", int)
        if max_chars < 3 or max_chars < max(w for w, _ in filters):
            raise ElmoError("E003", Errors.E003.format(
                path=path, key="char_cnn.max_characters_per_token",
                expected="an integer >= 3 and >= the widest filter", found=max_chars,
            ))
        return cls(
            char_embedding_dim=reader.get("char_cnn.embedding.dim", int, positive=True),
            filters=[(int(w), int(n)) for w, n in filters],
            n_highway=reader.get("char_cnn.n_highway", int),
            n_characters=n_characters,
            max_characters_per_token=max_chars,
            activation=activation,
            lstm_dim=reader.get("lstm.dim", int, positive=True),
            projection_dim=reader.get("lstm.projection_dim", int, positive=True),
            n_layers=reader.get("lstm.n_layers", int, positive=True),
            cell_clip=reader.get("lstm.cell_clip", float, nullable=True),
            proj_clip=reader.get("lstm.proj_clip", float, nullable=True),
            use_skip_connections=reader.get("lstm.use_skip_connections", bool),
        )

    @classmethod
    def from_file(cls, path: Union[str, Path]) -> "BiLMOptions":
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ElmoError("E001", Errors.E001.format(kind="options", path=path, reason=err)) from err
        if not isinstance(data, dict):
            raise ElmoError("E003", Errors.E003.format(
                path=path, key="<root>", expected="a JSON object", found=type(data).__name__
            ))
        return cls.from_allennlp(data, path)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _OptionsReader:
    def __init__(self, data: Dict[str, Any], path: str):
        self.data = data
        self.path = path

    def get(self, key: str, kind: type, *, positive: bool = False, nullable: bool = False) -> Any:
        node: Any = self.data
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                raise ElmoError("E002", Errors.E002.format(path=self.path, key=key))
            node = node[part]
        if node is None and nullable:
            return None
        if kind is float:  # finite: json reads NaN and Infinity too
            ok = isinstance(node, (int, float)) and not isinstance(node, bool) and math.isfinite(node)
        elif kind is int:
            ok = _is_int(node)
        else:
            ok = isinstance(node, kind)
        if ok and positive:
            ok = node > 0
        if not ok:
            expected = ("a positive " if positive else "a ") + ("finite float" if kind is float else kind.__name__)
            raise ElmoError("E003", Errors.E003.format(
                path=self.path, key=key, expected=expected + (" or null" if nullable else ""), found=node
            ))
        return kind(node) if kind is float else node
