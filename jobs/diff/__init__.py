"""``reprise diff``: which rows a change to a query changes in its output, late and quarantine
tables, and where two runs of one recording start to disagree.

:mod:`.sides` resolves what the user names (runs, queries, a query at a git revision:
:mod:`.base_revision`) to two complete runs of one recording version; :mod:`.buckets` streams
each run's tables into key-hash buckets; :mod:`.compare` compares one bucket of each side;
:mod:`.report` adds the buckets up; :mod:`.written` writes the differences as Delta tables.
"""
