"""What a call of `torch.jit.script` or `torch.jit.trace` compiled: the classes and functions of
the run it took in, so that the program model can answer an entry point whose target it cannot
follow (`torch.jit.script(module)` in a test helper) with what the run really handed it.

For a module, the class of the module and of each of its submodules (scripting compiles them all,
tracing runs their code); for a function or a bound method, the function. Each as (file, qualname),
where qualname is the name the program model gives the definition (nested definitions without
`<locals>`). Classes and functions of torch itself are left out.
"""

from __future__ import annotations

import os
import sys

MAX_PER_SITE = 64  # classes or functions, and calls leading to the site, kept per site


def compiled(obj, torch, torch_dir: str) -> list[tuple[str, str]]:
    """(file, qualname) of each class or function of the program that `obj` brings to the compiler."""
    if isinstance(obj, torch.nn.Module):
        found = [type(m) for m in obj.modules() if not isinstance(m, torch.jit.ScriptModule)]
    else:
        found = [getattr(obj, "__func__", obj)]
    out: list[tuple[str, str]] = []
    for thing in found:
        where = _defined_in(thing)
        if where is None or where[0].startswith(torch_dir) or where in out:
            continue
        out.append(where)
        if len(out) >= MAX_PER_SITE:
            break
    return out


def _defined_in(thing) -> tuple[str, str] | None:
    qualname = getattr(thing, "__qualname__", None)
    if not isinstance(qualname, str):
        return None
    code = getattr(thing, "__code__", None)
    if code is not None:
        file = code.co_filename
    else:
        module = sys.modules.get(getattr(thing, "__module__", None) or "")
        file = getattr(module, "__file__", None)
    if not file or file.startswith("<"):
        return None
    return os.path.abspath(file), ".".join(p for p in qualname.split(".") if p != "<locals>")


def add(kept: list, found: list[tuple]) -> None:
    """Add what one call compiled (or the calls that led to it) to what its site has kept so far
    (each once, up to the cap)."""
    for entry in found:
        if len(kept) >= MAX_PER_SITE:
            return
        if list(entry) not in kept:
            kept.append(list(entry))
