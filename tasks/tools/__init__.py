"""The executor's tools (spec R3): locate, glob, read_file, write_file, shell, search.

``ToolBox`` (box) is what the executor role calls: it dispatches each call to its tool.  The Law-1
gate (gate) sits in front of every irreversible action it could take, and shell commands run through
the transactional shell (runner: the overlay, the sandbox, the commit of what a command changed).
"""

from artoo.tasks.tools.box import ToolBox
from artoo.tasks.tools.models import Blocks, Confinement, Gate, PendingAction, ToolError, ToolResult
from artoo.tasks.tools.text import HeadTailBuffer, first_n, head_tail, headTail

__all__ = ["Blocks", "Confinement", "Gate", "HeadTailBuffer", "PendingAction", "ToolBox", "ToolError", "ToolResult",
           "first_n", "head_tail", "headTail"]
