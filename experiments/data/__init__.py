"""Fetching and preparing the corpora: package files in, plain text and task data out."""
