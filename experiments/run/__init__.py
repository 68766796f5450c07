"""Training and scoring runs: seeds, learning curves, pretraining for a budget."""
