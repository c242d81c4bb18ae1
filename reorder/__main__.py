"""`python -m reorder` = the `reorder` command."""

import sys

from reorder.cli import main

sys.exit(main())
