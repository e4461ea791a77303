"""What an interrupted render leaves in an output tree, told from a listing or two.

Every command checks the trees it names before anything else (journal.finish) and
almost always finds nothing: this module is all that check imports (the journal, the
layout and their dataclasses only when there is something to finish).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CONTROL", "JOURNAL", "RETIRED", "STAGING", "interrupted"]

CONTROL = ".topogen"  # under OUT: the manifest and a render's journal
JOURNAL = "journal"  # under .topogen: a committed render not yet finished
STAGING, RETIRED = "journal.new-", "journal.done-"


def interrupted(out: Path) -> bool:
    """Whether OUT holds what an interrupted render left (cheap: a listing or two)."""
    control = out / CONTROL
    try:
        names = os.listdir(control) if control.is_dir() else []
        tops = os.listdir(out) if names or out.is_dir() else []
    except OSError:
        return False
    leftovers = (JOURNAL, STAGING, RETIRED, "next-", "old-")
    return any(n.startswith(leftovers) for n in names) or any(
        n.startswith((".topogen-render-", ".topogen-old-")) for n in tops
    )
