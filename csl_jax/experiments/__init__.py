"""Experiments: (split × training data × seed) grids of seq2seq runs, scored
and tabulated as in the papers (`csl-jax experiment`)."""
