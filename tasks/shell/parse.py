"""Shell text → simple commands, read by tree-sitter's bash grammar (a hand-written scanner got corners wrong).

Every command a line would run is found, including those hidden in ``$( … )``, backticks, process
substitutions, here-documents, ``case`` arms, loops and ``;``/``&&``/``|`` chains: each simple
command's words (quotes removed, substitutions replaced by placeholders whose inner text is kept
apart), its redirections, its here-input and the stage it reads a pipe from.  Text the grammar
cannot read raises ParseError.  Nothing here judges or blames.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

try:
    import tree_sitter_bash
    from tree_sitter import Language, Node, Parser
except ImportError as exc:  # an environment installed before the dependency was added
    raise ImportError(f"artoo reads shell commands with tree-sitter-bash, which is not installed ({exc}); "
                      "reinstall artoo: pip install -e .") from exc

SUB = "__ARTOO_SUB{}__"
"""Placeholder word standing for a command substitution (``$( … )``, backticks) whose value is unknown."""
PROC_IN = "__ARTOO_PIN{}__"
"""Placeholder for a process substitution ``<( … )``: a file the command reads the inner output from."""
PROC_OUT = "__ARTOO_POUT{}__"
"""Placeholder for a process substitution ``>( … )``: a file the command writes into the inner command."""
PLACEHOLDER = re.compile(r"__ARTOO_(SUB|PIN|POUT|DOC)(\d+)__")

KEYWORDS = {"if", "then", "else", "elif", "fi", "while", "until", "do", "done", "!", "{", "}", "esac",
            "function", "[[", "]]"}
HEADERS = {"for", "case", "select"}
"""First words of the pseudo-commands that stand for a loop or case header: they run nothing themselves."""

_BASH = Language(tree_sitter_bash.language())
_LOCAL = threading.local()
"""One tree-sitter Parser per thread: a Parser keeps state while it parses, and subtasks run in threads."""


def _parser() -> Parser:
    parser = getattr(_LOCAL, "parser", None)
    if parser is None:
        parser = _LOCAL.parser = Parser(_BASH)
    return parser


_BLOCKS = {"subshell", "compound_statement", "do_group", "if_statement", "elif_clause", "else_clause",
           "while_statement", "negated_command", "ERROR"}
"""Nodes whose statements are read one by one (what an unreadable stretch holds is read too)."""
_WRITE_TARGETS_SKIPPED = {"<", "<&", "<<", "<<-"}


class ParseError(ValueError):
    """The text is not a command the shell would accept (unbalanced quotes or brackets)."""


@dataclass
class Redirect:
    """One file redirection: the operator and its target word."""

    op: str
    target: str


@dataclass
class Simple:
    """One simple command: its words, its redirections, and where its stdin comes from."""

    words: list[str]
    redirects: list[Redirect] = field(default_factory=list)
    pipe_from: Simple | None = None
    here_input: str | None = None
    reads: list[str] = field(default_factory=list)
    """Files it reads by redirection (``< in.txt``): no Law-1 matter, but a target when the read fails."""
    background: bool = False
    """Runs in the background (``server &``): a process of the line's own, which its ``kill`` may mean."""


@dataclass
class Script:
    """A parsed command line: its simple commands and the texts it hides in substitutions."""

    commands: list[Simple]
    substitutions: list[str]


def parse(text: str, partial: bool = False) -> Script:
    """Split shell text into simple commands; raise ParseError when the grammar cannot read it.

    ``partial=True`` never raises: it returns what the grammar could read around its errors
    (what is inside an unreadable stretch is still judged, so an error never hides a command).
    """
    source = text.encode()
    root = _parser().parse(source).root_node
    if root.has_error and not partial:
        raise ParseError(_error_message(root, source))
    if root.has_error and "((" in text:  # ``$((rm a))`` is no arithmetic: dash runs ``$( (rm a))``
        respelled = text.replace("((", "( (").encode()
        second = _parser().parse(respelled).root_node
        source, root = (respelled, second) if not second.has_error else (source, root)
    flat = _Flattener(source)
    try:
        flat.statements(root)
        skipped = _skipped(root, source, flat.read_gaps)
    except RecursionError as exc:  # thousands of nested blocks: nobody writes that to be read
        if partial:
            return Script([], [])
        raise ParseError("blocks nest too deeply to read") from exc
    if skipped and not partial:
        raise ParseError(f"the grammar skipped `{skipped[:40]}`")
    return Script([c for c in flat.commands if c.words or c.redirects or c.here_input is not None],
                  flat.subs)


