"""``python -m artoo.bench``: the same harness as ``artoo bench``."""

import sys

from artoo.bench.harness import main

sys.exit(main())
