"""`python -m campusid.cli`, as it ran when the command was one module."""

from campusid.cli import main

main()
