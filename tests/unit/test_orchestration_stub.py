"""The Dagster code location loads (the real assets come with the orchestration issue)."""

import dagster as dg


def test_definitions_load():
    from orchestration.definitions import defs

    assert isinstance(defs, dg.Definitions)
    dg.Definitions.validate_loadable(defs)
