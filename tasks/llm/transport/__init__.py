"""Transport: what a request is, sending it (early when its words are fixed), and reading the server's reply.

Why a package: between a role's messages and the model's answer sit the tier's endpoint and the form its
profile negotiated (``requests``), the prompt fitted to the model's window (``budget``), the early lane
that sends a request before its task starts (``early``, over the openai-free ``http``), the ``openai``
client with its error classification and retries (``client``), and the requests in flight a terminal
shows (``progress``).  Only ``client`` imports ``openai``, so ``artoo run`` sends R1 before it has.
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "client": ("OpenAICompatLLM",),
    "requests": ("RequestBuilder", "context_window", "forget"),
    "budget": ("PromptTooLong",),
    "early": ("EARLY",),
    "progress": ("INFLIGHT",),
})
