"""Trainers beside ``spacy train`` (the batch trainer's objective, optimizers and
corpus) and a ``spacy train`` callback that fits a pool's weights on dev."""
