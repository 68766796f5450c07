"""One pretraining run: `config` (the settings), `optim` (the optimiser and
the learning-rate schedule), `trainer` (the loop), `checkpoint`, `run_dir`
(the run's folder and its lock), `train_log`, `export` and `plot`. The
processes under torchrun are `spacy_elmo.distributed`'s, which `embed` uses
too. `spacy_elmo.training.pretrain` wires them to the data and the objective."""
