"""Example difficulty (Zhou et al. 2023 §5.1, App. B.2): scores per training
example (`scores.py`), k-means for the prototype score (`kmeans.py`), and
quantile / easy-hard mix subsets written as datasets (`subsets.py`)."""