def _error_message(root: Node, source: bytes) -> str:
    """Where the grammar gave up, in words: the first missing token or unreadable stretch."""
    stack = [root]
    while stack:
        node = stack.pop(0)
        if node.is_missing:
            return f"missing `{node.type}` at line {node.start_point[0] + 1}"
        if node.type == "ERROR":
            snippet = source[node.start_byte:node.end_byte].decode(errors="replace").strip()[:40]
            return f"cannot read `{snippet}` at line {node.start_point[0] + 1}"
        stack = [c for c in node.children if c.has_error or c.is_missing] + stack
    return "the grammar could not read it"


def _skipped(root: Node, source: bytes, read: set[int]) -> str:
    """Text no token of the tree covers (the grammar passed over it), except gaps the flattener read.

    A here-document body is text as a whole: the grammar leaves its literal stretches between
    substitutions outside every token."""
    at, stack = 0, [root]
    while stack:
        node = stack.pop()
        if node.child_count and node.type != "heredoc_body":
            stack.extend(reversed(node.children))
            continue
        gap = source[at:node.start_byte].decode(errors="replace").replace("\\\n", "").strip()
        if node.start_byte > at and gap and at not in read:
            return gap
        at = max(at, node.end_byte)
    return source[at:].decode(errors="replace").strip()


def strip_prefix(words: list[str]) -> list[str]:
    """Drop shell keywords and leading NAME=value assignments; a for/case header runs nothing."""
    i = 0
    while i < len(words) and (words[i] in KEYWORDS or re.match(r"[A-Za-z_][A-Za-z0-9_]*\+?=", words[i])):
        i += 1
    return [] if words[i:i + 1] and words[i] in HEADERS else words[i:]


def _unescape(text: str) -> str:
    """An unquoted word as the shell passes it: line continuations gone, ``\\x`` → ``x``."""
    return re.sub(r"\\(.)", r"\1", text.replace("\\\n", ""), flags=re.DOTALL)


