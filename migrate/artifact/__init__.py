"""The artifact wing: saved models rather than source. ``loading`` (TorchScript, ``.pt2``,
AOTInductor packages, ``.pte``), ``devices`` (the devices an artifact names), ``specs`` and
``inputs`` (``--input`` specs and ``--inputs`` files), ``convert`` (``.pt`` to ``.pt2``),
``verify`` and ``compare`` (old against new), ``serving`` (``--benchmark``, ``--graph``),
``package`` (AOTInductor), ``lower`` (ExecuTorch), ``pipeline`` (``migrate-artifact``), the
model-store mode of ``migrate-artifact`` (``store``, ``state``, ``storetask``, ``executors``,
``worker``, ``storerun``, ``storereport``), and ``cli`` (those commands, registered by the top CLI).

Imports: torch, executorch, this package and ``ts2export.textio`` (how a file is written: its
mode) only; never the source wing (engine, program model,
rules, CI side, record: a recording reaches ``cli`` as a lookup the top CLI hands over) nor the
top CLI. ``ray`` is imported only for ``--executor ray``.
"""
