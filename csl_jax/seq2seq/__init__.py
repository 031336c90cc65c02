"""A compact T5-style encoder-decoder trained on the SeqIO tasks."""
