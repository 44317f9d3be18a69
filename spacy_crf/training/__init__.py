"""Trainers beside ``spacy train``: the batch trainer's objective, optimizers and corpus."""
