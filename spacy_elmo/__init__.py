"""spacy-elmo: ELMo contextual representations for spaCy v3 pipelines."""
__version__ = "0.1.0"
