"""Law 1: parse a command, judge it by effect family, and decide whether it needs a person's yes."""
