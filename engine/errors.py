"""The one root of the project's errors: the CLI catches it and prints its message on one line."""


class RepriseError(Exception):
    """A problem the user can act on; the message names the input and what is wrong."""
