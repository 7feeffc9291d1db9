"""Shell text → simple commands, for the Law-1 policy.

The policy must see every command a line would run, including the ones hidden in
``$( … )``, backticks, process substitutions, here-documents and ``;``/``&&``/``|``
chains.  A pre-pass that knows the quoting rules lifts substitutions and here-documents
out (their text is judged on its own) and turns unquoted newlines into ``;``; then
``shlex`` with ``punctuation_chars`` splits words and operators.  Nothing here judges:
it only says what would run, so the rules can stay one command at a time.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

SUB = "__ARTOO_SUB{}__"
"""Placeholder word standing for a command substitution (``$( … )``, backticks) whose value is unknown."""
PROC_IN = "__ARTOO_PIN{}__"
"""Placeholder for a process substitution ``<( … )``: a file the command reads the inner output from."""
PROC_OUT = "__ARTOO_POUT{}__"
"""Placeholder for a process substitution ``>( … )``: a file the command writes into the inner command."""
DOC = "__ARTOO_DOC{}__"
"""Placeholder word standing for a here-document body."""
PLACEHOLDER = re.compile(r"__ARTOO_(SUB|PIN|POUT|DOC)(\d+)__")

OPERATORS = sorted([";;&", ";;", ";&", "&&", "||", "|&", "&>>", ">>", "&>", ">&", "<&", ">|", "<<<",
                    "<<-", "<<", "<>", ";", "&", "|", "(", ")", "<", ">"], key=len, reverse=True)
SEPARATORS = {";", "&", "&&", "||", "|", "|&", "(", ")", ";;", ";&", ";;&"}
REDIRECTS = {">", ">>", ">|", "&>", "&>>", ">&", "<", "<&", "<>", "<<<", "<<", "<<-"}
KEYWORDS = {"if", "then", "else", "elif", "fi", "while", "until", "do", "done", "!", "{", "}", "esac",
            "function", "[[", "]]"}
HEADERS = {"for", "case", "select"}
EXEC_PRIMARIES = {"-exec", "-execdir", "-ok", "-okdir"}
_PUNCT = set("();<>|&")
_HIDE = str.maketrans({c: chr(0xE001 + k) for k, c in enumerate("();<>|&")})
_SHOW = str.maketrans({chr(0xE001 + k): c for k, c in enumerate("();<>|&")})
"""Quoted or escaped punctuation is hidden from shlex behind private-use characters, so it stays a word."""


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
    plain: bool = False
    """Surely runs in this shell: not in a pipeline, subshell, group, branch or loop, nor after && / ||."""


@dataclass
class Script:
    """A parsed command line: its simple commands and the texts it hides in substitutions."""

    commands: list[Simple]
    substitutions: list[str]


def parse(text: str) -> Script:
    """Split shell text into simple commands; raise ParseError when the shell could not."""
    flat, subs, docs = _prepass(text)
    lexer = shlex.shlex(flat, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError as exc:
        raise ParseError(str(exc)) from exc
    return Script(_group(_split_operators(tokens), docs), subs)


def _split_operators(tokens: list[str]) -> list[str]:
    out: list[str] = []
    for token in tokens:
        if not token or not set(token) <= _PUNCT:
            out.append(token)
            continue
        i = 0
        while i < len(token):
            op = next(o for o in OPERATORS + list(_PUNCT) if token.startswith(o, i))
            out.append(op)
            i += len(op)
    return out


def _group(tokens: list[str], docs: dict[str, str]) -> list[Simple]:
    commands: list[Simple] = []
    current = Simple([])
    in_exec = False
    nest = _Nesting()
    i = 0
    while i < len(tokens):
        token, word = tokens[i], tokens[i].translate(_SHOW)
        if not in_exec and token not in SEPARATORS and token not in REDIRECTS:
            nest.word(current.words, word)
        if in_exec and (word == ";" or (word == "+" and current.words[-1:] == ["{}"])):
            current.words.append(word)
            in_exec = False
        elif token in EXEC_PRIMARIES:
            current.words.append(token)
            in_exec = True
        elif token in REDIRECTS:
            nxt = tokens[i + 1] if i + 1 < len(tokens) and tokens[i + 1] not in SEPARATORS else None
            i += 0 if nxt is None else 1
            _redirect(current, token, (nxt or "").translate(_SHOW), docs)
        elif token in SEPARATORS:
            current.plain = nest.plain(current, token)
            commands.append(current)
            nest.separator(token)
            current = Simple([], pipe_from=current if token in ("|", "|&") else None)
        else:
            current.words.append(word)
        i += 1
    current.plain = nest.plain(current, None)
    commands.append(current)
    return [c for c in commands if c.words or c.redirects]


OPENERS = {"if", "while", "until", "for", "case", "select", "{", "function"}
CLOSERS = {"fi", "done", "esac", "}"}


class _Nesting:
    """Whether a command surely runs in the current shell, roughly and erring towards "nested"."""

    def __init__(self) -> None:
        self.parens, self.blocks, self.after = 0, 0, None

    def word(self, words: list[str], word: str) -> None:
        if all(w in KEYWORDS or w in HEADERS for w in words):  # still in the keyword prefix
            self.blocks += (word in OPENERS) - (word in CLOSERS and self.blocks > 0)

    def separator(self, token: str) -> None:
        self.parens = self.parens + 1 if token == "(" else max(0, self.parens - (token == ")"))
        self.after = token

    def plain(self, simple: Simple, following: str | None) -> bool:
        return (not self.parens and not self.blocks and simple.pipe_from is None
                and self.after in (None, ";", "&") and following not in ("|", "|&", "&"))


def _redirect(current: Simple, op: str, target: str, docs: dict[str, str]) -> None:
    if op in (">&", "<&") and (target.isdigit() or target == "-"):
        return  # fd duplication such as 2>&1, not a file
    if op in ("<<<", "<<", "<<-"):
        current.here_input = docs.get(target, target)
        return
    if op in ("<", "<&"):
        return  # reading is harmless
    current.redirects.append(Redirect(op, target))


def strip_prefix(words: list[str]) -> list[str]:
    """Drop shell keywords and leading NAME=value assignments; a for/case header runs nothing."""
    i = 0
    while i < len(words) and (words[i] in KEYWORDS or _is_assignment(words[i])):
        i += 1
    rest = words[i:]
    if rest and rest[0] in HEADERS:
        return []
    return rest


def _is_assignment(word: str) -> bool:
    return re.match(r"^[A-Za-z_][A-Za-z0-9_]*\+?=", word) is not None


# ---------------------------------------------------------------- pre-pass
class _Pre:
    """State of the pre-pass scanner."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.out: list[str] = []
        self.subs: list[str] = []
        self.docs: dict[str, str] = {}
        self.pending: list[tuple[str, str, bool]] = []

    def sub(self, inner: str, kind: str = SUB) -> str:
        self.subs.append(inner)
        return kind.format(len(self.subs) - 1)


