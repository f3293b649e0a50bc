"""Proving, when the recorded program ends, that what it scripted or traced exports: per call site
the eager object handed to `torch.jit.script`/`trace`/`trace_module` is exported with the example
inputs and dynamic shapes `apply --recording` would write (see :mod:`.variants`), the exported
program and the TorchScript object run on the recorded samples (and the example) and their outputs
are compared, and the program goes through `torch.export.save`/`load`. The verdict goes in the
site's entry of the shard: ``proven``, ``failed`` (the exception, its first line, the deepest frame
in the user's code, the step) or ``skipped`` (why nothing could be tried).

It runs after the program's own work, from the recorder's exit handler (registered first, so it
runs last), with stdout, stderr and warnings silenced, a time bound per site (SIGALRM, in the main
thread), and never raises: the program's output and exit code are what they were.
"""

from __future__ import annotations

import os
import re
import sys
import time
import traceback
import weakref

from . import shard, variants

MAX_SITES = 16  # call sites whose objects are kept for a proof, per process
MAX_COMPARED = 8  # recorded samples compared per method
SECONDS = 120.0  # time bound of one site's proof (TS2EXPORT_PROVE_SECONDS)

_kept: list = []  # (site, eager object, TorchScript object, methods named at the call)
_eager_of: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # scripted module -> the eager module it was made from
_own_dir = os.path.dirname(os.path.abspath(__file__))


def enabled() -> bool:
    return os.environ.get("TS2EXPORT_PROVE", "1") != "0"


def keep(site, eager, compiled, methods=()) -> None:
    """Keep what the call at `site` was handed and what it made, to prove at exit (the first
    object per site; at most MAX_SITES sites). Every module scripted is also remembered with the
    eager module it was made from (see _as_apply_writes)."""
    if not enabled():
        return
    try:
        if site.kind == "script" and hasattr(eager, "_modules"):
            _eager_of[compiled] = eager
    except TypeError:  # not weakly referable
        pass
    if any(k[0] is site for k in _kept):
        return
    if len(_kept) >= MAX_SITES:
        site.proof = {"verdict": "skipped", "error": f"more than {MAX_SITES} call sites in one process: not proven"}
        return
    _kept.append((site, eager, compiled, tuple(methods)))


def forget() -> None:
    """After a fork: the parent proves what it made."""
    _kept.clear()


class _Timeout(BaseException):
    """The bound of a proof rang (not an Exception: the proof's own handlers let it through)."""


def prove_all(torch, release) -> None:
    """Prove every kept site. `release()` detaches the recorder from the calls (so that the proof's
    calls are not recorded); called once, before the first proof."""
    if not _kept:
        return
    released = False
    out_fds = None if os.environ.get("TS2EXPORT_DEBUG") else _silence()
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for site, eager, compiled, methods in list(_kept):
                if not released:
                    release()
                    released = True
                try:
                    site.proof = _prove_site(torch, site, eager, compiled, methods)
                except BaseException as exc:  # noqa: BLE001 - nothing escapes into the program's exit
                    site.proof = {"verdict": "skipped", "error": _first_line(exc), "step": "prove"}
                shard.state["dirty"] = True
    finally:
        _kept.clear()
        _restore(out_fds)


# ---- one site ------------------------------------------------------------------------------------------


def _prove_site(torch, site, eager, compiled, named_methods) -> dict:
    start = time.monotonic()
    if isinstance(eager, torch.jit.ScriptModule) or isinstance(eager, torch._C.ScriptFunction):
        return {"verdict": "skipped", "error": "the object handed to TorchScript was already TorchScript"}
    function = not isinstance(eager, torch.nn.Module)
    stats = _method_stats(site)
    names = sorted(stats, key=lambda n: (n != "forward", n))
    if not names:
        return {"verdict": "skipped", "error": "not called in this process (nor loaded back and called), so no inputs to prove with"}
    checked = []
    samples = 0
    ranges: dict = {}
    non_leaf: list[str] = []
    rewrites: list[str] = []
    replay = None
    with _bound(_seconds()):
        for name in names:
            result = _prove_method(torch, eager, compiled, name, stats[name], function)
            result["method"] = name
            result["seconds"] = round(time.monotonic() - start, 3)
            if result["verdict"] != "proven":
                return result
            samples += result.get("samples", 0)
            ranges.update(result.get("ranges", {}))
            non_leaf.extend(n for n in result.get("non_leaf", ()) if n not in non_leaf)
            rewrites.extend(r for r in result.get("as_apply_writes", ()) if r not in rewrites)
            replay = replay or result.get("replay")
            checked.append(name)
    out = {"verdict": "proven", "methods": checked, "samples": samples, "seconds": round(time.monotonic() - start, 3)}
    if ranges:
        out["ranges"] = ranges
    if non_leaf:
        out["non_leaf"] = non_leaf
    if rewrites:  # what the proof did as apply writes it (see _as_apply_writes): the static checks still run
        out["as_apply_writes"] = rewrites
    if replay:
        out["replay"] = replay
    return out


