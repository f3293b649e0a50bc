"""The call-site model: the artifacts of one file, followed from the call that makes them to their
uses, and how each call is rewritten (TSX3xx).

The program model (``ts2export.model``) answers questions across files before the rules run; this
part answers questions inside the file a rule is checking, while it checks it, from the libcst
metadata of that file (scopes, parents, positions) and the program model's view of the others.
An artifact is followed from the call that makes it (``torch.jit.trace``/``script``/``load``,
``torch.export.export``/``load``) through simple assignments (``name = ...`` bound once in its
scope, ``self.attr = ...`` bound once in its class) to its uses (``bindings``, ``uses``). A *plan*
(``plans``, ``producers``, ``programs``) says how a producing call is rewritten, with which example
inputs (``examples``, ``models``), or why it cannot be; the rules of the uses (save,
lite-interpreter save, optimize_for_mobile) ask for the plan of their artifact's origin so that
they only rewrite a use whose origin is rewritten too, in the same fix mode (``writers``).

Rules ask it through the rule API (``ts2export.rule.callsites``); every question takes the asking
rule (``syntax.Asker``) for its file's metadata. Imports: libcst, ``ts2export.edits`` and this
package only.
"""
