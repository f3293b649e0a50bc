"""Record: what a program does with its TorchScript, seen by running it.

``run`` runs the user's command with the recorder (``hooks``, a package that runs inside the
user's interpreter, loaded by path, importing nothing of ts2export) in every Python process;
``merge`` folds the processes' shards into one recording; ``recording`` reads a recording back
(example-input code, ``dynamic_shapes``, samples) for the program model and the CLI; ``cli`` holds
the ``record`` and ``recorded-inputs`` commands.

Imports: the standard library, ``ts2export.textio`` and this package (``cli``: typer too). Never
the engine, the program model, the rules or the artifact wing.
"""
