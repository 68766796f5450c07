"""The perplexity table: one row per held-out text measured for every biLM, the change in %."""

import json

from experiments.report.perplexity import perplexity_table, read_perplexities


def write(folder, name, mean, tokens=1000):
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.json").write_text(
        json.dumps({"mean": mean, "forward": mean, "backward": mean, "tokens": tokens})
    )


def test_rows_are_the_texts_both_measured_and_the_change_is_relative_to_the_first(tmp_path):
    write(tmp_path / "a", "dev", 200.0, 5000)
    write(tmp_path / "a", "dev_tweets", 400.0)
    write(tmp_path / "a", "dev_wiki", 100.0)
    write(tmp_path / "b", "dev", 150.0, 5000)
    write(tmp_path / "b", "dev_tweets", 300.0)
    table = perplexity_table({"v1": read_perplexities(tmp_path / "a"), "v2": read_perplexities(tmp_path / "b")})
    lines = table.strip().splitlines()
    assert lines[0] == "| held-out text | tokens | v1 | v2 | v2 vs v1 |"
    assert lines[2] == "| tweets | 1,000 | 400.0 | 300.0 | -25.0% |"
    assert lines[3] == "| all | 5,000 | 200.0 | 150.0 | -25.0% |"  # the total comes last
    assert len(lines) == 4  # dev_wiki was measured for v1 only