def _seconds() -> float:
    """The bound per site, read at exit."""
    try:
        return float(os.environ.get("TS2EXPORT_PROVE_SECONDS", SECONDS))
    except ValueError:
        return SECONDS


def _method_stats(site) -> dict[str, tuple[dict, list[dict]]]:
    """Per method: (merged stats, samples) over the site and the load sites of this process that
    loaded a file the site's objects were saved to."""
    sources = [site]
    if site.saved:
        saved = set(site.saved)
        sources += [s for s in shard.sites.values() if s is not site and saved & set(s.artifacts)]
    out: dict[str, tuple[dict, list[dict]]] = {}
    for s in sources:
        for name, m in s.methods.items():
            data = m.to_json()
            if not data["variants"]:
                continue
            stats, samples = out.setdefault(name, (variants.empty_method(), []))
            mapping = dict(variants.merge_method(stats, data))
            samples += [{**x, "variant": mapping.get(x.get("variant", 0), 0)} for x in data.get("samples", [])]
    return out


def _prove_method(torch, eager, compiled, name, entry, function) -> dict:
    stats, samples = entry
    vmap = variants.positional_variants(stats)
    ex = variants.example_of(stats)
    if ex.args_code is None:
        return {"verdict": "skipped", "error": "; ".join(ex.notes) or "the inputs cannot be rebuilt"}
    problem = variants.one_program_problem(stats, ex, name)
    if problem:
        return {"verdict": "failed", "step": "inputs", "frame": None, "error": problem}
    step = "example"
    ranges: dict = {}
    try:
        scope = {"torch": torch}
        args = eval(ex.args_code, scope)  # noqa: S307 - code variants.py generated from the recording
        kwargs = eval(ex.kwargs_code, scope) if ex.kwargs_code else {}  # noqa: S307
        inputs = [(args, kwargs)]
        for s in samples:
            if vmap.get(s["variant"], 0) != ex.variant or len(inputs) > MAX_COMPARED:
                continue
            try:
                a, k = torch.load(os.path.join(shard.folder, s["file"]), map_location="cpu", weights_only=True)
            except Exception:  # noqa: BLE001, S112 - a sample that cannot be read is left out
                continue
            inputs.append((tuple(a), dict(k)))
        eager, rewrites = _as_apply_writes(torch, eager, function)
        target = _as_module(torch, eager, name, function)
        bind = _binder(eager if function else getattr(eager, name), args, kwargs)
        step = "run"
        expected = [_call(torch, lambda a, k: _method(compiled, name)(*a, **k), a, k) for a, k in inputs]
        _register_outputs(torch, expected)
        step = "export"
        first_dynamic = ex.dynamic_shapes_inline_code  # what apply writes without a proven range
        ep = None
        while ep is None:  # the recorded ranges; those export suggests; Dim.DYNAMIC (torch trips on some ranges)
            dynamic = eval(ex.dynamic_shapes_inline_code, scope) if ex.dynamic_shapes_inline_code else None  # noqa: S307
            try:
                with _is_scripting_as_exporting(torch) as asked:
                    ep = torch.export.export(target, tuple(args), kwargs or None, dynamic_shapes=dynamic)
                if asked and "`torch.jit.is_scripting()` answered as `torch.compiler.is_exporting()`" not in rewrites:
                    rewrites.append("`torch.jit.is_scripting()` answered as `torch.compiler.is_exporting()`")
            except Exception as exc:
                wider = _suggested_ranges(str(exc), ex.dims)
                if wider and any(ranges.get(n) != r for n, r in wider.items()):
                    ranges.update(wider)
                elif any(d.name not in ranges for d in ex.dims):  # the sizes seen, not wider
                    ranges.update({d.name: [d.min, d.max] for d in ex.dims if d.name not in ranges})
                elif ex.dims and any(ranges.get(d.name) != "dynamic" for d in ex.dims):
                    ranges.update({d.name: "dynamic" for d in ex.dims})
                else:
                    raise
                ex = variants.example_of(stats, ranges)
        rewrites += _register_named_tuples(torch, _spec_classes(ep.call_spec.out_spec))
        step = "compare"
        non_leaf: list[str] = []
        try:
            module = ep.module()
        except ValueError as exc:
            if "non-leaf" not in str(exc):
                raise
            # parameters written in place with grad mode on: the migration copies detached values
            # into them (TSX310), so the module it exports has leaves with the same values
            non_leaf = _make_leaves(torch, ep)
            module = ep.module()
        for i, (a, k) in enumerate(inputs):
            got = _call(torch, lambda a, k: module(*a, **k), *bind(a, k))
            why = _differs(torch, expected[i], got)
            if why:
                which = "the example inputs" if i == 0 else f"recorded sample {i}"
                return {"verdict": "failed", "step": "compare", "error": f"outputs differ on {which}: {why}", "frame": None}
        step = "save"
        import io

        buf = io.BytesIO()
        torch.export.save(ep, buf)
        buf.seek(0)
        step = "load"
        loaded = torch.export.load(buf).module()
        a, k = inputs[-1]
        why = _differs(torch, expected[-1], _call(torch, lambda a, k: loaded(*a, **k), *bind(a, k)))
        if why:
            return {"verdict": "failed", "step": "load", "error": f"outputs differ after torch.export.save and load: {why}", "frame": None}
    except _Timeout:
        return {"verdict": "skipped", "step": step, "error": f"the proof took longer than {_seconds():g} s (TS2EXPORT_PROVE_SECONDS)"}
    except Exception as exc:  # noqa: BLE001 - the verdict
        if os.environ.get("TS2EXPORT_DEBUG"):
            traceback.print_exc()
        if step == "run":
            return {"verdict": "skipped", "step": step, "error": "the TorchScript object failed on the recorded inputs: " + _first_line(exc)}
        failed = {"verdict": "failed", "step": step, "error": _first_line(exc), "frame": _user_frame(exc, torch)}
        if step == "export" and failed["frame"]:  # in the user's code, which apply may rewrite
            kit = _keep_kit(torch, eager, name, function, inputs, expected, first_dynamic)
            if kit:
                failed["replay"] = kit
        return failed
    out = {"verdict": "proven", "samples": len(inputs) - 1, "dynamic": [d.name for d in ex.dims]}
    if rewrites:
        out["as_apply_writes"] = rewrites
        # done at run time as apply writes it: apply proves it again on the code it writes
        kit = _keep_kit(torch, eager, name, function, inputs, expected, ex.dynamic_shapes_inline_code)
        if kit:
            out["replay"] = kit
    if non_leaf:
        out["non_leaf"] = non_leaf
    if ranges:
        out["ranges"] = {name: ranges}
    return out


