"""``python -m aragog`` runs the command-line interface."""

import sys

from aragog.cli import main

sys.exit(main())
