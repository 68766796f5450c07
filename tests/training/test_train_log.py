"""The JSONL training log: exact numbers, and a line cut short by a kill costs only itself."""
from spacy_elmo.training.run.train_log import TrainLog


def test_records_come_back_exactly(tmp_path):
    log = TrainLog(tmp_path / "log.jsonl")
    assert log.records() == []
    records = [{"kind": "train", "step": 1, "lr": 1e-12, "ppl": 0.12345678901234567},
               {"kind": "train", "step": 2, "lr": 0.006666666666666666},
               {"kind": "dev", "step": 2, "ppl": 123456.789012345}]
    for record in records:
        log.write(record)
    assert log.records() == records  # srsly's JSONL would give lr 0.0 and ppl 0.12345678901234501


def test_a_line_cut_by_a_kill_is_skipped_and_the_next_record_kept(tmp_path):
    log = TrainLog(tmp_path / "log.jsonl")
    log.write({"kind": "train", "step": 1})
    with log.path.open("a", encoding="utf8") as f:
        f.write('{"kind": "train", "st')  # killed mid-write
    log.write({"kind": "train", "step": 2})
    log.write({"kind": "dev", "step": 3})
    assert [r["step"] for r in log.records()] == [1, 2, 3]
    log.truncate(2)
    assert [r["step"] for r in log.records()] == [1, 2]
    assert log.path.read_text(encoding="utf8").count("\n") == 2
