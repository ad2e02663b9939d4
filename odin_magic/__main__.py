import sys

from odin_magic.cli import main

sys.exit(main())
