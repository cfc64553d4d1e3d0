"""The ``reprise`` command line: the typer app, with the commands of the ``*_commands`` modules
and :mod:`jobs.cli.analyze` registered on it."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer
from typer._click.exceptions import NoArgsIsHelpError, UsageError  # (typer's own click)
from typer.core import TyperGroup

from engine.errors import RepriseError
from jobs.cli.analyze import analyze
from jobs.cli.diff_command import diff
from jobs.cli.init_project import init
from jobs.cli.inspect_commands import plan, runs, validate
from jobs.cli.output import fail, missing_file, usage
from jobs.cli.process_exit import exit_now
from jobs.cli.recording_commands import generate, optimize, record
from jobs.cli.run_commands import follow, gc, replay


class _Commands(TyperGroup):
    """The commands, each printing a :class:`RepriseError` as one ``error:`` line (exit 1) and
    a usage error (an unknown command or option, a missing or malformed argument) as one
    ``error:`` line (exit 2); any other exception is a bug and keeps its traceback."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except NoArgsIsHelpError:
            raise
        except UsageError as exc:
            usage(exc)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except RepriseError as exc:
            fail(str(exc))
        except NoArgsIsHelpError:
            raise
        except UsageError as exc:
            usage(exc)
        except Exception as exc:  # a data file gone from under a table (not an input error)
            missing = missing_file(exc)
            if missing is None:
                raise
            fail(f"a file of a Delta table is missing: {missing} (was the table changed or "
                  "vacuumed outside reprise?)")


app = typer.Typer(help="Replay recorded event streams through verified streaming queries.",
                  no_args_is_help=True, pretty_exceptions_enable=False, cls=_Commands)


@app.callback()
def main(verbose: Annotated[bool, typer.Option(
        "--verbose", help="Show the JVM's own log (Spark warnings and notices) on stderr "
        "(env REPRISE_VERBOSE=1)")] = False) -> None:
    """Options for every command."""
    if verbose:
        os.environ["REPRISE_VERBOSE"] = "1"


for command in (init, generate, record, optimize, replay, follow, gc, validate, diff, plan, runs,
                analyze):
    app.command()(command)


def run() -> None:
    """The ``reprise`` command: :data:`app`, then :func:`~jobs.cli.process_exit.exit_now` with its
    status."""
    try:
        app()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
    exit_now(code)


if __name__ == "__main__":
    run()
