"""Loading an ELMoForManyLangs model of the original size against AllenNLP's original files.

    python benchmarks/bench_efml_load.py FOLDER       # writes the three models into FOLDER (1.2 GB), then times each

Writes, with random weights: AllenNLP's original architecture as options.json + weights.hdf5;
ELMoForManyLangs' (the same biLM, a 50-d character embedding, 100-d word vectors) as its zips hold
it, with a 10,000-character and a 100,000-word table, its pickles in torch's legacy format; and
that model converted. Then loads each with `BiLM.from_allennlp` in a fresh process, three times,
and prints the best time and the peak resident memory of each.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

import torch

CASES = ("allennlp", "efml", "converted")
N_CHARACTERS, N_WORDS = 10_000, 100_000
ARCHITECTURE = {
    "encoder": {"name": "elmo", "projection_dim": 512, "cell_clip": 3, "proj_clip": 3, "dim": 4096, "n_layers": 2},
    "token_embedder": {
        "name": "cnn",
        "activation": "relu",
        "n_highway": 2,
        "word_dim": 100,
        "char_dim": 50,
        "filters": [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]],
        "max_characters_per_token": 50,
    },
}


def write_efml(folder: Path) -> None:
    """An ELMoForManyLangs model's folder with random weights, as its zips hold one."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "arch.json").write_text(json.dumps(ARCHITECTURE))
    (folder / "config.json").write_text(json.dumps({"config_path": "arch.json"}))
    chars = ["<oov>", "<pad>", "<bow>", "<eow>", "<bos>", "<eos>"] + [chr(0x4E00 + i) for i in range(N_CHARACTERS - 6)]
    words = ["<oov>", "<pad>", "<bos>", "<eos>"] + [f"w{i}" for i in range(N_WORDS - 4)]
    for name, entries in (("char.dic", chars), ("word.dic", words)):
        (folder / name).write_text("".join(f"{entry}\t{i}\n" for i, entry in enumerate(entries)), encoding="utf8")
    embedder, encoder = ARCHITECTURE["token_embedder"], ARCHITECTURE["encoder"]
    F, p, c = sum(n for _, n in embedder["filters"]), encoder["projection_dim"], encoder["dim"]
    token_embedder = {
        "word_emb_layer.embedding.weight": torch.randn(N_WORDS, embedder["word_dim"]),
        "char_emb_layer.embedding.weight": torch.randn(N_CHARACTERS, embedder["char_dim"]),
        "projection.weight": torch.randn(p, F + embedder["word_dim"]) * 0.02,
        "projection.bias": torch.randn(p),
    }
    for i, (width, n) in enumerate(embedder["filters"]):
        token_embedder[f"convolutions.{i}.weight"] = torch.randn(n, embedder["char_dim"], width) * 0.1
        token_embedder[f"convolutions.{i}.bias"] = torch.randn(n) * 0.1
    for k in range(embedder["n_highway"]):
        token_embedder[f"highways._layers.{k}.weight"] = torch.randn(2 * F, F) * 0.02
        token_embedder[f"highways._layers.{k}.bias"] = torch.randn(2 * F) * 0.1
    lstm = {}
    for direction in ("forward", "backward"):
        for layer in range(encoder["n_layers"]):
            cell = f"{direction}_layer_{layer}"
            lstm[f"{cell}.input_linearity.weight"] = torch.randn(4 * c, p) * 0.02
            lstm[f"{cell}.state_linearity.weight"] = torch.randn(4 * c, p) * 0.02
            lstm[f"{cell}.state_linearity.bias"] = torch.randn(4 * c) * 0.1
            lstm[f"{cell}.state_projection.weight"] = torch.randn(p, c) * 0.02
    torch.save(token_embedder, folder / "token_embedder.pkl", _use_new_zipfile_serialization=False)
    torch.save(lstm, folder / "encoder.pkl", _use_new_zipfile_serialization=False)


def write_models(root: Path) -> None:
    from spacy_elmo.bilm import BiLM, BiLMOptions
    from spacy_elmo.bilm.conversion import convert_efml

    torch.manual_seed(0)
    BiLM(BiLMOptions()).save_allennlp(root / "allennlp")
    write_efml(root / "efml")
    convert_efml(root / "efml", root / "converted")


def load_once(folder: Path) -> None:
    """Run in a fresh process: load `folder`, print the seconds and the peak RSS in GiB as JSON."""
    from spacy_elmo.bilm import BiLM

    start = time.perf_counter()
    BiLM.from_allennlp(folder)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "peak_gib": peak_rss_gib()}))


def peak_rss_gib() -> float:
    """This process's peak resident memory (VmHWM: unlike getrusage's, not inherited across exec)."""
    status = Path("/proc/self/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1]) / 2**20


def main(root: Path) -> None:
    if not (root / "converted").is_dir():
        write_models(root)
    for case in CASES:
        runs = [
            json.loads(
                subprocess.run(
                    [sys.executable, __file__, "--load", str(root / case)], check=True, capture_output=True, text=True
                ).stdout
            )
            for _ in range(3)
        ]
        best = min(run["seconds"] for run in runs)
        print(f"{case:10s} {best:6.2f} s   peak {max(run['peak_gib'] for run in runs):.2f} GiB")


if __name__ == "__main__":
    if sys.argv[1] == "--load":
        load_once(Path(sys.argv[2]))
    else:
        main(Path(sys.argv[1]))