MAX_KIT_BYTES = 256 << 20  # parameters and buffers of an object kept for a replay


def _keep_kit(torch, eager, name, function, inputs, expected, dynamic) -> str | None:
    """Keep what a replay of this proof on the migrated code needs (see :mod:`.replay`): the
    object (pickled: its classes by module and name), the inputs, TorchScript's outputs and the
    dynamic shapes apply writes. The file's name in the shard folder, or None (an object of
    ``__main__`` or of a local class, which the replay cannot import; a large one)."""
    try:
        owner = eager if function else type(eager)
        if getattr(owner, "__module__", "__main__") == "__main__" or "<locals>" in getattr(owner, "__qualname__", "<locals>"):
            return None
        if not function and sum(t.numel() * t.element_size() for t in [*eager.parameters(), *eager.buffers()]) > MAX_KIT_BYTES:
            return None
        _keep_kit.count = getattr(_keep_kit, "count", 0) + 1
        file = f"replay-{os.getpid()}-{_keep_kit.count}.pt"
        import io
        import json
        import zipfile

        kit = {"object": eager, "method": name, "function": function, "inputs": inputs, "expected": _plain(expected),
               "dynamic": dynamic}
        buf = io.BytesIO()
        torch.save(kit, buf)
        tmp = os.path.join(shard.folder, file + ".tmp")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as zf:
            # the import path, read before the object is unpickled (its classes import from it)
            zf.writestr("path.json", json.dumps([os.path.abspath(p or os.getcwd()) for p in sys.path]))
            zf.writestr("kit.pt", buf.getvalue())
        os.replace(tmp, os.path.join(shard.folder, file))
        return file
    except Exception:  # noqa: BLE001 - no replay: the static exemption decides, as before
        return None


