"""A game's life after it is over: the compact sealed record, the archive, and the one read path that
answers the same whichever of hot rows, sealed record or archive a table is in (docs/data.md)."""

from __future__ import annotations

import importlib
from typing import Any

from games.records.codec import NotEncodable, decode, encode
from games.records.log import hands, moves, score_rows, state
from games.records.seal import rename_player, seal, seal_due

# The archive's functions, re-exported by name; the module itself is `games.records.archive`
# (`archive.archive(table_id)`), so the name `archive` here is always the module.
_ARCHIVE_NAMES = ("restore", "archive_due", "load", "rewrite", "delete_app_archives")

__all__ = [
    "NotEncodable",
    "decode",
    "encode",
    "hands",
    "moves",
    "rename_player",
    "score_rows",
    "seal",
    "seal_due",
    "state",
    *_ARCHIVE_NAMES,
]


def __getattr__(name: str) -> Any:
    """The archive's functions, imported when first asked for: archive.py imports this package."""
    if name in _ARCHIVE_NAMES:
        return getattr(importlib.import_module("games.records.archive"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
