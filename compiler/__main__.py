"""``python -m compiler`` is the ``aotx`` command."""
from compiler.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
