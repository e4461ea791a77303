"""Kueue (v0.17.0, read from its source and held to its controller in tests/live): the
labels, annotations and scheduling gate it reads and writes (vocabulary.py), its queueing
objects (objects.py) and how it will place a queued job (placement.py). Reads no files."""
