"""Which earlier requests were the same kind of task as this one: "copy the csv files into backup" and "copy
every .txt into archive" are; "count the lines of notes.txt" is not.

Why not the intent slug (the first three words, spec R2): it tells such a pair apart ("copy_the_csv" and
"copy_every_txt") and joins unrelated ones ("put_the_rows", "put_the_png").  Why not a word list of verbs and
stop words: English word lists grow from the tries of one task and misfire on the next.  So the kind is read
from the words themselves, weighed by how rare each is among the requests compared:

* **names are not the kind.**  A word that names a file, folder, extension, number or value of *this* task
  (it holds a dot, slash, digit, underscore or quote, or is written in capitals) is dropped; so is a word of
  one or two letters.
* **common words say little.**  Each remaining word counts ``log(1 + (1 + n) / df)``, the inverse of how many
  of the ``n`` requests compared hold it (df), so "the", "into" or "files", which most requests hold, weigh
  least, and a rare shared verb weighs most (never zero: with two requests compared, every word is common).
* **similarity is the cosine** of the two weighted word sets; two requests match at ``MATCH`` or more.

``bench/kind_matching.py`` measures this against the slug on the everyday suite's kinds (bench/README).
Pure: no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

MATCH = 0.2
"""The cosine at which two requests are the same kind (chosen on the everyday suite: bench/kind_matching.py)."""

_WORD = re.compile(r"\S+")
_NAME = re.compile(r"[./\\_\d'\"`=:@]")


def kind_words(request: str) -> frozenset[str]:
    """The words of a request that may say its kind: not this task's names, not one- or two-letter words."""
    found = set()
    for raw in _WORD.findall(request):
        word = raw.strip(",;:!?()[]{}").rstrip(".")
        if not word or _NAME.search(word) or (word.isupper() and len(word) > 1):
            continue
        word = word.lower().strip("-")
        if len(word) > 2 and word.isalpha():
            found.add(word)
    return frozenset(found)


def weights(requests: Iterable[frozenset[str]]) -> dict[str, float]:
    """Each word's weight among ``requests``: rarer words weigh more (a smoothed inverse document frequency)."""
    sets = list(requests)
    df: dict[str, int] = {}
    for words in sets:
        for word in words:
            df[word] = df.get(word, 0) + 1
    n = len(sets)
    return {word: math.log(1 + (1 + n) / count) for word, count in df.items()}


def similarity(a: frozenset[str], b: frozenset[str], weight: dict[str, float]) -> float:
    """The cosine of two requests' weighted word sets (0 when either has none)."""
    dot = sum(weight.get(w, 0.0) ** 2 for w in a & b)
    norm = math.sqrt(sum(weight.get(w, 0.0) ** 2 for w in a)) * math.sqrt(sum(weight.get(w, 0.0) ** 2 for w in b))
    return dot / norm if norm else 0.0


def same_kind(request: str, earlier: Sequence[str], *, threshold: float = MATCH,
              background: Sequence[str] = ()) -> list[tuple[int, float]]:
    """(index, similarity) of the ``earlier`` requests of the same kind as ``request``, best first.

    The words are weighed among the request, the earlier ones and ``background`` (other requests that say which
    words are common, when the earlier ones are too few to)."""
    mine, theirs = kind_words(request), [kind_words(e) for e in earlier]
    weight = weights([mine, *theirs, *(kind_words(b) for b in background)])
    scored = [(i, similarity(mine, words, weight)) for i, words in enumerate(theirs)]
    return sorted(((i, s) for i, s in scored if s >= threshold), key=lambda pair: (-pair[1], pair[0]))
