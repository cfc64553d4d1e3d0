"""The commands of a documentation page's tested blocks, and a runner for them.

A block is tested when the line before its opening fence is ``<!-- test: NAME -->``. Its
commands are its lines (a line ending in ``\\`` goes on on the next one; a here-document runs
whole with its body); ``#`` comments are dropped. ``reprise ...`` runs in this process (sharing
the test session's Spark), ``cd DIR`` changes the directory, anything else runs in ``bash``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

MARK = re.compile(r"^<!-- test: ([\w-]+) -->\n```(?:bash|console|sh)\n(.*?)^```", re.M | re.S)
HEREDOC = re.compile(r"<<-?\s*'?(\w+)'?")


@dataclass(frozen=True)
class Command:
    """One command of a block: its text and the page it is from."""

    text: str
    page: str


def tested_blocks(page: Path, name: str | None = None) -> list[str]:
    """The bodies of the tested blocks of ``page`` (those marked ``name``, if given)."""
    return [body for mark, body in MARK.findall(page.read_text()) if name in (None, mark)]


def commands(page: Path, name: str | None = None) -> list[Command]:
    """The commands of the tested blocks of ``page``, in order."""
    return [Command(text, page.name) for body in tested_blocks(page, name)
            for text in split(body)]


def split(body: str) -> Iterator[str]:
    """The commands of a block's body."""
    lines = iter(body.splitlines())
    for line in lines:
        while line.endswith("\\"):
            line = line[:-1] + " " + next(lines).strip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        heredoc = HEREDOC.search(line)
        if heredoc:
            rest = []
            for more in lines:
                rest.append(more)
                if more.strip() == heredoc.group(1):
                    break
            yield "\n".join([line, *rest])
        else:
            yield line


def run(command: Command, cwd: Path) -> Path:
    """Run ``command`` in ``cwd``; the directory after it. Fails the test on a non-zero exit."""
    from jobs.cli.app import app

    text = command.text
    if "\n" not in text and text.startswith("cd "):
        return (cwd / shlex.split(text)[1]).resolve()
    if "\n" not in text and text.startswith("reprise "):
        words = shlex.split(text, comments=True)[1:]
        before = Path.cwd()
        os.chdir(cwd)
        try:
            result = CliRunner().invoke(app, words)
        finally:
            os.chdir(before)
        assert result.exit_code == 0, f"{command.page}: `{text}` exited {result.exit_code}:\n" \
            f"{result.output}"
        return cwd
    done = subprocess.run(["bash", "-e", "-c", text], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"{command.page}: `{text}` failed:\n{done.stderr}"
    return cwd
