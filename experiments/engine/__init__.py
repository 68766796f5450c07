"""The studies' one engine: a run, its fingerprint, its evaluated record, and the runner of a plan.

* ``experiments.engine.run``: a `Run` (a spaCy config, its overrides, a seed and the test split it
  is scored on); its fingerprint (the resolved config, every file or folder the resolved config
  reads, the test split, the versions); its record (a small JSON of the test scores, the counts they
  come from, the fingerprint and the digests of the model and test split scored) and the one "is it
  done" check: the record exists and holds the fingerprint of what would be trained now.
* ``experiments.engine.execute``: trains one run, scores it and writes its record (a job's process).
* ``experiments.engine.plan``: runs the runs of a plan that are not done, one or more at a time,
  through ``experiments.run.jobs``; the trained model itself need not be kept.
"""
