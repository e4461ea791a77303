"""Render: one module per backend; templates live in the top-level templates/ folder."""

from topogen.render.base import RenderedFile, render_documents, to_yaml

__all__ = ["RenderedFile", "render_documents", "to_yaml"]
