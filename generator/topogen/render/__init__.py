"""Render: one module per backend (Jinja2 templates: templates/, installed as
topogen/templates/); it reads no inputs: what it needs of them comes through the pipeline."""

from topogen.render.base import RenderedFile, render_documents, to_yaml

__all__ = ["RenderedFile", "render_documents", "to_yaml"]
