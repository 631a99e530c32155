"""`python -m polyimage` is the `polyimage` command."""

import sys

from .cli import main

sys.exit(main())
