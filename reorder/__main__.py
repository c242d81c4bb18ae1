"""`python -m reorder` = the `reorder` command."""

import sys

from reorder.cli.main import main

sys.exit(main())
