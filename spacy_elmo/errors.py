"""Coded errors: each says what was expected, what was found and how to fix it.

Codes are stable once released; add new ones at the end of their block, and
the code to the `codes` of the one class that raises it. Raise an error with
its code once and the template's fields:

    raise DamagedFileError("E317", what="checkpoint", path=path, reason=reason, fix=fix)

`err.code` is the code; ``str(err)`` is the message, "[E317] The run's ...".
Every class is an `ElmoError` (a `ValueError`), so ``except ElmoError``
catches them all; ``except DamagedFileError`` catches one kind.
"""

from typing import Any, ClassVar, FrozenSet


class ErrorsWithCodes(type):
    """Reading a message from a class of this type prefixes it with its code:
    ``Errors.E301`` is "[E301] The text path ...". This is spaCy's
    ``spacy.errors.ErrorsWithCodes``, written out here because importing
    ``spacy.errors`` imports all of spaCy and Thinc, which the biLM, ``embed``
    and ``pretrain`` must run without."""

    def __getattribute__(self, code: str) -> Any:
        message = super().__getattribute__(code)
        if code.startswith("__"):  # Python's own attributes, __doc__ and the like
            return message
        return f"[{code}] {message}"


class ElmoError(ValueError):
    """An error raised by spacy-elmo, carrying a stable code (e.g. ``E003``).

    Raised as itself only for E601 (another process of a torchrun launch
    failed: its own error, raised there, says what and of which class).
    """

    codes: ClassVar[FrozenSet[str]] = frozenset({"E601"})

    def __init__(self, code: str, /, *, extra: str = "", **fields: Any) -> None:
        """code: the key of the message in `Errors`, e.g. "E301".
        fields: the values of the message's {placeholders}.
        extra: text added after the message, for what one raise site alone says.
        """
        self.code = code
        super().__init__(getattr(Errors, code).format(**fields) + extra)

    def __reduce__(self) -> Any:
        # The default would call cls(message), which is not the signature; the
        # message is kept as it was formatted (a field may not pickle).
        return _restore, (type(self), self.code, str(self)), self.__dict__


def _restore(cls: type, code: str, message: str) -> ElmoError:
    err = cls.__new__(cls)
    ValueError.__init__(err, message)
    err.code = code
    return err


class InputError(ElmoError):
    """What was handed in to work on is not usable: text that is missing,
    binary or empty, tokens, character ids or docs of the wrong form, a path
    that names the wrong kind of thing, a device that cannot be used."""

    codes = frozenset(
        {
            "E006",
            "E010",
            "E101",
            "E102",
            "E103",
            "E105",
            "E108",
            "E109",
            "E203",
            "E301",
            "E309",
            "E311",
            "E316",
            "E319",
            "E320",
            "E321",
            "E327",
            "E402",
            "E410",
            "E504",
            "E505",
            "E509",
            "E511",
            "E533",
            "E602",
            "E701",
            "E709",
            "E801",
        }
    )


class ConfigError(ElmoError):
    """A setting, a command-line option or the pipeline's arrangement is
    wrong: an unknown value, a value out of range, a setting that cannot
    change on --resume, a listener without its elmo component. (A pretraining
    config's settings are checked as a whole: E313 is the title of confection's
    ConfigValidationError, which spaCy's show_validation_error prints.)"""

    codes = frozenset(
        {
            "E104",
            "E106",
            "E107",
            "E201",
            "E308",
            "E315",
            "E318",
            "E401",
            "E403",
            "E404",
            "E405",
            "E406",
            "E407",
            "E408",
            "E409",
            "E411",
            "E412",
            "E508",
            "E532",
            "E323",
            "E324",
            "E545",
            "E707",
            "E708",
        }
    )


