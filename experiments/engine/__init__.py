"""The studies' one engine: a run, its fingerprint, its evaluated record, and the launcher of a plan.

* ``experiments.engine.run``: the one `Run` (a spaCy config, its overrides, a seed and the test split
  it is scored on); its fingerprint (the resolved config, every file or folder the resolved config
  reads, the test split, the versions); its record (a small JSON of the test scores, the counts they
  come from, the fingerprint and the digests of the model and test split scored) and the one "is it
  done" check: the record exists and holds the fingerprint of what would be trained now.
* ``experiments.engine.execute``: trains one run, scores it and writes its record (a job's process).
* ``experiments.engine.jobs``: runs command lines side by side, each after the jobs it needs, skipping
  those done, stopping them all when stopped.
* ``experiments.engine.plan``: the one launcher: a study's plan (its runs as jobs, beside any other
  steps it needs) run under its work folder's lock; the trained model itself need not be kept.
* ``experiments.engine.views``: per-seed score files derived from the records, for the reports.

The studies (``experiments.studies``) are plans on top of it; nothing here imports them.
"""
