"""Render: one module per backend (templates in the top-level templates/ folder); it reads
no inputs: what it needs of them comes through the pipeline."""

from topogen.render.base import RenderedFile, render_documents, to_yaml

__all__ = ["RenderedFile", "render_documents", "to_yaml"]
