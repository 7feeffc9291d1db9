"""Test doubles of the LLM layer: a scripted OpenAI-compatible server, an in-process fake, transcript replay.

Why a package of their own: tests must exercise the real ``openai`` client over real HTTP against answers
that are deterministic (``scripted_server``), against real servers' refusals byte for byte
(``server_refusals``) and against what a real model wrote (``transcript``), while pure role logic needs
only the interface (``fake.ScriptedLLM``).  None of it is the runtime's: no role, task or flow module
imports it (tests/test_architecture.py); ``artoo demo``, ``artoo bench`` and the simulated eval do,
because they are the product's demonstration and benchmark and run on the scripted server.
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "scripted_server": ("Scenario", "ScriptEntry", "ScriptedLLMServer"),
    "fake": ("ScriptExhausted", "ScriptedLLM"),
    "transcript": ("read_transcript", "scenario_from_transcript"),
    "server_refusals": ("PROFILES",),
})
