"""The biLMs that ship with the package: package data, one folder per model
(`spacy_elmo.shipped_models` finds and checks them)."""