def _plain(value):
    """Outputs with their named tuples as plain tuples (TorchScript returns classes of its own,
    `torch._jit_internal.HeadOutputs`, which do not pickle; the comparison reads leaves only)."""
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


_SUGGESTED = re.compile(r"^\s*(\w+) = (?:Dim\('(\w+)'((?:, (?:min|max)=-?\d+)*)\)|(-?\d+))\s*$", re.M)


def _make_leaves(torch, ep) -> list[str]:
    """Replace the exported program's parameters that are not leaves by leaves holding the same
    values (what a module whose in-place writes copied detached values would hold); their names."""
    names = [k for k, v in ep.state_dict.items() if isinstance(v, torch.nn.Parameter) and not v.is_leaf]
    ep.state_dict.update({k: torch.nn.Parameter(ep.state_dict[k].detach(), ep.state_dict[k].requires_grad) for k in names})
    return names


def _suggested_ranges(text: str, dims) -> dict:
    """The dim ranges torch.export's "Suggested fixes" ask for, when they still cover every size
    recorded (a fix that narrows the range or makes a recorded dim static would break a call that
    was seen: no fix)."""
    if "Suggested fixes" not in text:
        return {}
    by_name = {d.name: d for d in dims}
    out = {}
    for name, _dim, bounds, static in _SUGGESTED.findall(text.split("Suggested fixes", 1)[1]):
        d = by_name.get(name)
        if d is None or static:
            return {}
        found = dict(re.findall(r"(min|max)=(-?\d+)", bounds))
        low = int(found["min"]) if "min" in found else None
        high = int(found["max"]) if "max" in found else d.max
        if (low is not None and d.min is not None and low > d.min) or high < d.max:
            return {}
        out[name] = [low, high]
    return out


