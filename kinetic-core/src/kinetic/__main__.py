"""python -m kinetic: the kinetic command."""

import sys

from kinetic.cli.main import main

sys.exit(main())
