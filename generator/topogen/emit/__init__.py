"""Emit: write the output tree atomically and deterministically, touching only what topogen
owns (layout.py, swap.py, writer.py), and say what a refused group keeps (refusal.py)."""

from topogen.emit.writer import GENERATED_HEADER, WriteReport, stream_objects, write_tree

__all__ = ["GENERATED_HEADER", "WriteReport", "stream_objects", "write_tree"]