def _as_module(torch, eager, name, function):
    if function:
        class FunctionAsModule(torch.nn.Module):
            def forward(self, *args, **kwargs):
                return eager(*args, **kwargs)

        _signed(FunctionAsModule, eager)
        return FunctionAsModule()
    if name == "forward":
        return eager

    class MethodAsModule(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.module = eager

        def forward(self, *args, **kwargs):
            return getattr(self.module, name)(*args, **kwargs)

    _signed(MethodAsModule, getattr(eager, name))
    return MethodAsModule()


def _signed(wrapper, fn) -> None:
    """Give the wrapper's `forward` the signature of what it calls: torch.export matches the
    inputs and `dynamic_shapes` with the parameters of `forward` (with `*args` it took two inputs
    for one), as it does for the migrated code, which exports the function or method itself."""
    import inspect

    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    this = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    wrapper.forward.__signature__ = signature.replace(parameters=[this, *signature.parameters.values()])


def _as_apply_writes(torch, eager, function):
    """The eager object as the code `apply` writes builds it, where that differs at run time
    without rewriting the source: each child module that was scripted from an eager module (in a
    constructor, `self.norm = torch.jit.script(Norm())`) is that eager module, which `apply` writes
    instead (it shares the scripted module's parameters). A shallow copy: the program's objects are
    left as they are. Returns (object, what was done, for the verdict)."""
    if function or not _eager_of:
        return eager, []
    done: list[str] = []

    def swap(module, prefix: str):
        copy_of = None
        for name, child in list(module._modules.items()):
            if child is None:
                continue
            original = _eager_of.get(child) if isinstance(child, torch.jit.ScriptModule) else None
            new = original if original is not None else swap(child, f"{prefix}{name}.")
            if original is not None:
                done.append(f"scripted child `{prefix}{name}` run eager")
            if new is not child:
                if copy_of is None:
                    import copy

                    copy_of = copy.copy(module)
                    copy_of._modules = dict(module._modules)
                copy_of._modules[name] = new
        return copy_of if copy_of is not None else module

    return swap(eager, ""), done


class _is_scripting_as_exporting:  # noqa: N801 - used as a context manager
    """While export traces: `torch.jit.is_scripting()`, called from the user's code, answers as
    `torch.compiler.is_exporting()`, which `apply` writes in its place (TSX501): the branch that
    runs only in eager Python (`if not torch.jit.is_scripting(): check(float(x.max()))`) is not
    traced, as in the migrated code. torch's own calls keep their answer. Yields a list that is
    non-empty once the user's code asked."""

    def __init__(self, torch) -> None:
        self.torch = torch
        self.asked: list[bool] = []

    def __enter__(self) -> list[bool]:
        torch, asked = self.torch, self.asked
        self.original = original = torch.jit.is_scripting

        def is_scripting() -> bool:
            caller = sys._getframe(1).f_code.co_filename
            if _user_file(torch, caller):
                asked.append(True)
                return torch.compiler.is_exporting()
            return original()

        self.internal = getattr(torch._jit_internal, "is_scripting", None)
        torch.jit.is_scripting = is_scripting
        if self.internal is not None:
            torch._jit_internal.is_scripting = is_scripting
        return asked

    def __exit__(self, *exc) -> None:
        self.torch.jit.is_scripting = self.original
        if self.internal is not None:
            self.torch._jit_internal.is_scripting = self.internal


def _register_named_tuples(torch, classes) -> list[str]:
    """Register the named tuples of the user's code that the exported program returns, for
    torch.export's serialization, as `apply` writes after each such class (TSX309), where the
    program has not: `torch.export.save` refuses a named tuple it cannot name. (The TorchScript
    object returns TorchScript's own named tuple class, so its outputs do not show them.)"""
    from torch.utils import _pytree

    found: list[str] = []
    for cls in classes:
        if cls in _pytree.SUPPORTED_SERIALIZED_TYPES or not _user_class(torch, cls):
            continue
        name = f"{cls.__module__}.{cls.__qualname__}"
        try:
            _pytree._register_namedtuple(cls, serialized_type_name=name)
        except Exception:  # noqa: BLE001, S112 - registered meanwhile, or refused: save will say
            continue
        found.append(f"named tuple `{name}` registered")
    return found


def _spec_classes(spec) -> list:
    """The named tuple classes in a pytree spec (an exported program's outputs)."""
    out = []
    context = getattr(spec, "context", None)
    if isinstance(context, type) and issubclass(context, tuple) and hasattr(context, "_fields"):
        out.append(context)
    children = spec.children() if hasattr(spec, "children") else getattr(spec, "children_specs", [])
    for child in children:
        out += [c for c in _spec_classes(child) if c not in out]
    return out


def _user_class(torch, cls) -> bool:
    """A class defined in the user's code (which `apply` rewrites), not in torch or a library."""
    import inspect

    try:
        path = os.path.abspath(inspect.getsourcefile(cls) or "")
    except (TypeError, OSError):
        return False
    return _user_file(torch, path)


def _user_file(torch, path: str) -> bool:
    """Whether a source file is the user's code: not torch, not the standard library or site-packages."""
    path = os.path.abspath(path) if path and not path.startswith("<") else ""
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    return bool(path) and not path.startswith((torch_dir, os.path.dirname(os.__file__) + os.sep)) \
        and "site-packages" not in path


def _binder(fn, example_args, example_kwargs):
    """How to call the exported program with a recorded sample: the example may hold as positional
    what a sample passed by keyword (`m(x, mask=y)` and `m(x, y)` are one structure to the
    recording), and an exported program takes its inputs the way it was exported."""
    import inspect

    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return lambda a, k: (a, k)
    positional = len(example_args)

    def bind(a, k):
        if not k or example_kwargs:
            return a, k
        try:
            bound = signature.bind(*a, **k)
        except TypeError:
            return a, k
        args = tuple(bound.args)
        return (args, dict(bound.kwargs)) if len(args) <= positional else (a, k)

    return bind


def _method(compiled, name):
    return compiled if name == "forward" else getattr(compiled, name)


def _call(torch, fn, args, kwargs):
    """fn(args, kwargs) with the random number generators forked and seeded (dropout and friends
    draw the same numbers in both runs), without autograd; with it where the model takes
    gradients itself (`torch.autograd.grad` of an energy in forward, for forces), which fails
    without it."""
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(0)
            return fn(args, kwargs)
    except RuntimeError as exc:
        if "does not require grad" not in str(exc):
            raise
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return fn(args, kwargs)


def _leaves(torch, out) -> list:
    from torch.utils import _pytree

    leaves, _ = _pytree.tree_flatten(out)
    return leaves


def _differs(torch, expected, got) -> str | None:
    a, b = _leaves(torch, expected), _leaves(torch, got)
    if len(a) != len(b):
        return f"{len(a)} output value(s) from TorchScript, {len(b)} from the exported program"
    for i, (x, y) in enumerate(zip(a, b)):
        if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
            if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)):
                return f"output {i} is a {type(x).__name__} from TorchScript and a {type(y).__name__} exported"
            if x.dtype != y.dtype or x.shape != y.shape:
                return f"output {i}: {x.dtype} {tuple(x.shape)} from TorchScript, {y.dtype} {tuple(y.shape)} exported"
            try:
                torch.testing.assert_close(y.cpu(), x.cpu(), equal_nan=True)
            except AssertionError as exc:
                lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
                return f"output {i}: " + "; ".join(lines[:3])
        elif x != y:
            return f"output {i}: {x!r} from TorchScript, {y!r} exported"
    return None


