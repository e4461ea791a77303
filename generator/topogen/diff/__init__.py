"""`topogen diff`: a semantic comparison of two rendered trees, and of the analyses behind them.

- `load_tree` reads a rendered tree into documents keyed by apiVersion, kind,
  namespace and name (within their folder);
- `diff` (pure) compares two trees and, when both inputs are known, their
  analyses, into a `DiffReport`;
- `to_markdown`, `to_text`, `to_json` format a report;
- `diff_rendered`, `diff_dirs`, `diff_configs` are the entry points with effects
  (rendering into temporary folders, reading a git ref).
"""

from topogen.diff.changes import (
    AnalysisDelta,
    DiffReport,
    FieldChange,
    FindingChange,
    ObjectChange,
    ObjectKey,
    PlanChange,
    Tree,
    TreeEntry,
    only_clusters,
)
from topogen.diff.core import diff
from topogen.diff.effects import diff_configs, diff_dirs, diff_rendered, render_side
from topogen.diff.jsonout import report_dict, to_json
from topogen.diff.markdown import MARKDOWN_CAP, to_markdown
from topogen.diff.text import to_text
from topogen.diff.tree import KNOWN_TOPS, load_tree

__all__ = [
    "KNOWN_TOPS",
    "MARKDOWN_CAP",
    "AnalysisDelta",
    "DiffReport",
    "FieldChange",
    "FindingChange",
    "ObjectChange",
    "ObjectKey",
    "PlanChange",
    "Tree",
    "TreeEntry",
    "diff",
    "diff_configs",
    "diff_dirs",
    "diff_rendered",
    "load_tree",
    "only_clusters",
    "render_side",
    "report_dict",
    "to_json",
    "to_markdown",
    "to_text",
]
