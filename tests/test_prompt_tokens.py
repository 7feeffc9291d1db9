"""bench/prompt_tokens.py: every fixed prompt text is counted, by the endpoint's tokenizer when it has one."""

from __future__ import annotations

from artoo.bench.prompt_tokens import TEXTS, count, rows


def test_every_fixed_text_is_counted_and_the_bash_protocol_is_the_smallest_executor_text():
    counted = {name: tokens for name, tokens, how in rows(None)}
    assert set(TEXTS) < set(counted) and all(tokens > 0 for tokens in counted.values())
    bash = counted["R3 role, bash blocks"] + counted["R3 bash-block note"]
    native = counted["R3 role, tool calls"] + counted["R3 tool definitions (native tools)"]
    assert bash < native / 2  # what dropping the tool definitions buys every executor turn


def test_without_a_tokenizer_the_count_is_an_estimate_and_says_so():
    assert count("x" * 40, "http://127.0.0.1:9/v1") == (10, "estimate")  # nothing listens on port 9