def _register_outputs(torch, outputs) -> None:
    """Register the NamedTuple classes the outputs hold with a serialized name, as TSX309 writes
    it, so that torch.export.save takes them."""
    from torch.utils import _pytree

    def walk(o):
        if isinstance(o, tuple) and hasattr(type(o), "_fields"):
            cls = type(o)
            if cls not in _pytree.SUPPORTED_NODES:
                try:
                    _pytree._register_namedtuple(cls, serialized_type_name=f"{cls.__module__}.{cls.__qualname__}")
                except Exception:  # noqa: BLE001, S110 - registered meanwhile
                    pass
        if isinstance(o, (tuple, list)):
            for x in o:
                walk(x)
        elif isinstance(o, dict):
            for x in o.values():
                walk(x)

    walk(outputs)


# ---- the verdict's error -------------------------------------------------------------------------------


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    first = " ".join(next((ln for ln in text.splitlines() if ln.strip()), "").split())
    return f"{type(exc).__name__}: {first}"[:400]


def _user_frame(exc: BaseException, torch) -> list | None:
    """[file, line, function] of the deepest frame of the traceback in the user's code (not torch,
    not the standard library or site-packages, not the recorder)."""
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    skip = tuple(p for p in {os.path.dirname(os.__file__) + os.sep, _own_dir + os.sep, torch_dir} if p)
    found = None
    for fs in traceback.extract_tb(exc.__traceback__):
        path = os.path.abspath(fs.filename)
        if path.startswith(skip) or "site-packages" in path or fs.filename.startswith("<"):
            continue
        found = [path, fs.lineno, fs.name]
    return found


# ---- bounds and silence --------------------------------------------------------------------------------


class _bound:  # noqa: N801 - used as a context manager
    """Raise _Timeout in the main thread after `seconds` (no bound elsewhere, or without SIGALRM)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.previous = None

    def __enter__(self):
        import signal
        import threading

        if self.seconds > 0 and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
            def ring(signum, frame):
                raise _Timeout()

            self.previous = signal.signal(signal.SIGALRM, ring)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc):
        if self.previous is not None:
            import signal

            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)
        return False


def _silence():
    """Point fds 1 and 2 at /dev/null (the proof's prints and torch's logs); returns the saved fds."""
    try:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001, S110 - a closed stream
                pass
        saved = (os.dup(1), os.dup(2))
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)
        return saved
    except OSError:
        return None


def _restore(saved) -> None:
    if saved is None:
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001, S110 - a closed stream
            pass
    for fd, old in zip((1, 2), saved):
        try:
            os.dup2(old, fd)
            os.close(old)
        except OSError:
            pass
