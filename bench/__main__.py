"""``python -m bench``: the same harness as ``artoo bench``."""

import sys

from bench.harness import main

sys.exit(main())
