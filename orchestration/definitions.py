"""Dagster entry point (loaded by ``workspace.yaml``).

A stub for now: the assets, checks, schedules and sensors built from the catalog arrive with the
orchestration issue. It loads without starting Spark.
"""

from __future__ import annotations

import dagster as dg

defs = dg.Definitions()