def _prepass(text: str) -> tuple[str, list[str], dict[str, str]]:
    """Lift substitutions and here-documents out, drop comments, turn newlines into ';'."""
    st = _Pre(text)
    i, n, quote, word_start = 0, len(text), None, True
    while i < n:
        c = text[i]
        if quote == "'":
            st.out.append(c.translate(_HIDE))
            quote = None if c == "'" else quote
            i += 1
            continue
        if c == "\\":
            if text.startswith("\\\n", i):
                i += 2
                continue
            nxt = text[i + 1:i + 2]
            st.out.append(nxt.translate(_HIDE) if nxt in _PUNCT else text[i:i + 2])
            i += 2
            word_start = False
            continue
        j = _substitution(st, i, quote)
        if j is not None:
            i, word_start = j, False
            continue
        if quote == '"':
            quote = None if c == '"' else quote
            st.out.append(c.translate(_HIDE))
            i += 1
            continue
        i, word_start, quote = _unquoted(st, i, word_start)
    if quote:
        raise ParseError(f"no closing {quote}")
    return "".join(st.out), st.subs, st.docs


def _unquoted(st: _Pre, i: int, word_start: bool) -> tuple[int, bool, str | None]:
    text, c = st.text, st.text[i]
    if c in "'\"":
        st.out.append(c)
        return i + 1, False, c
    if c == "#" and word_start:
        end = text.find("\n", i)
        return (len(text) if end < 0 else end), True, None
    if c == "\n":
        st.out.append(" ; ")
        return _bodies(st, i + 1), True, None
    if text.startswith("<<<", i):
        st.out.append("<<<")
        return i + 3, True, None
    if text.startswith("<<", i):
        return _heredoc(st, i), False, None
    st.out.append(c)
    return i + 1, c in " \t;&|()<>", None


def _substitution(st: _Pre, i: int, quote: str | None) -> int | None:
    """At ``$(``, a backtick, or (unquoted) ``<(``/``>(``: lift the inner text, return the new index."""
    text = st.text
    if text.startswith("$(", i) or (quote is None and text[i:i + 2] in ("<(", ">(")):
        end = _closing_paren(text, i + 2)
        kind = {"<": PROC_IN, ">": PROC_OUT}.get(text[i], SUB)
        st.out.append(st.sub(text[i + 2:end], kind))
        return end + 1
    if text[i] == "`":
        end = i + 1
        while end < len(text) and text[end] != "`":
            end += 2 if text[end] == "\\" else 1
        if end >= len(text):
            raise ParseError("no closing backtick")
        st.out.append(st.sub(text[i + 1:end].replace("\\`", "`")))
        return end + 1
    return None


def _closing_paren(text: str, start: int) -> int:
    depth, quote, i = 1, None, start
    while i < len(text):
        c = text[i]
        if quote == "'":
            quote = None if c == "'" else quote
        elif c == "\\":
            i += 1
        elif quote == '"':
            quote = None if c == '"' else quote
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ParseError("no closing ) for $( … )")


def _heredoc(st: _Pre, i: int) -> int:
    text = st.text
    j = i + 2
    strip = text.startswith("-", j)
    j += 1 if strip else 0
    while j < len(text) and text[j] in " \t":
        j += 1
    m = re.match(r"'([^']*)'|\"([^\"]*)\"|([^\s;&|()<>]+)", text[j:])
    if not m:
        raise ParseError("here-document without a delimiter")
    delim = next(g for g in m.groups() if g is not None)
    name = DOC.format(len(st.pending) + len(st.docs))
    st.pending.append((name, delim, strip))
    st.out.append(f" <<< {name} ")
    return j + m.end()


def _bodies(st: _Pre, i: int) -> int:
    """After a newline: consume the bodies of pending here-documents."""
    text = st.text
    for name, delim, strip in st.pending:
        lines = []
        while i < len(text):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            line = text[i:end]
            i = end + 1
            if (line.lstrip("\t") if strip else line) == delim:
                break
            lines.append(line)
        st.docs[name] = "\n".join(lines)
    st.pending.clear()
    return min(i, len(text))