def _unescape_double(text: str) -> str:
    """Inside double quotes a backslash only escapes ``$``, a backtick, ``"``, ``\\`` and a newline."""
    return re.sub(r"\\([$`\"\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


class _Flattener:
    """Walks the syntax tree once, collecting simple commands and substitution texts."""

    def __init__(self, source: bytes) -> None:
        self.source = source
        self.commands: list[Simple] = []
        self.subs: list[str] = []
        self.pipe: Simple | None = None
        """The stage the next simple command reads its stdin from (set while walking a pipeline)."""
        self.read_gaps: set[int] = set()
        """Where text the grammar left outside every token was read anyway (``python3 - <<EOF``)."""
        self.backgrounds = 0  # enclosing statements that end in ``&``: what is emitted now runs in the background

    def text(self, node: Node) -> str:
        return self.source[node.start_byte:node.end_byte].decode(errors="replace")

    # ------------------------------------------------------------ statements
    def statements(self, node: Node) -> None:
        """Each statement child of a program or block; one followed by ``&`` runs in the background."""
        children = node.children
        for i, child in enumerate(children):
            if not child.is_named or child.type == "comment":
                continue
            background = i + 1 < len(children) and children[i + 1].type == "&"
            self.backgrounds += background
            self.statement(child)
            self.backgrounds -= background

    def statement(self, node: Node) -> None:
        kind = node.type
        if kind == "command":
            self.command(node)
        elif kind == "redirected_statement":
            self.redirected(node)
        elif kind == "pipeline":
            self.pipeline(node.children)
        elif kind == "list":
            for part in (c for c in node.children if c.is_named):
                self.statement(part)
        elif kind == "compound_statement" and node.children[0].type == "((":
            self.emit(["test", self.substitution(node, SUB), self.text(node)])  # dash: nested subshells
        elif kind in _BLOCKS:
            self.statements(node)
        elif kind == "function_definition":  # the body runs when called: later, maybe never, maybe often
            body = node.child_by_field_name("body")
            if body is not None:
                self.statement(body)
        elif kind in ("for_statement", "c_style_for_statement", "case_statement"):
            self.header_and_body(node)
        elif kind in ("declaration_command", "unset_command"):
            self.emit([self.text(node.children[0])] + [self.word(c) for c in node.children[1:] if c.is_named])
        elif kind in ("variable_assignment", "variable_assignments"):
            parts = [c for c in node.children if c.is_named] if kind == "variable_assignments" else [node]
            self.emit([self.word(p) for p in parts])
        else:  # [[ … ]] and the like: only their substitutions run
            self.emit(["test", *self.substitutions_in(node), self.text(node)])

    def header_and_body(self, node: Node) -> None:
        """A for/select/case header becomes a pseudo-command (its words, which run nothing); bodies nest."""
        keyword = "case" if node.type == "case_statement" else "for"
        blocks = ("do_group", "compound_statement", "case_item", "comment")
        self.emit([keyword, *(self.word(c) for c in node.children if c.is_named and c.type not in blocks)])
        for child in node.children:
            if child.type == "case_item":
                self.case_item(child)
            elif child.type in ("do_group", "compound_statement"):
                self.statements(child)

    def case_item(self, node: Node) -> None:
        patterns = [self.word(c) for c in node.children_by_field_name("value")]
        self.emit(["case", *patterns])
        values = {c.id for c in node.children_by_field_name("value")}
        for child in node.children:
            if child.is_named and child.id not in values and child.type != "comment":
                self.statement(child)

    def pipeline(self, children: list[Node]) -> None:
        for child in children:
            if child.type in ("|", "|&"):
                self.pipe = self.commands[-1] if self.commands else None
            elif child.is_named and child.type != "comment":
                self.statement(child)
        self.pipe = None

    def redirected(self, node: Node) -> None:
        body = node.child_by_field_name("body")
        redirects = [c for c in node.children if c.type.endswith("_redirect")]
        if body is not None and body.type == "command":
            simple = self.command(body)
            if redirects:  # ``python3 - <<EOF``: the grammar leaves the ``-`` outside every token
                gap = self.source[body.end_byte:redirects[0].start_byte].decode(errors="replace")
                simple.words.extend(_unescape(w) for w in gap.split())
                self.read_gaps.add(body.end_byte)
        else:
            if body is not None:
                self.statement(body)
            simple = self.emit([])
        for redirect in redirects:
            self.redirect(simple, redirect)
            self.continuation(redirect)

    def continuation(self, redirect: Node) -> None:
        """``cat <<EOF | sh`` or ``cat <<EOF && rm x``: the grammar nests what follows in the here-doc."""
        if redirect.type != "heredoc_redirect":
            return
        for child in redirect.children:
            if child.type == "pipeline":
                self.pipe = self.commands[-1] if self.commands else None
                self.pipeline(child.children)
            elif child.is_named and child.type not in ("heredoc_start", "heredoc_body", "heredoc_end",
                                                       "file_redirect", "herestring_redirect", "comment"):
                self.statement(child)

    # ------------------------------------------------------------ simple commands
    def command(self, node: Node) -> Simple:
        words: list[str] = []
        redirects: list[Node] = []
        nested: list[Node] = []
        end = -1
        for i, child in enumerate(node.children):
            name = node.field_name_for_child(i)
            if child.type.endswith("_redirect"):
                redirects.append(child)
            elif child.type == "variable_assignment" or name in ("name", "argument"):
                if child.start_byte == end and words:  # ``@<(cat x)``: the grammar splits one word in two
                    words[-1] += self.word(child)
                else:
                    words.append(self.word(child))
                end = child.end_byte
            elif child.is_named and child.type != "comment":
                nested.append(child)  # ``coproc (rm x)``: a block the grammar hangs on the command
        simple = self.emit(words)
        for redirect in redirects:
            self.redirect(simple, redirect)
        for block in nested:
            self.statement(block)
        return simple

    def emit(self, words: list[str]) -> Simple:
        simple = Simple(words, pipe_from=self.pipe, background=self.backgrounds > 0)
        self.pipe = None
        self.commands.append(simple)
        return simple

    def redirect(self, simple: Simple, node: Node) -> None:
        if node.type == "herestring_redirect":
            value = [c for c in node.children if c.is_named]
            simple.here_input = self.word(value[0]) if value else ""
            return
        if node.type == "heredoc_redirect":
            body = next((c for c in node.children if c.type == "heredoc_body"), None)
            simple.here_input = self.word(body) if body is not None else ""
            for child in node.children:
                if child.type in ("file_redirect", "herestring_redirect"):
                    self.redirect(simple, child)
            return
        targets = node.children_by_field_name("destination")
        ops = [c for c in node.children if not c.is_named]
        if not targets or not ops:
            return
        simple.words.extend(self.word(t) for t in targets[1:])  # ``echo > out b``: b is an argument
        op, target = self.text(ops[0]), self.word(targets[0])
        if op in (">&", "<&") and (target.isdigit() or target == "-"):
            return  # fd duplication such as 2>&1, not a file
        if op not in _WRITE_TARGETS_SKIPPED:  # reading is harmless
            simple.redirects.append(Redirect(op, target))
        elif op == "<":
            simple.reads.append(target)

    # ------------------------------------------------------------ words
    def word(self, node: Node, quoted: bool = False) -> str:
        """A word as the command receives it, quotes removed, substitutions as placeholders."""
        kind = node.type
        if kind == "command_substitution" or (kind == "arithmetic_expansion" and node.has_error):
            return self.substitution(node, SUB)  # ``$((rm a))`` is not arithmetic: some shells run it
        if kind == "process_substitution":
            return self.substitution(node, PROC_OUT if self.text(node).startswith(">") else PROC_IN)
        if kind == "raw_string":
            return self.text(node)[1:-1]
        if kind == "ansi_c_string":
            return self.text(node)[2:-1]
        if node.child_count == 0:
            text = self.text(node)
            if kind in ("string_content", "heredoc_content") or (quoted and kind == "word"):
                return _unescape_double(text) if quoted else text
            return _unescape(text) if kind == "word" else text
        inner = kind in ("string", "translated_string")
        out, at = [], node.start_byte
        for child in node.children:
            out.append(self.source[at:child.start_byte].decode(errors="replace"))
            at = child.end_byte
            if inner and child.type in ('"', '$"'):
                continue
            out.append(self.word(child, quoted or inner))
        out.append(self.source[at:node.end_byte].decode(errors="replace"))
        return "".join(out)

    def substitution(self, node: Node, kind: str) -> str:
        first, last = node.children[0], node.children[-1]
        inner = self.source[first.end_byte:last.start_byte].decode(errors="replace")
        if first.type == "`":
            inner = inner.replace("\\`", "`")
        elif first.type in ("$((", "(("):
            inner = f"({inner})"
        self.subs.append(inner)
        return kind.format(len(self.subs) - 1)

    def substitutions_in(self, node: Node) -> list[str]:
        """Placeholders for every substitution anywhere under the node (a test, an arithmetic block)."""
        found: list[str] = []
        stack = [node]
        while stack:
            current = stack.pop(0)
            if current.type in ("command_substitution", "process_substitution"):
                found.append(self.word(current))
            else:
                stack = list(current.children) + stack
        return found
