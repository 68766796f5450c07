"""Each task's data into seeded train/dev/test DocBins."""
