"""The artifact wing: saved models rather than source. ``loading`` (TorchScript, ``.pt2``,
AOTInductor packages, ``.pte``), ``devices`` (the devices an artifact names), ``specs`` and
``inputs`` (``--input`` specs and ``--inputs`` files), ``convert`` (``.pt`` to ``.pt2``),
``verify`` and ``compare`` (old against new), ``serving`` (``--benchmark``, ``--graph``),
``package`` (AOTInductor), ``lower`` (ExecuTorch), ``pipeline`` (``migrate-artifact``), and
``cli`` (those commands, registered by the top CLI).

Imports: torch, executorch and this package only; never the source wing (engine, program model,
rules, CI side, record) nor the top CLI.
"""
