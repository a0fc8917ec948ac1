"""``python -m tests.fuzz --minutes N --seed S --out FILE`` (see runner.py)."""
from tests.fuzz.runner import main

main()
