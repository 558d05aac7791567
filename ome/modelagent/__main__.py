import sys

from ome.modelagent.main import main

sys.exit(main())
