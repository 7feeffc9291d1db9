"""The executor's tools (spec R3): locate, glob, read_file, write_file, shell, search.

``ToolBox`` is what the executor role calls; the Law-1 gate sits in front of every
irreversible action it could take.
"""

from artoo.tasks.tools.box import ToolBox
from artoo.tasks.tools.models import Blocks, Confinement, Gate, PendingAction, ToolError, ToolResult
from artoo.tasks.tools.text import HeadTailBuffer, first_n, head_tail, headTail

__all__ = ["Blocks", "Confinement", "Gate", "HeadTailBuffer", "PendingAction", "ToolBox", "ToolError", "ToolResult",
           "first_n", "head_tail", "headTail"]
