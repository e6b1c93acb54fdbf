"""`python -m harness.cli`: the `harness` command without its console script."""

import sys

from harness.cli._main import main

sys.exit(main())
