"""How well memory tells which earlier requests were the same kind of task: the kind matcher
(artoo.memory.kinds) beside the intent slug (the spec's first three words), on the everyday suite's kinds.

Every pair of the suite's requests is a question: same kind (the suite's label) or not.  A matcher answers
yes when it would show one request's verified method to the other.  Printed per threshold: pairs matched,
precision (matched pairs of one kind), recall (pairs of one kind matched), and how often a request's best
match above the threshold is of its own kind.  No model, no I/O: it runs in a second.

    python bench/kind_matching.py [--json]
"""

from __future__ import annotations

import argparse
import json
from itertools import combinations

from artoo.eval.everyday_suite import TASKS
from artoo.memory.kinds import MATCH, kind_words, similarity, weights
from artoo.memory.tags import intent_slug

THRESHOLDS = tuple(sorted({0.1, 0.15, 0.2, 0.25, 0.3, MATCH}))


def scores(requests: list[str], kinds: list[str], match) -> dict:
    """Precision and recall over every pair, and the best match's kind, for ``match(i, j) -> score or None``."""
    pairs = list(combinations(range(len(requests)), 2))
    same = {(i, j): kinds[i] == kinds[j] for i, j in pairs}
    matched = {(i, j) for i, j in pairs if match(i, j) is not None}
    hits = sum(same[p] for p in matched)
    best_right = best_any = 0
    for i in range(len(requests)):
        found = [(match(min(i, j), max(i, j)), j) for j in range(len(requests)) if j != i]
        found = [(s, j) for s, j in found if s is not None]
        if found:
            best_any += 1
            best_right += kinds[max(found)[1]] == kinds[i]
    return {"pairs_matched": len(matched), "precision": round(hits / len(matched), 3) if matched else None,
            "recall": round(hits / sum(same.values()), 3), "requests_with_a_match": best_any,
            "best_match_of_its_kind": best_right}


def measure() -> dict:
    requests, kinds = [t.request for t in TASKS], [t.kind for t in TASKS]
    words = [kind_words(r) for r in requests]
    weight = weights(words)
    sim = {(i, j): similarity(words[i], words[j], weight) for i, j in combinations(range(len(requests)), 2)}
    rows = {"slug": scores(requests, kinds, lambda i, j: 1.0 if intent_slug(requests[i]) == intent_slug(requests[j])
                           else None)}
    for threshold in THRESHOLDS:
        rows[f"kind >= {threshold}{' *' if threshold == MATCH else ''}"] = scores(requests, kinds,
                                              lambda i, j, t=threshold: sim[i, j] if sim[i, j] >= t else None)
    return {"requests": len(requests), "kinds": len(set(kinds)),
            "same_kind_pairs": sum(kinds[i] == kinds[j] for i, j in combinations(range(len(kinds)), 2)),
            "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the measurement as JSON")
    result = measure()
    if parser.parse_args().json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['requests']} requests, {result['kinds']} kinds, {result['same_kind_pairs']} same-kind pairs")
    print("* the threshold artoo uses (artoo.memory.kinds.MATCH)")
    print(f"{'matcher':<14} {'matched':>7} {'precision':>9} {'recall':>6} {'with a match':>12} {'best of kind':>12}")
    for name, row in result["rows"].items():
        precision = "-" if row["precision"] is None else f"{row['precision']:.2f}"
        print(f"{name:<14} {row['pairs_matched']:>7} {precision:>9} {row['recall']:>6.2f} "
              f"{row['requests_with_a_match']:>12} {row['best_match_of_its_kind']:>12}")


if __name__ == "__main__":
    main()