class DamagedFileError(ElmoError):
    """A file spacy-elmo reads back cannot be read, is damaged or does not
    fit: ELMo options or weights, a vocabulary, a softmax, a checkpoint, a
    run's records, a saved elmo component. The file is left as it is."""

    codes = frozenset(
        {
            "E001",
            "E002",
            "E003",
            "E004",
            "E005",
            "E007",
            "E008",
            "E009",
            "E011",
            "E012",
            "E303",
            "E304",
            "E305",
            "E310",
            "E314",
            "E317",
            "E501",
            "E502",
            "E507",
            "E322",
            "E325",
            "E705",
            "E706",
            "E710",
            "E711",
            "E901",
            "E902",
            "E903",
        }
    )


class OutputError(ElmoError):
    """An output cannot be written: it exists (and is not ours to replace),
    it is a folder or under a file, it is in use by another run, or the disk
    is full or read-only. What was there is as it was."""

    codes = frozenset(
        {
            "E202",
            "E302",
            "E306",
            "E307",
            "E503",
            "E510",
            "E513",
            "E514",
            "E515",
            "E520",
            "E525",
            "E534",
            "E540",
            "E326",
        }
    )


class DivergedRunError(ElmoError):
    """A loss, a perplexity or the weights after an update are NaN or
    infinite: the model has diverged. Nothing from it is reported or
    exported; all processes of a pretraining run raise it at the same step."""

    codes = frozenset({"E312", "E506", "E512", "E535", "E536"})


class DownloadError(ElmoError):
    """A published model could not be downloaded: downloads are off, there is
    no connection, the server refused, stalled or cut the download, or what
    came is not the file the catalogue lists. Nothing of the failed download
    is kept; files already in the cache are as they were."""

    codes = frozenset({"E702", "E703", "E704"})


class Warnings(metaclass=ErrorsWithCodes):
    """What spacy-elmo warns about, with codes as the errors have
    (``warnings.warn(Warnings.W001.format(...))``): something was done
    otherwise than asked, and the result is right."""

    W001 = (
        "store_dtype is 'float16', but the layers of {n_docs} of the {batch} docs "
        "in this batch hold values beyond float16's range (up to {largest:,.0f}; "
        "float16 holds at most 65,504), which float16 would store as inf. Those "
        "docs' layers are stored as float32 (doc._.elmo.layers.dtype says which). "
        'Set store_dtype = "float32" in [components.{name}] to store every doc alike.'
    )


