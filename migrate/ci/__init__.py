"""The CI side: what a team reads and gates on while a migration takes months.

``output`` (the formats of ``scan``/``check``/``diff``: text lines, JSON, SARIF, GitHub
annotations, unified diffs, the artifact table), ``baseline`` (findings fingerprinted and stored,
so that only new TorchScript fails), ``changed`` (files changed against a git ref, and the readers
of artifacts they write), ``gate`` (``check --baseline/--diff-base``, ``baseline``, ``report``)
and ``report`` (the migration report, HTML or markdown).

Imports: the engine (its results; the gate gets the engine's run from the CLI as a function), the
rule API's findings, ``ts2export.textio`` and this package. Never the CLI or the artifact wing.
"""
