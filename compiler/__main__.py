"""``python -m compiler`` is the ``aotx`` command."""
from compiler.cli import main

raise SystemExit(main())