class Errors(metaclass=ErrorsWithCodes):
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
        "and 'weights.hdf5' in it (as BiLM.save_allennlp writes), or exactly one "
        "'*options.json' and one '*weights.hdf5' (AllenNLP's names); found {found}. "
        "Pass the two files' paths instead."
    )
    E007 = (
        "The ELMo options file '{path}' describes a biLM of {n_parameters:,} "
        "parameters ({gib:,.1f} GiB in float32), more than the {limit:,} this "
        "loader builds (the original ELMo has 93.6 million). A size is probably "
        "mistyped: check lstm.dim, lstm.projection_dim, lstm.n_layers, "
        "char_cnn.filters and char_cnn.n_highway."
    )
    E008 = (
        "The ELMo weights file '{path}' links the dataset '{dataset}' to {target}, "
        "which cannot be opened. Restore what the link points to, or store the "
        "data in the weights file itself (e.g. h5copy it in place of the link)."
    )
    E009 = (
        "The ELMo weights file '{path}' holds the dataset '{dataset}' as {found}: "
        "expected real numbers, a float or integer type whose values fit float32 "
        "(the weights are read as float32); {why}. The file was not written as "
        "bilm-tf weights; export the weights again."
    )
    E010 = (
        "The ELMo {kind} file '{path}' is {found}, not a regular file: expected an "
        "AllenNLP/bilm-tf {kind} file (options.json / weights.hdf5), which is read "
        "only from a regular file (a link to one is fine). Put the {kind} file itself "
        "at '{path}', or pass the path of one."
    )
    E011 = (
        "The ELMo options file '{path}' holds {size} bytes: expected at most "
        "{limit:,} (an options.json is under 1 kB), so it is not read. Pass the "
        "path of the model's options.json (a weights file is passed as the second "
        "path, or both as the folder that holds them)."
    )
    E012 = (
        "The ELMo weights file '{path}' takes '{name}' from {source}: a weights "
        "file is read by itself, and never made to read other paths. Store the "
        "data in the weights file itself (h5copy -f ext copies what an external "
        "link points to in its place), or export the weights again."
    )
    # Inputs to the model (E1xx)
    E101 = (
        "Expected character ids of shape (batch, tokens, {n_chars}) in int16, int32 "
        "or int64 (the ids go up to {max_id}), found shape {shape} and dtype {dtype}. Build them with "
        "spacy_elmo.bilm.batch_to_ids(sentences, max_chars={n_chars}), the "
        "model's char_cnn.max_characters_per_token."
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
    E104 = (
        "Unknown precision '{found}': expected one of {choices}. Set it with "
        "--precision (embed) or [training] precision (pretrain)."
    )
    E105 = (
        "Expected distinct words starting with '<S>', '</S>', word indices below "
        "{n_words} and sentence lengths summing to the {n_tokens} indices; found "
        "{found}. Build them with spacy_elmo.bilm.char_ids.distinct_words(sentences), "
        "or call BiLM.encode_words(sentences)."
    )
    E106 = (
        "Expected max_graphs of at least 1 (the most batch shapes whose CUDA graphs "
        "are kept), found {found}. Pass BiLM.use_cuda_graphs(max_graphs=8), or "
        "enabled=False to run without graphs."
    )
    E107 = (
        "The biLM runs in float32, found its {part} in {dtype}. Call .float() on the "
        "biLM; lower-precision arithmetic comes from autocast (precision 'bf16' or "
        "'tf32', spacy_elmo.bilm.precision), and a float64 copy's values from "
        "spacy_elmo.bilm.reference.reference_layers."
    )
    E108 = (
        "Expected each row of character ids to hold its tokens first, then padding "
        "(slots of all zeros), as batch_to_ids makes them; found {found}. Build them "
        "with spacy_elmo.bilm.batch_to_ids(sentences)."
    )
    E109 = (
        "Expected integer word indices and sentence lengths, found {name} of dtype "
        "{dtype}: a float index or length would be truncated to another word or "
        "length. Pass integer arrays, as spacy_elmo.bilm.char_ids.distinct_words"
        "(sentences) gives them, or call BiLM.encode_words(sentences)."
    )
    # CLI (E2xx)
    E201 = "Unknown value '{found}' for --layers: expected one of 'all', 'top', 'average'."
    E202 = (
        "The output file '{path}' already exists. Choose another path or delete it "
        "first; spacy-elmo never overwrites a file it did not write in this run."
    )
    E203 = (
        "Could not read the input file '{path}': {reason}. Expected UTF-8 text "
        "with one sentence per line, tokens separated by whitespace."
    )
    # spaCy glue (E4xx)
    E401 = (
        "Unknown ELMo layer mix {found!r}: expected 'average', 'top', a layer index "
        "between -{n_layers} and {n_layers} - 1, or a list of {n_layers} weights, "
        "each finite in float32 (at most 3.4e38 in size). "
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
    E406 = "Unknown storage dtype '{found}' for the elmo component: expected 'float32' or 'float16'."
    E407 = (
        "Expected the listener's config at the listener path, an "
        "'spacy-elmo.ElmoListener.v1' section (directly or one level down, as in "
        "ElmoTok2Vec's 'elmo' section); found {found}."
    )
    E408 = (
        "Expected the ScalarMix's fixed `layer` to be one of the biLM's layers, 0 to "
        "{n_layers} - 1 (0 = the token representation, j = LSTM j); found layer = "
        "{layer}. Fix `layer` in the mix's config section, or leave it unset for a learned mix."
    )
    E409 = (
        "The ELMo listener in component '{component}' expected the ELMo layers of "
        "every doc in doc._.elmo, written by the '{upstream}' component, but found "
        "none for {n_missing} of {n_docs} docs (the first: '{text}'): '{upstream}' "
        "did not run on them. Enable it (it is disabled or excluded: check "
        "nlp.select_pipes(disable=...) and spacy.load(..., disable=/exclude=)) and "
        "keep it before '{component}' in the pipeline. The listener does not run the "
        "biLM itself; to give '{component}' a biLM of its own, use "
        "nlp.replace_listeners('{upstream}', '{component}', [...])."
    )
    E410 = (
        "The ELMo layers in doc._.elmo were computed for other tokens than the "
        "doc '{text}' now has: {difference}. The doc was retokenized (tokens "
        "merged or split) after the elmo component ran, and its rows would belong "
        "to other tokens. Retokenize before the elmo component (put "
        "merge_entities, merge_noun_chunks or your own retokenizing component "
        "before it in the pipeline), or run it again on the retokenized doc "
        "(doc = nlp.get_pipe('elmo')(doc)), which replaces doc._.elmo."
    )
    E411 = (
        "{where} has {n} setting(s) out of range or of the wrong type: {problems}. "
        "Fix them in the config ({section}) or in the call."
    )
    E412 = (
        "The segmenter {segmenter} cut the doc '{text}' ({n_tokens} tokens) into "
        "windows that {problem}. Expected a list of windows (start, end, keep_start, "
        "keep_end) with 0 <= start <= keep_start <= keep_end <= end <= {n_tokens}, "
        "whose kept ranges keep_start..keep_end cover every token exactly once "
        "(a token in no kept range would get no vectors, one in two would get "
        "two). Fix the segmenter, or set another in [components.elmo.model.segmenter] "
        "(e.g. spacy-elmo.sentences.v1 or spacy-elmo.windows.v1)."
    )
    # Pretraining (E3xx)
    E301 = (
        "The text path '{path}' does not exist. Expected a text file or a folder of "
        "them; set paths.train / paths.dev in the pretraining config (or pass an "
        "existing TEXT to the perplexity command)."
    )
    E302 = (
        "The folder '{path}' exists but holds no prepared corpus of spacy-elmo "
        "(no meta.json in it that names the format {format!r}), so it is not "
        "replaced. Set corpus.prepared_dir to a new or empty folder; remove this "
        "one only if it is a corpus prepared by an earlier version (it is then "
        "prepared again from the text)."
    )
    E303 = (
        "The vocabulary lacks the entries {missing}: expected '<S>', '</S>' and "
        "'<UNK>' among its lines. Add them to the vocab.txt named in vocab.path, or "
        "leave vocab.path unset to count the vocabulary from the training text."
    )
    E304 = (
        "Could not read '{path}': {reason}. Expected a file written by the pretrain "
        "command (vocab.txt: UTF-8, one entry a line; softmax.hdf5: HDF5)."
    )
    E305 = (
        "The softmax file '{path}' does not match its own settings: '{name}' should "
        "have shape {expected}, found {found}. The file is damaged or was not "
        "written by the pretrain command; export the model again."
    )
    E306 = (
        "The output folder '{path}' holds {found} but no pretraining run (no "
        "config.cfg), so nothing is written there. Choose a new or empty folder."
    )
    E307 = (
        "The output folder '{path}' already holds a pretraining run. Pass --resume "
        "to continue it, or choose another folder; a run is never overwritten."
    )
    E308 = (
        "The output folder '{path}' holds a different run: {differences}. Only "
        "[training] settings and system.threads may change on --resume, and of "
        "those neither the optimiser (its saved state is that optimiser's) nor "
        "tokens_per_batch (the position in the epoch counts its batches). Resume it "
        "with the config it was started with (its config.cfg), or start this run "
        "in another folder."
    )
    E309 = (
        "The model folder '{path}' has no '{name}': expected the export of the "
        "pretrain command (options.json, weights.hdf5, vocab.txt, softmax.hdf5). "
        "Weights from elsewhere carry no softmax, so their perplexity cannot be "
        "computed; fine-tune them with pretrain --init-from first."
    )
    E310 = (
        "The softmax in '{path}' does not fit the biLM and vocabulary beside it: it "
        "maps {in_dim} inputs to {n_classes} words, expected {projection_dim} inputs "
        "(the biLM's projection_dim) and {n_words} words (vocab.txt). Export the "
        "model again."
    )
    E311 = (
        "The training text {paths} holds no tokens (after skipping empty lines and "
        "lines that are not UTF-8). Point paths.train at text files or folders "
        "with text in them."
    )
    E312 = (
        "Training stopped at step {step}: the {what} is {value}. Nothing from this "
        "step was saved; {kept}. Lower training.optimizer.learn_rate, set "
        "training.grad_clip (e.g. 1.0) or more warm-up steps, then continue with "
        "--resume."
    )
    # E313 is the title of confection's ConfigValidationError (see ConfigError).
    E313 = (
        "The pretraining config {where} has {n} wrong setting(s), listed below: "
        "each with where it is, what was expected and what was found. Fix them "
        "in the .cfg file or override them with --section.key value; every "
        "setting and registered function, with its defaults, is in docs/configs.md."
    )
    E314 = (
        "The checkpoint '{path}' has format {found}, expected {expected}: it was "
        "written by another version of spacy-elmo, whose learning-rate schedule "
        "state torch's schedulers cannot take over. Finish the run with the "
        "version that started it, or start a new run from its export with "
        "pretrain --init-from OUTPUT_DIR/model."
    )
    E315 = (
        "The checkpoint '{path}' continues a learning-rate schedule built for "
        "{saved}, but the config now says {found}. torch's schedulers resume "
        "from their saved state, so these settings cannot change on --resume. "
        "Set them back in the config, or start a new run from the export with "
        "pretrain --init-from OUTPUT_DIR/model."
    )
    E316 = (
        "The {which} file '{path}' {change} since the run in '{run}' was started "
        "({detail}), so --resume would continue the run on other data. Restore "
        "the data the run was started with (its files, sizes and SHA-256 are in "
        "'{record}'), or start a new run in another folder (with --init-from "
        "OUTPUT_DIR/model to begin from this run's export, if it has one)."
    )
    E317 = (
        "The run's {what} '{path}' is damaged: {reason}. The run cannot be "
        "resumed with it; the file was left as it is. {fix}"
    )
    E318 = (
        "Could not read the pretraining config '{path}': {reason}. Expected a "
        "spaCy-style .cfg text file (UTF-8, [section] headers and key = value "
        "lines), e.g. configs/bilm_demo.cfg."
    )
    E319 = (
        "The {which} text '{path}' is a binary file (its first 8 KiB are almost "
        "all NUL bytes or bytes that are not UTF-8), not UTF-8 text{more}. "
        "Expected text files, one sentence or paragraph a "
        "line. Remove it from paths.{key} (or from the folder named there), or "
        "convert it to text first."
    )
    E320 = (
        "The {what} '{inner}' is inside the {which} text folder '{folder}', so the "
        "run would read its own files (config.cfg, inputs.json, the checkpoint) as "
        "training text. Nothing was written. Choose an OUTPUT_DIR (and "
        "corpus.prepared_dir) outside '{folder}', or move the text into a folder of "
        "its own and point paths.{key} at it."
    )
    E321 = (
        "The text path '{path}' is {kind}, not a regular file or a folder. Expected "
        "a text file or a folder of them; copy the text into a file first (e.g. "
        "cat {path} > text.txt) and pass that."
    )
    E322 = (
        "The prepared corpus in '{path}' is damaged: {reason}. It is derived from "
        "the text, so nothing is lost: remove the folder and run again, and it is "
        "prepared anew."
    )
    E323 = (
        "The tokenizer {found!r} (corpus.tokenizer) is unknown: {reason}. Expected "
        "one of the registered tokenizers ({registered}), 'blank:LANG' with a "
        "language spaCy has (e.g. 'blank:en'), an installed spaCy pipeline package "
        "or the path of a saved pipeline{suggestion}."
    )
    E324 = (
        "The pretraining config {where} refers to a variable that it does not "
        "define: {reason}. Expected every ${{section.key}} to name a setting of "
        "the config; define it (e.g. in [paths]) or fix the reference."
    )
    E325 = (
        "The model file '{path}' does not read as the pretrain command writes "
        "it: {field} is {found}, expected {expected}. Nothing was built from it. "
        "The file was edited or damaged; export the model again (python -m "
        "spacy_elmo export RUN_DIR OUTPUT, or the run's own OUTPUT_DIR/model)."
    )
    E326 = (
        "The model folder '{path}' is {found}: the model is written beside it "
        "and then renamed into its place, which {why}. Nothing was written. {fix}"
    )
    E327 = (
        "The prepared corpus folder '{prepared}' {relation} the {which} text "
        "path '{text}': preparing a corpus replaces its train/ and dev/ folders, "
        "which could delete the text. Nothing was written. Set "
        "corpus.prepared_dir to a folder apart from paths.{key} (or leave it "
        "unset: OUTPUT_DIR/prepared)."
    )
    # Reliability: inputs, faults and damaged files (E5xx)
    E501 = (
        "The ELMo weights file '{path}' holds the dataset '{dataset}', which the "
        "options file '{options}' does not use: {why}. Every dataset must be "
        "used, or the biLM would silently compute something else; {fix}."
    )
    E502 = (
        "The ELMo weights in {path} are not finite: dataset '{dataset}' holds "
        "{count} NaN or infinite value(s) out of {size}. The weights are damaged "
        "or come from a diverged training run; export them again from a good "
        "checkpoint."
    )
    E503 = (
        "The run folder '{path}' is in use by another pretraining process "
        "({holder}); two runs in one folder would both train and both export "
        "into its model/. Wait for that run to end or stop it (its lock goes "
        "with it, even after a kill), or choose another folder."
    )
    E504 = (
        "There is nothing to measure: {what} holds no tokens ({detail}). "
        "Expected UTF-8 text, one sentence or paragraph a line; a perplexity "
        "over no predictions is not a number."
    )
    E505 = (
        "The dev text {paths} holds no tokens (after skipping empty lines and "
        "lines that are not UTF-8 text), so the dev perplexity could not be "
        "measured. Point paths.dev at text with tokens in it, or set it to null "
        "to train without a dev set."
    )
    E506 = (
        "The {what} perplexity is not finite (forward {forward}, backward "
        "{backward} over {tokens} predictions): the model has diverged, or its "
        "weights hold NaN or infinite values. Nothing was reported or exported "
        "from it. Lower training.optimizer.learn_rate, set training.grad_clip "
        "(e.g. 1.0) or more warm-up steps, and continue with --resume from the "
        "last good checkpoint."
    )
    E507 = (
        "Could not load the saved elmo component from '{path}': {reason}. The "
        "file is damaged, was edited by hand or is missing; save the pipeline "
        "again (nlp.to_disk) or restore the file from a copy."
    )
    E508 = "The elmo component's setting '{key}' is {found!r}: expected {expected}. Found in {where}."
    E509 = (
        "The device '{found}' cannot be used: {reason}. Pass 'cpu', or 'cuda' / "
        "'cuda:N' on a machine where PyTorch sees a CUDA GPU (it sees {n_gpus})."
    )
    E510 = (
        "Cannot create the output '{path}': {reason}. Choose an output path "
        "whose parent is a folder (or can be made one)."
    )
    E511 = (
        "'{path}' is not a saved spaCy pipeline: {reason}. Pass a folder written "
        "by nlp.to_disk or spacy train (e.g. training/ner/model-best), with a "
        "config.cfg in it."
    )
    E512 = (
        "Training stopped at step {step}: its update left {n_bad} weight "
        "tensor(s) with NaN or infinite values ({names}), though the loss was "
        "finite. Nothing was exported. {saved}, with a lower "
        "training.optimizer.learn_rate, training.grad_clip set (e.g. 1.0) or "
        "more warm-up steps."
    )
    E513 = (
        "Could not write the output '{path}': {reason}. Nothing was written: "
        "'{path}' is as it was and no temporary file is left. If the disk is "
        "full or a file size limit (ulimit -f) was reached, free some space or "
        "write to another disk, then run again."
    )
    E514 = (
        "Cannot write the output '{path}': {reason}. Choose an output in a "
        "folder you can write to, or make '{folder}' writable (e.g. chmod u+w, "
        "or remount it read-write)."
    )
    E515 = (
        "The output '{path}' names a folder ({why}), but embed writes one HDF5 "
        "file. Pass the path of the file to create, e.g. '{example}'."
    )
    E520 = (
        "Cannot write the layer-weight chart to '{path}': {reason}. Nothing was "
        "written. Pass --output with the path of a new or replaceable image file "
        "(e.g. mix.png) in a folder you can write to."
    )
    E525 = (
        "Could not write '{path}': {reason}. The disk is full, or a disk quota or "
        "the file-size limit (ulimit -f) was reached. Nothing half-written was "
        "left behind and the run's files are as they were. Make room or raise "
        "the limit, then run the same command again (with --resume once the run "
        "has saved a checkpoint)."
    )
    E532 = (
        'Cannot store the weights as {found!r}: {why}. Store them as "float32" (the '
        'default) or "float16" (half the size, loaded back as float32).'
    )
    E533 = (
        "Cannot export from '{path}': {reason}. Pass the OUTPUT_DIR of a pretrain run "
        "that has saved a checkpoint (checkpoint.pt), e.g. training/my_bilm; a finished "
        "run's model is already in its model/ folder."
    )
    E534 = (
        "The export's output '{path}' already exists ({found}): the model is written to "
        "a new or empty folder only, so nothing was written. Choose another folder, or "
        "remove this one first."
    )
    E535 = (
        "The biLM gave NaN or infinite layers for {what}: its weights are not finite "
        "(a diverged fine-tuning, or damaged weights) or so large that its arithmetic "
        "overflows. Nothing from it was stored or written. Load good weights (a "
        "pipeline or checkpoint saved before), and fine-tune with a lower learning "
        "rate, or keep the biLM frozen."
    )
    E536 = (
        "Cannot save the biLM: its weight '{dataset}' holds {count} NaN or infinite "
        "value(s) out of {size}, and weights like these would not load again (E502). "
        "The model has diverged in training, or its weights were damaged; nothing "
        "was written. Save from good weights: a pipeline or checkpoint from before, "
        "fine-tuned with a lower learning rate or with the biLM frozen."
    )
    E545 = (
        "The environment variable {name} is {found}: expected {expected}. "
        "WORLD_SIZE above 1 means a process started by torchrun, which sets "
        "RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT for each "
        "process. Start the command with torchrun (e.g. torchrun "
        "--nproc_per_node 2 -m spacy_elmo ...), or unset WORLD_SIZE to run one "
        "process. Nothing was loaded or written."
    )
    E540 = (
        "Cannot save the biLM into '{directory}': '{path}' is a folder, where the "
        "{kind} file goes. Nothing was written. Remove or rename that folder, or "
        "save into another one."
    )
    # Several processes (E6xx)
    E601 = (
        "Process {rank} of the {world_size} started by torchrun failed, so "
        "this one stopped too and no output was written: {reason}. Its own "
        "message says more; fix that and run again."
    )
    E602 = (
        "--device {found} names one GPU, but torchrun started {world_size} "
        "processes, which would all run on it. Pass --device cuda: each "
        "process then uses the GPU of its LOCAL_RANK (cuda:0, cuda:1, ...)."
    )
    # Published models and their cache (E7xx)
    E701 = (
        "'{found}' is not the name of a published model: expected one of {names} "
        "(python -m spacy_elmo models lists them, with their sizes)."
    )
    E702 = (
        "The model '{name}' is not in the cache, and downloads are off ({switch}). "
        "Expected {files} in '{folder}'. Download them on a machine that has the "
        "network ({urls}) and put them in that folder under these names (their "
        "SHA-256 is recorded at first use), or allow downloads and run python -m "
        "spacy_elmo download {name}."
    )
    E703 = (
        "Could not download '{url}' for the model '{name}': {reason}. Nothing of "
        "it was kept. Check the network (a proxy is read from HTTPS_PROXY) and "
        "run python -m spacy_elmo download {name} again (--timeout for a slow "
        "line), or download {files} by other means ({urls}) and put them in "
        "'{folder}' under these names."
    )
    E704 = (
        "The download of '{url}' for the model '{name}' is not the file the "
        "catalogue lists: its {what} is {found}, expected {expected}. It was not "
        "kept, and nothing of the model was written to '{folder}'. The download "
        "was damaged on the way, or the file on the server has changed: run "
        "python -m spacy_elmo download {name} again, and if it fails the same way, "
        "compare the server's file with the catalogue (spacy_elmo.published_models)."
    )
    E705 = (
        "The cached file '{path}' of the model '{name}' is not {which}: its {what} "
        "is {found}, expected {expected}. It was left as it is and not loaded. "
        "Delete the folder '{folder}' and download the model again (python -m "
        "spacy_elmo download {name}), or put the original file back."
    )
    E706 = (
        "The cache record '{path}' of the model '{name}' cannot be read: {reason}. "
        "It holds the SHA-256 of each of the model's files as first downloaded, "
        "checked at every load. Delete the folder '{folder}' and download the "
        "model again (python -m spacy_elmo download {name})."
    )
    E707 = (
        "The environment variable {variable} is {found!r}: expected 1, true, yes "
        "or on (no downloads: only models in the cache load), or 0, false, no, off "
        "or nothing (downloads allowed). Set it to one of these, or unset it."
    )
    E708 = (
        "The model cache '{path}' cannot be used: {reason}. Set {variable} to a "
        "folder you can write to (it is made if missing), or unset it to use "
        "'{default}'."
    )
    E709 = (
        "'{found}' is neither the name of a shipped or published model ({names}) nor an "
        "existing file or folder. Pass one of these names, or the path of a folder "
        "holding options.json and weights.hdf5 (or of an options.json)."
    )
    E710 = (
        "The shipped model '{name}' is damaged: '{path}' {problem}. Its files are "
        "checked against '{sums}' when it loads, and nothing was loaded. Reinstall "
        "spacy-elmo (pip install --force-reinstall --no-deps spacy-elmo; in a clone "
        "of its repository, restore the folder '{folder}'), or pass the path of "
        "another model's folder."
    )
    E711 = (
        "The archive '{path}' of the model '{name}' cannot be unpacked: {problem}. "
        "Nothing of it was unpacked. Delete the folder '{folder}' and download the "
        "model again (python -m spacy_elmo download {name}); if it fails the same "
        "way, unzip the archive by hand and pass the path of the model's folder."
    )
    # Other toolkits' interfaces and files (E8xx)
    E801 = (
        "use_sentence_keys names each dataset by its sentence, and {found}: HDF5 "
        "dataset names must be distinct, not empty, not '.' and without '/'. Leave "
        "use_sentence_keys off (datasets named by line number, with the "
        "'sentence_to_index' map), or remove those lines from the input."
    )
    E901 = (
        "The file '{path}' is not a state dict of tensors: it holds {found}. Weights "
        "in a pickle are read without running anything the file carries (unpickling "
        "can run any program), and only a dict of tensors, as "
        "torch.save(module.state_dict()) writes it, is accepted. Ask whoever made the "
        "file for its state dict alone, saved in a trusted environment."
    )
    E902 = (
        "The ELMoForManyLangs model in '{path}' {problem}. Expected the folder of one "
        "of its models as unzipped: config.json naming the architecture JSON, "
        "char.dic, word.dic (when the architecture's word_dim is above 0), "
        "token_embedder.pkl and encoder.pkl, for a 'cnn' token embedder and an "
        "'elmo' encoder. {fix}"
    )
    E903 = (
        "The {kind} table '{path}' {problem}: expected {expected}. Use the table "
        "that came with the model's weights (char.dic and word.dic in an "
        "ELMoForManyLangs zip; chars.json and words.json where convert wrote them)."
    )
