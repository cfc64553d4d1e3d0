"""The ``reprise`` console script: a replay forced onto Spark launches Spark's JVM
(:mod:`jobs.runtime.early_launch`) before the command line's modules are imported, then the
command runs (:func:`jobs.cli.app.run`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping


def option(args: list[str], name: str, default: str) -> str:
    """The value of the last ``name VALUE`` or ``name=VALUE`` in ``args`` (else ``default``)."""
    value = default
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(f"{name}="):
            value = arg.split("=", 1)[1]
    return value


def forced_onto_spark(args: list[str], environ: Mapping[str, str]) -> bool:
    """Whether ``args`` (the arguments after the program) are a ``replay`` forced onto Spark
    (``--engine spark``, or ``REPRISE_ENGINE=spark`` without another ``--engine``) whose JVM
    the environment's settings describe: no ``--backend`` of its own (it can add jars to the
    launch) and a warehouse on a local path (an object store's is probed first, and a bad one
    is reported before Spark starts)."""
    if not args or args[0] != "replay" or option(args, "--backend", ""):
        return False
    warehouse = option(args, "--warehouse", environ.get("REPRISE_WAREHOUSE", ""))
    return option(args, "--engine", environ.get("REPRISE_ENGINE", "auto")) == "spark" \
        and "://" not in warehouse


def launch_jvm() -> None:
    """Launch the driver JVM of the environment's settings, quietly, on a local master; a
    launch that fails here is left to the command's own, which makes it again and says why."""
    try:
        from jobs.runtime.masters import is_local
        from jobs.runtime.spark_session import get_spark
        from jobs.settings import load_settings

        settings = load_settings()
        if is_local(settings.spark_master) and not settings.verbose:
            get_spark(settings=settings, launch_only=True)
    except Exception:  # (the command's own launch reports it)
        pass


def run() -> None:
    """The ``reprise`` command."""
    if forced_onto_spark(sys.argv[1:], os.environ):
        from jobs.runtime import early_launch

        early_launch.start(launch_jvm)
    from jobs.cli.app import run as run_app

    run_app()
