"""Raw text to pretraining batches: `reader` (files to lines), `tokenizers`
(lines to sentences), `prepared` (the tokenised corpus on disk), `vocab` (the
words the softmax predicts) and `lm_batches` (sentences to the tensors of a
batch). Nothing here knows of the model or of a run."""
