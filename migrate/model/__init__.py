"""The program model: what a migration must keep together, across files and rules.

Built once per run, in the engine's process, from every Python file of the run (``ast``, no
libcst). Each module holds one part, asked through a narrow interface and built in this order
(each part asks only the parts above it):

- ``pyfile`` (one file's index: scopes, definitions, bindings), ``files`` (the run's files, parsed
  when first asked for), ``names`` (what a name refers to), ``calls`` (who calls what);
- ``values`` (what an expression may evaluate to), ``paths`` with ``pathpattern`` (artifact paths
  as patterns), ``sites`` (the TorchScript constructs tracked), ``origins`` (where an object comes
  from, an entry point's targets), ``classes`` (hierarchies), ``kinds`` (module, function or class);
- ``reach`` (what an entry point compiles or traces), ``links`` (writers to readers, values built
  into one another), ``units`` (what migrates together), ``decision`` (which fixes wait);
- ``shapes`` and ``feeding`` (example inputs from the code and from a recording), ``views`` (the
  plain-data ``view.ProgramView`` each file's rules read), ``facts`` (what the cache keeps);
- ``memo`` (the memory that keeps each recursive question's cost to the code, not its paths),
  ``torchapi`` (the torch names known); ``program.Program`` builds them all.

Imports: the standard library and ``ts2export.model`` only (``callsites`` also libcst and
``ts2export.edits``, ``ts2export.quoting``). Nothing here imports the engine, the rule API, the CLI or the other wings.
"""
