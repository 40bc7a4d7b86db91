import sys

from engine.entry import main

sys.exit(main())
