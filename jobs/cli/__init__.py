"""The `reprise` command line: one module per group of commands."""
