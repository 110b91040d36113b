"""``python -m lab.page --server URL [--port N]``: the lab's live page alone."""

from lab.page.server import main

raise SystemExit(main())
