"""The demo workflow's own steps (project.yml's ``all``), each a command run by ``spacy project run``.

* ``tune``: tune the biLM to a task's training text (or unlabelled text of its domain), its perplexity
  before and after; the v1 study runs it as a job too;
* ``train_seeds``: train one config once per seed, each seed a run of the engine, scored and recorded
  with ``--test``;
* ``evaluate_seeds``: score trained seeds on a test split as runs of the engine, and write the per-seed
  score files the report reads.
"""
