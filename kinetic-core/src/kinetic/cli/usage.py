"""The error a command raises for a bad command line: main() prints it as one line and exits 2."""

import typer

# typer vendors click in recent releases; take its UsageError from a public class either way.
UsageError = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")
