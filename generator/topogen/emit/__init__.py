"""Emit: write the output tree atomically and deterministically, or stream it (--stdout)."""

from topogen.emit.writer import GENERATED_HEADER, stream_objects, write_tree

__all__ = ["GENERATED_HEADER", "stream_objects", "write_tree"]
