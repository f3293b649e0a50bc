"""ts2export: move a PyTorch code base off TorchScript.

The layout, top to bottom (each imports only what is below it; see docs/architecture.md):

- ``cli``: the command line, the only module that knows every wing;
- ``ci`` (baseline, changed files, gate, report, output formats) and ``artifact`` (convert,
  verify, package, lower: saved models, never the source wing);
- ``engine``: discovery, config, the rule registry, checking and fixing files, the whole run, the
  result cache;
- ``record``: running the user's program with its TorchScript recorded (``record.hooks`` runs
  inside the user's interpreter and imports nothing of ts2export);
- ``rules`` (installed from rules/): one rule per file, importing only the rule API;
- ``rule``: the rule API;
- ``model``: the program model (whole-program facts, the migration units and what waits, the
  call-site questions rules ask);
- ``edits`` (the vocabulary of a rewrite), ``quoting`` (the user's code as generated comments and
  messages quote it: one line, short) and ``textio`` (atomic writes): leaves.
"""

__version__ = "0.1.0"
