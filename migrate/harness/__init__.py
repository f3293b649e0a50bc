"""The corpus harness: each case of ``corpus/`` migrated in memory and compared with its golden,
and its program run before and after the migration (in the warm runner), in every fix mode and
with a recording (``corpus``); and the demo over the corpus (``demo``, ``bash scripts/demo.sh``).
Tests and scripts use it; the product's commands do not.

Imports: ``engine`` (the run), ``ci`` (diffs, the report), ``record`` (recorded runs), ``runner``
(programs run warm).
"""
