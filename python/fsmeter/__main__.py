"""`python -m fsmeter` runs the CLI."""

from fsmeter.cli import main

main()
