"""``reprise diff``: which rows a change to a query changes in its output, late and quarantine
tables, and where two runs of one recording start to disagree.

:mod:`.sides` resolves what the user names (runs, queries; a query at a git revision:
:mod:`.base_revision`) to two complete runs of one recording version; :mod:`.run_diff` compares
their tables (:mod:`.tables`), each streamed into identity-hash buckets (:mod:`.buckets`), one
bucket of both sides at a time (:mod:`.compare`); :mod:`.report` is what it found and
:mod:`.written` writes the differences as Delta tables. :mod:`.previous` compares a query's run
with its previous materialisation's (Dagster).
"""
