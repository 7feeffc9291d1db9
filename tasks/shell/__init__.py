"""Shell syntax shared by Law 1's judge, failure blame and the tools: ``parse`` reads a command line with a
real bash grammar into simple commands (words, redirections, here-input, pipes) and its substitutions."""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "parse": ("PLACEHOLDER", "ParseError", "Redirect", "Script", "Simple", "parse", "strip_prefix"),
})
