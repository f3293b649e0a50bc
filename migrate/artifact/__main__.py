"""`python -m ts2export.artifact ...`: the artifact commands on their own (also used by --isolate)."""

from ts2export.artifact.cli import make_app

make_app()(prog_name="ts2export")
