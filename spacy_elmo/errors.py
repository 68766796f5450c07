"""Coded errors: each says what was expected, what was found and how to fix it.

Codes are stable once released; add new ones at the end of their block.
"""


class ElmoError(ValueError):
    """An error raised by spacy-elmo, carrying a stable code (e.g. ``E003``)."""

    def __init__(self, code: str, message: str):
        self.code = code
        super().__init__(f"[{code}] {message}")


class Errors:
    # Weight files (E0xx)
    E001 = (
        "Could not read the ELMo {kind} file '{path}': {reason}. Pass the path of "
        "an existing AllenNLP/bilm-tf {kind} file (options.json / weights.hdf5), or "
        "a directory written by BiLM.save_allennlp."
    )
    E002 = (
        "The ELMo options file '{path}' is missing the key '{key}'. Expected an "
        "AllenNLP/bilm-tf options.json with 'char_cnn' (embedding.dim, filters, "
        "n_highway, n_characters, max_characters_per_token, activation) and 'lstm' "
        "(dim, projection_dim, n_layers, cell_clip, proj_clip, use_skip_connections)."
    )
    E003 = (
        "The ELMo options file '{path}' has a wrong value for '{key}': expected "
        "{expected}, found {found!r}. Fix the value in the options file."
    )
    E004 = (
        "The ELMo weights file '{path}' has no dataset '{dataset}'. Expected the "
        "bilm-tf layout written for the options file '{options}'. Check that the "
        "two files belong to the same model."
    )
    E005 = (
        "The ELMo weights file '{path}' does not match the options: dataset "
        "'{dataset}' has shape {found}, expected {expected} from the options file "
        "'{options}'. Check that the two files belong to the same model."
    )
    E006 = (
        "No ELMo weights found in the directory '{path}': expected 'options.json' "
        "and 'weights.hdf5' in it (as BiLM.save_allennlp writes), found {found}."
    )
    # Inputs to the model (E1xx)
    E101 = (
        "Expected character ids of shape (batch, tokens, {n_chars}) with an integer "
        "dtype, found shape {shape} and dtype {dtype}. Build them with "
        "spacy_elmo.bilm.batch_to_ids(sentences)."
    )
    E102 = (
        "Character id {found} is out of range: this model has {n_characters} "
        "character ids (0 to {max_id}). The ids must come from "
        "spacy_elmo.bilm.batch_to_ids with the same max_characters_per_token."
    )
    E103 = (
        "Expected a list of sentences, each a list of str tokens; found {found} "
        "at sentence {index}. Tokenise first, e.g. [t.text for t in doc]."
    )
    # CLI (E2xx)
    E201 = (
        "Unknown value '{found}' for --layers: expected one of 'all', 'top', "
        "'average'."
    )
    E202 = (
        "The output file '{path}' already exists. Choose another path or delete it "
        "first; spacy-elmo never overwrites a file it did not write in this run."
    )
    # spaCy glue (E4xx)
    E401 = (
        "Unknown ELMo layer mix {found!r}: expected 'average', 'top', a layer index "
        "between -{n_layers} and {n_layers} - 1, or a list of {n_layers} weights. "
        "Set `vector_mix` of the elmo component accordingly."
    )
    E402 = (
        "The doc '{text}' has no ELMo output (doc._.elmo is None): it has not been "
        "through the 'elmo' component. Process it with the pipeline (nlp(text) or "
        "nlp.pipe(texts)) rather than nlp.make_doc, and keep 'elmo' enabled."
    )
    E403 = (
        "The 'elmo' component has no biLM yet: expected weights loaded at "
        "initialisation. Set options_file and weights_file in "
        "[initialize.components.{name}] and run nlp.initialize() (spacy train does), "
        "or call nlp.get_pipe('{name}').initialize(get_examples, nlp=nlp, "
        "options_file=..., weights_file=...)."
    )
    E404 = (
        "The ELMo listener in component '{component}' does not know the biLM's "
        "width: the 'elmo' component it listens to ({upstream}) must come before it "
        "in the pipeline and be initialised first."
    )
    E405 = (
        "The ELMo listener got docs that differ from the batch the 'elmo' component "
        "broadcast (expected {expected} docs with the same tokens, found {found}). "
        "Keep 'elmo' in the training pipeline before its listeners and do not "
        "change docs between them."
    )
    E406 = (
        "Unknown storage dtype '{found}' for the elmo component: expected "
        "'float32' or 'float16'."
    )
    E407 = (
        "Expected the listener's config at the listener path, an "
        "'spacy-elmo.ElmoListener.v1' section (directly or one level down, as in "
        "ElmoTok2Vec's 'elmo' section); found {found}."
    )
