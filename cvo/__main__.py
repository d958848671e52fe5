import sys

from cvo.cli.main import main

sys.exit(main())
