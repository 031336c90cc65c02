"""The augmentation pipeline: data -> method stages -> selection -> report."""
