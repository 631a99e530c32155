"""`python -m polyimage` is the `polyimage` command."""

import sys

from .commands.cli import main

sys.exit(main())
