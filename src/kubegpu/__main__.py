"""``python -m kubegpu`` runs the CLI."""

from kubegpu.cli.main import main

main()
