"""The studies: plans of runs on the engine (``experiments.engine``), one module each.

* ``v1``: ELMo against the baseline on NER and 5-class sentiment over seeds, the biLM tuned to each
  task first (the demo's steps at full size; project.yml's ``run-v1``);
* ``v2eval``: the downstream evaluation of the biLM: converged comparisons, GloVe, the paper's
  ablations and a BiLSTM encoder (the ``full`` workflow);
* ``curves``: where ELMo helps: learning curves, the GloVe pairs and the part-of-speech layer probe
  (the ``curves`` workflow);
* ``cv``: k-fold cross-validation over every labelled example (the ``cv`` workflow; the README's table).

Each is a command with ``run`` (the default where the study has no other) and ``plan`` (its jobs, and
which are done): ``python -m experiments.studies.<study> --help``. ``experiments.studies.cli`` holds
what their command lines share.
"""
