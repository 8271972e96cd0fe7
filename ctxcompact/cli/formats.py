"""The ``--format`` choices: the registered dialects' names, as an enum Typer can offer."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

from ctxcompact.transcripts.dialects import DIALECT_NAMES

if TYPE_CHECKING:

    class Format(StrEnum):
        """A registered dialect's name (members made from the registry at run time)."""

else:
    #: The ``--format`` choices: the registered dialects, in the registry's order.
    Format = StrEnum("Format", [(name, name) for name in DIALECT_NAMES])
