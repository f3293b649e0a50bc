"""The language server (``ts2export server``): the findings of the engine as an editor's
diagnostics while the user types, and its fixes as code actions (a quick fix per finding, safe or
labelled unsafe, and ``source.fixAll.ts2export`` for every safe fix of the document).

``document`` turns what the engine says about one document into LSP terms (positions in UTF-16 code
units, diagnostics, the smallest edit from one text to another) and needs nothing but the standard
library; ``lsp`` is the server itself, on pygls (the ``server`` extra), imported only by the CLI's
``server`` command.

Imports: ``ts2export.engine`` (the document's check and fixes, the config) and ``ts2export`` (its
version). Never the CLI, the CI side or the artifact wing; never torch.
"""
