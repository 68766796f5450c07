"""What pretraining optimises: `lm` (the forward and backward language models
over a `BiLM`), `softmax` (their shared output layer) and `scoring` (the
perplexity of both over batches)."""
