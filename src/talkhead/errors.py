"""Errors that reach the user as one line."""


class InputError(ValueError):
    """Bad user input; the CLI prints it as one line and exits 2."""
