"""Replaying a failed proof on the code `apply` writes: run in a fresh interpreter whose import path
puts the migrated tree first, by `apply --recording` (ts2export.engine.replayed).

A proof (see :mod:`.prove`) exports the object the program handed to TorchScript, as its classes
were. Where that failed on a construct that `apply` rewrites (a data-dependent `if` that becomes
`torch.cond`), the proof says nothing of the rewritten code. So the proof keeps a replay kit: the
object, pickled (its classes by module and name, its parameters and buffers by value), the example
inputs and the recorded samples, the outputs TorchScript gave on them, and the dynamic shapes
`apply` writes. Unpickled here, the object's classes come from the migrated files: the module is
exported as `apply` writes it, run on every input, and compared with TorchScript's outputs, then
saved and loaded back. One line of JSON on stdout: the verdict, as :mod:`.prove` writes it.

The standard library and torch only, like the rest of the hooks.
"""

from __future__ import annotations

import io
import json
import os
import sys
import zipfile

from . import prove


def main(argv: list[str]) -> int:
    """``KIT {"shadow": the scratch copy, "root": the folder the recording was made in, "base": the
    folder the copy was made from}``."""
    kit_path, where = argv[0], json.loads(argv[1])
    shadow, root, base = where["shadow"], where["root"], where.get("base", where["root"])
    import torch

    step = "load"
    try:
        with zipfile.ZipFile(kit_path) as zf:
            recorded, data = json.loads(zf.read("path.json")), zf.read("kit.pt")
        # the import path the recorded process had, its folders under root taken from the copy
        # (before unpickling: the object's classes import from it)
        moved = [_moved(p, root, shadow) for p in recorded]
        sys.path[:0] = [p for p in [*(p for p in moved if _under(p, shadow)), shadow, base] if p not in sys.path]
        kit = torch.load(io.BytesIO(data), map_location="cpu", weights_only=False)
        obj, name, function = kit["object"], kit["method"], kit["function"]
        origin = getattr(sys.modules.get(obj.__module__ if function else type(obj).__module__), "__file__", None) or ""
        if not _under(origin, shadow):
            return _say({"verdict": "not replayed", "step": step, "error": (
                f"the object's class came from {origin or 'no file'}, not from the code apply writes")})
        inputs, expected = kit["inputs"], kit["expected"]
        prove._register_outputs(torch, expected)
        target = prove._as_module(torch, obj, name, function)
        args, kwargs = inputs[0]
        bind = prove._binder(obj if function else getattr(obj, name), args, kwargs)
        dynamic = eval(kit["dynamic"], {"torch": torch}) if kit.get("dynamic") else None  # noqa: S307 - the proof's own code
        step = "export"
        ep = torch.export.export(target, tuple(args), kwargs or None, dynamic_shapes=dynamic)
        step = "compare"
        module = ep.module()
        for i, (a, k) in enumerate(inputs):
            why = prove._differs(torch, expected[i], prove._call(torch, lambda a, k: module(*a, **k), *bind(a, k)))
            if why:
                which = "the example inputs" if i == 0 else f"recorded sample {i}"
                return _say({"verdict": "failed", "step": step, "error": f"outputs differ on {which}: {why}", "frame": None})
        step = "save"
        buf = io.BytesIO()
        torch.export.save(ep, buf)
        buf.seek(0)
        loaded = torch.export.load(buf).module()
        a, k = inputs[-1]
        why = prove._differs(torch, expected[-1], prove._call(torch, lambda a, k: loaded(*a, **k), *bind(a, k)))
        if why:
            return _say({"verdict": "failed", "step": "load", "error": f"outputs differ after torch.export.save and load: {why}",
                         "frame": None})
    except Exception as exc:  # noqa: BLE001 - the verdict
        if step == "load":  # the object does not unpickle here: nothing was tried on the code written
            return _say({"verdict": "not replayed", "step": step, "error": prove._first_line(exc)})
        return _say({"verdict": "failed", "step": step, "error": prove._first_line(exc), "frame": prove._user_frame(exc, torch)})
    return _say({"verdict": "proven", "samples": len(inputs) - 1})


def _under(path: str, folder: str) -> bool:
    return os.path.abspath(path or "/").startswith(os.path.abspath(folder) + os.sep) or os.path.abspath(path) == os.path.abspath(folder)


def _moved(path: str, root: str, shadow: str) -> str:
    path = os.path.abspath(path or ".")
    root = os.path.abspath(root)
    if path == root:
        return shadow
    if path.startswith(root + os.sep):
        return os.path.join(shadow, os.path.relpath(path, root))
    return path


def _say(verdict: dict) -> int:
    sys.stdout.write("\n" + json.dumps(verdict) + "\n")
    return 0
