import sys

from fglcore.cli import main

sys.exit(main())
