"""The recorder that runs inside a program under `ts2export record`: this package stands apart from
the rest of ts2export, which it never imports.

The bootstrap `sitecustomize` that `ts2export record` puts on the child's PYTHONPATH loads this
package by path, under a private name (the recorded program may run another interpreter, where
ts2export is not installed), and calls `install(shard_dir)`. Its modules: this one (installing,
the wrappers of torch's entry points, the hot path of a recorded call), :mod:`.inputs` (what is
kept of each call's inputs) and :mod:`.shard` (this process's recording and its shard file). It imports only the standard library until the program imports torch;
then it wraps the TorchScript entry points (`torch.jit.script`, `trace`, `trace_module`, `load`,
`torch.jit.mobile._load_for_lite_interpreter`) and, at class level, the calls of what they return
(`torch.ScriptMethod.__call__`, `torch.ScriptFunction.__call__`, `LiteScriptModule`), looking the
callee up in a per-process table. Every hook calls the original with the same arguments and returns
its result; a failure inside the recorder is counted in the recording, never raised.

Per call site (file, line of the script/trace/load call) and per method it aggregates the inputs of
every call: the pytree structure, per tensor its dtype and per dim min/max and the sizes seen (up to
a cap), which varying dims were always equal, the value range of integer tensors (sampled), and a
few small real samples (torch.save'd files). Each process writes its own shard (one JSON snapshot,
replaced atomically) when something new is seen, at most a second after counts change, at exit, on
SIGTERM (when the program left SIGTERM at its default) and when a multiprocessing worker finishes.
After a fork the child keeps the parent's table of recorded objects and starts a shard of its own.
`ts2export record` merges the shards when the command ends (see ts2export.record.merge).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import weakref

from . import compiled, inputs, prove, shard
from .inputs import _call_key, _Method, _Site
from .shard import MAX_SAVED_PATHS, VALUE_RANGE_EVERY, VALUE_RANGE_FIRST

_methods: dict[int, tuple] = {}  # id(ScriptMethod | ScriptFunction) -> (weakref, _Method)
_cpp: dict[int, tuple] = {}  # id(torch._C.ScriptModule of a recorded module) -> (weakref, _Site)
_objects: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # module / lite module -> _Site
_orig: dict[str, object] = {}
_torch = None
_Tensor = None
_torch_dir = ""
_own_files = {os.path.join(os.path.dirname(os.path.abspath(__file__)), name)  # hidden from tracebacks
              for name in ("__init__.py", "inputs.py", "shard.py", "prove.py", "variants.py")}


# ---- installation ----------------------------------------------------------------------------------


def install(shard_dir: str) -> None:
    """Start recording into `shard_dir`: patch torch now if imported, else when it is."""
    if shard.folder is not None:
        return
    shard.start(shard_dir)
    if "torch" in sys.modules and hasattr(sys.modules["torch"], "jit"):
        _patch_torch(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _Finder("torch"))
    if "torch.jit.mobile" in sys.modules:
        _patch_mobile(sys.modules["torch.jit.mobile"])
    else:
        sys.meta_path.insert(0, _Finder("torch.jit.mobile"))
    atexit.register(shard.flush, True)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_after_fork)


class _Finder:
    """A one-shot meta path finder: lets `name` import normally, then patches the module."""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        exec_module = loader.exec_module
        patch = _patch_torch if name == "torch" else _patch_mobile

        def exec_then_patch(module):
            exec_module(module)
            try:
                patch(module)
            except Exception as exc:
                shard.error(exc)

        try:
            loader.exec_module = exec_then_patch
        except (AttributeError, TypeError):
            pass
        return spec


# ---- patching --------------------------------------------------------------------------------------


def _patch_torch(torch) -> None:
    global _torch, _Tensor, _torch_dir
    if shard.state["patched"]:
        return
    shard.state["patched"] = True
    _torch = torch
    _Tensor = torch.Tensor
    inputs.bind(torch)
    shard.bind(torch)
    atexit.register(_prove_at_exit)
    _torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    jit = torch.jit
    import functools

    def wrap(name, make):
        orig = getattr(jit, name, None)
        if orig is None:
            return
        _orig[name] = orig
        setattr(jit, name, functools.wraps(orig)(make(orig)))

    wrap("script", _make_script)
    wrap("trace", _make_trace)
    wrap("trace_module", _make_trace_module)
    wrap("load", _make_load)
    wrap("_load_for_lite_interpreter", _make_lite_load)
    wrap("freeze", _make_derive)
    wrap("optimize_for_inference", _make_derive)

    method_cls = torch._C.ScriptMethod
    function_cls = torch._C.ScriptFunction
    _orig["method_call"] = method_call = method_cls.__call__
    _orig["function_call"] = function_call = function_cls.__call__

    def make_call(call):
        # The hot path, inlined: a call whose signature was seen reads only dtypes and shapes (no
        # tensor op, so nothing lands in a trace) and bumps three counters.
        T = _Tensor
        key_of = _call_key
        methods = _methods
        state = shard.state
        flush_soon = shard.flush_soon

        def __call__(self, *args, **kwargs):
            __tracebackhide__ = True  # pytest and IPython leave this frame out of tracebacks
            entry = methods.get(id(self))
            if entry is None:
                return call(self, *args, **kwargs)
            method = entry[1]
            shape = None
            if not kwargs:
                n = len(args)  # the one- and two-tensor cases of _call_key, unrolled
                if n == 2 and type(args[0]) is T and type(args[1]) is T:
                    a, b = args
                    key = (a.dtype, a.shape, b.dtype, b.shape)
                elif n == 1 and type(args[0]) is T:
                    a = args[0]
                    key = (a.dtype, a.shape)
                else:
                    key = key_of(args, None)
                try:
                    shape = method.shapes.get(key)
                except TypeError:  # an unhashable constant
                    pass
                if shape is not None and shape.variant.int_leaves:
                    n = shape.value_calls
                    if n < VALUE_RANGE_FIRST or n % VALUE_RANGE_EVERY == 0:
                        shape = None  # this call's integer values are sampled: the slow path
                    else:
                        shape.value_calls = n + 1
            if shape is None:
                return _recorded_call(method, call, self, args, kwargs)
            out = call(self, *args)  # a hot call has no keyword inputs
            shape.count += 1
            shape.variant.calls += 1
            method.calls += 1
            if method.calls & 63:
                state["dirty"] = True
            else:
                flush_soon()
            return out

        return __call__

    __call__ = make_call(method_call)
    __call__f = make_call(function_call)
    __call__.__qualname__ = "ScriptMethod.__call__"
    __call__f.__name__ = "__call__"
    __call__f.__qualname__ = "ScriptFunction.__call__"
    method_cls.__call__ = __call__
    function_cls.__call__ = __call__f

    # Saving, at the C++ classes every Python path ends in (torch.jit.save, m.save,
    # m._save_for_lite_interpreter): wrapping them adds no frame above a deprecation warning.
    for cls, names in ((torch._C.ScriptModule, ("save", "_save_for_mobile")), (torch._C.ScriptFunction, ("save",))):
        for name in names:
            orig = getattr(cls, name, None)
            if orig is not None:
                setattr(cls, name, _make_cpp_save(orig))
    mobile = sys.modules.get("torch.jit.mobile")
    if mobile is not None:
        _patch_mobile(mobile)
    if sys.excepthook is sys.__excepthook__:
        sys.excepthook = _excepthook


def _patch_mobile(mobile) -> None:
    if "mobile_load" in _orig or not hasattr(mobile, "_load_for_lite_interpreter"):
        return
    import functools

    orig = mobile._load_for_lite_interpreter
    _orig["mobile_load"] = orig
    mobile._load_for_lite_interpreter = functools.wraps(orig)(_make_lite_load(orig))
    cls = getattr(mobile, "LiteScriptModule", None)
    if cls is None:
        return
    call, forward, run_method = cls.__call__, cls.forward, cls.run_method

    def __call__(self, *input):
        __tracebackhide__ = True  # pytest and IPython leave this frame out of tracebacks
        site = _objects.get(self) if _objects else None
        if site is None:
            return call(self, *input)
        return _recorded_call(site.method("forward"), call, self, input, {})

    def forward_(self, *input):
        __tracebackhide__ = True  # pytest and IPython leave this frame out of tracebacks
        site = _objects.get(self) if _objects else None
        if site is None:
            return forward(self, *input)
        return _recorded_call(site.method("forward"), forward, self, input, {})

    def run_method_(self, method_name, *input):
        __tracebackhide__ = True  # pytest and IPython leave this frame out of tracebacks
        site = _objects.get(self) if _objects else None
        if site is None:
            return run_method(self, method_name, *input)

        def run(obj, *args):
            return run_method(obj, method_name, *args)

        return _recorded_call(site.method(str(method_name)), run, self, input, {})

    forward_.__name__ = "forward"
    run_method_.__name__ = "run_method"
    cls.__call__, cls.forward, cls.run_method = __call__, forward_, run_method_


def _without_own_frames(tb):
    """The traceback `tb` without the recorder's frames."""
    import types

    kept = []
    while tb is not None:
        if tb.tb_frame.f_code.co_filename not in _own_files:
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(kept):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def _excepthook(etype, value, tb):
    """The default excepthook, printing the traceback the program would print unrecorded."""
    try:
        seen: set = set()
        exc = value
        todo = [value]
        while todo:
            exc = todo.pop()
            if exc is None or id(exc) in seen or not isinstance(exc, BaseException):
                continue
            seen.add(id(exc))
            exc.__traceback__ = _without_own_frames(exc.__traceback__)
            todo += [exc.__cause__, exc.__context__]
        tb = _without_own_frames(tb)
    except Exception:
        pass
    return sys.__excepthook__(etype, value, tb)


def _caller(depth: int = 2):
    """The frame that called the wrapped torch.jit function, or None when torch itself did."""
    try:
        frame = sys._getframe(depth)
    except ValueError:
        return None
    while frame is not None and frame.f_code.co_filename in _own_files:
        frame = frame.f_back
    if frame is None or os.path.abspath(frame.f_code.co_filename).startswith(_torch_dir):
        return None
    return frame


def _position(frame) -> tuple:
    """(file, line, end_line, col, end_col, function) of the call being made in `frame`."""
    code = frame.f_code
    line = frame.f_lineno
    end_line, col, end_col = line, 0, 0
    positions = getattr(code, "co_positions", None)
    if positions is not None:
        try:
            pos = list(positions())[frame.f_lasti // 2]
            if pos[0] is not None:
                line, end_line = pos[0], pos[1] if pos[1] is not None else pos[0]
                col, end_col = (pos[2] or 0) + 1, (pos[3] or 0) + 1
        except (IndexError, TypeError):
            pass
    name = getattr(code, "co_qualname", code.co_name)
    return os.path.abspath(code.co_filename), line, end_line, col, end_col, name


def _site_for(kind: str, target: str, frame, artifact: str | None = None) -> "_Site":
    file, line, end_line, col, end_col, function = _position(frame)
    key = (kind, file, line, col, target)
    with shard.lock:
        site = shard.sites.get(key)
        if site is None:
            site = shard.sites[key] = _Site(kind, file, line, end_line, col, end_col, function, target)
        site.created += 1
        if artifact and artifact not in site.artifacts and len(site.artifacts) < MAX_SAVED_PATHS:
            site.artifacts.append(artifact)
        shard.state["dirty"] = True
    return site


def _callers_of(frame, depth: int = 8) -> list[tuple[str, int]]:
    """(file, line) of the calls in the user's code that led to the call being made in `frame`
    (a test calling the helper that scripts): which call sites of a helper the run reached."""
    out: list[tuple[str, int]] = []
    f = frame.f_back
    while f is not None and len(out) < depth:
        name = f.f_code.co_filename
        if name not in _own_files and not name.startswith("<") and not os.path.abspath(name).startswith(_torch_dir):
            out.append((os.path.abspath(name), f.f_lineno))
        f = f.f_back
    return out


def _target_name(obj) -> str:
    if isinstance(obj, _torch.jit.ScriptModule):
        try:
            return str(obj.original_name) or type(obj).__name__
        except Exception:
            return type(obj).__name__
    name = getattr(obj, "name", None) if isinstance(obj, _torch._C.ScriptFunction) else None
    if isinstance(name, str) and name:
        return name
    return type(obj).__qualname__


def _artifact_path(f) -> str | None:
    if isinstance(f, (str, os.PathLike)):
        return os.path.abspath(os.fspath(f))
    name = getattr(f, "name", None)
    if isinstance(name, str) and name and not name.startswith("<"):
        return os.path.abspath(name)
    return None


def _register(obj, site: "_Site") -> None:
    """Route the calls of `obj` (what a script/trace/load returned) to `site`."""
    torch = _torch
    if isinstance(obj, torch.jit.ScriptModule):
        try:
            _objects[obj] = site
        except TypeError:
            pass
        cpp = getattr(obj, "_c", None)
        if cpp is not None:
            _bind(cpp, site, _cpp)
        try:
            names = list(obj._c._method_names())
        except Exception:
            names = ["forward"]
        for name in names:
            try:
                method = getattr(obj, name)
            except Exception:
                continue
            if isinstance(method, torch._C.ScriptMethod):
                _bind(method, site.method(name, _arg_names(method, skip_self=True)))
    elif isinstance(obj, torch._C.ScriptFunction):
        _bind(obj, site.method("forward", _arg_names(obj, skip_self=False)))
    elif type(obj).__name__ == "LiteScriptModule":
        try:
            _objects[obj] = site
        except TypeError:
            pass


def _bind(callee, value, table=None) -> None:
    """table[id(callee)] = (weakref, value), dropped when callee dies (ids are reused)."""
    table = _methods if table is None else table
    key = id(callee)

    def gone(_ref, key=key, table=table):
        entry = table.get(key)
        if entry is not None and entry[0] is _ref:
            del table[key]

    try:
        ref = weakref.ref(callee, gone)
    except TypeError:
        ref = None
    table[key] = (ref, value)


def _arg_names(callee, skip_self: bool) -> list:
    try:
        args = [a.name for a in callee.schema.arguments]
    except Exception:
        return []
    return args[1:] if skip_self and args and args[0] == "self" else args


def _recordable(obj) -> bool:
    torch = _torch
    return isinstance(obj, (torch.jit.ScriptModule, torch._C.ScriptFunction)) or type(obj).__name__ == "LiteScriptModule"


def _guarded_register(kind, obj, frame, artifact=None, eager=None, methods=()):
    """Register what a call made; `eager`: what it was handed, kept to prove at exit."""
    try:
        if not _recordable(obj):
            return
        site = _site_for(kind, _target_name(obj), frame, artifact)
        _register(obj, site)
        if eager is not None:
            found = compiled.compiled(eager, _torch, _torch_dir)
            chain = _callers_of(frame)
            with shard.lock:
                if site.compiled is None:
                    site.compiled, site.callers = [], []
                compiled.add(site.compiled, found)
                compiled.add(site.callers, chain)
            prove.keep(site, eager, obj, methods)
        if not shard.state.get("sigterm"):
            shard.state["sigterm"] = True
            _install_sigterm()
        shard.flush_soon(novel=True)
    except Exception as exc:
        shard.error(exc)


def _make_script(orig):
    def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
        __tracebackhide__ = True  # pytest and IPython leave this frame out of tracebacks
        # `script` resolves names in its caller's frame: one more frame (this one) to skip.
        out = orig(obj, optimize, _frames_up + 1, _rcb, example_inputs)
        frame = _caller()
        if frame is not None and shard.folder is not None:
            _guarded_register("script", out, frame, eager=obj)
        return out

    return script


def _make_trace(orig):
    def trace(func, *args, **kwargs):
        __tracebackhide__ = True  # pytest and IPython leave this frame out of tracebacks
        out = orig(func, *args, **kwargs)
        frame = _caller()
        if frame is not None and shard.folder is not None:
            _guarded_register("trace", out, frame, eager=func)
            try:
                example = args[0] if args else kwargs.get("example_inputs")
                example_kw = kwargs.get("example_kwarg_inputs")
                if len(args) > 9:
                    example_kw = args[9]
                method = _method_of(out, "forward")
                if method is not None:
                    if example_kw is not None:
                        _observe_example(method, (), dict(example_kw))
                    elif example is not None:
                        _observe_example(method, example if isinstance(example, tuple) else (example,), {})
            except Exception as exc:
                shard.error(exc)
        return out

    return trace


def _make_trace_module(orig):
    def trace_module(mod, inputs, *args, **kwargs):
        __tracebackhide__ = True  # pytest and IPython leave this frame out of tracebacks
        out = orig(mod, inputs, *args, **kwargs)
        frame = _caller()
        if frame is not None and shard.folder is not None:
            _guarded_register("trace_module", out, frame, eager=mod)
            try:
                as_kwargs = kwargs.get("example_inputs_is_kwarg", args[8] if len(args) > 8 else False)
                for name, example in dict(inputs).items():
                    method = _method_of(out, name)
                    if method is None:
                        continue
                    if as_kwargs and isinstance(example, dict):
                        _observe_example(method, (), dict(example))
                    else:
                        _observe_example(method, example if isinstance(example, tuple) else (example,), {})
            except Exception as exc:
                shard.error(exc)
        return out

    return trace_module


def _method_of(obj, name: str):
    if isinstance(obj, _torch._C.ScriptFunction):
        entry = _methods.get(id(obj))
    else:
        entry = _methods.get(id(getattr(obj, name, None)))
    return entry[1] if entry is not None else None


def _make_loader(kind: str):
    """A wrapper factory for a loader (`torch.jit.load`: "load"; the lite interpreter's: "load_lite");
    its name and docstring come from ``functools.wraps`` where it is installed."""
    def make(orig):
        def load(f, *args, **kwargs):
            __tracebackhide__ = True  # pytest and IPython leave this frame out of tracebacks
            out = orig(f, *args, **kwargs)
            frame = _caller()
            if frame is not None and shard.folder is not None:
                _guarded_register(kind, out, frame, _artifact_path(f))
            return out

        return load

    return make


_make_load = _make_loader("load")
_make_lite_load = _make_loader("load_lite")


def _make_cpp_save(orig):
    def save(self, *args, **kwargs):
        __tracebackhide__ = True  # pytest and IPython leave this frame out of tracebacks
        out = orig(self, *args, **kwargs)
        if shard.folder is not None and args:
            entry = _cpp.get(id(self))
            _link_saved(entry[1] if entry is not None else None, self, args[0])
        return out

    save.__name__ = getattr(orig, "__name__", "save")
    return save


def _make_derive(orig):
    """freeze / optimize_for_inference: the new module keeps the origin of the old one."""

    def derive(mod, *args, **kwargs):
        __tracebackhide__ = True  # pytest and IPython leave this frame out of tracebacks
        out = orig(mod, *args, **kwargs)
        try:
            site = _objects.get(mod) if _objects else None
            if site is not None and out is not mod:
                _register(out, site)
        except Exception as exc:
            shard.error(exc)
        return out

    return derive


def _link_saved(site, obj, f) -> None:
    """Record that what `site` made was saved to `f` (site None: look `obj` up as a function)."""
    try:
        if site is None:
            entry = _methods.get(id(obj))
            site = entry[1].site if entry is not None else None
        path = _artifact_path(f)
        if site is None or path is None:
            return
        with shard.lock:
            if path not in site.saved and len(site.saved) < MAX_SAVED_PATHS:
                site.saved.append(path)
                shard.flush_soon(novel=True)
    except Exception as exc:
        shard.error(exc)


# ---- observing calls ---------------------------------------------------------------------------------


def _recorded_call(method: "_Method", call, obj, args, kwargs):
    """The slow path: a new signature, or a call whose integer values are sampled."""
    __tracebackhide__ = True  # pytest and IPython leave this frame out of tracebacks
    if shard.folder is None or _torch._C._get_tracing_state() is not None:
        return call(obj, *args, **kwargs)
    try:
        pending = method.before(args, kwargs)
    except Exception as exc:
        shard.error(exc)
        pending = None
    out = call(obj, *args, **kwargs)
    if pending is not None:
        try:
            method.commit(pending)
        except Exception as exc:
            shard.error(exc)
    return out


def _observe_example(method: "_Method", args, kwargs) -> None:
    pending = method.before(args, kwargs)
    if pending is not None:
        method.commit(pending)
        method.examples += 1


def _after_fork() -> None:
    """In a forked child: keep what is registered, drop the parent's counts, start a new shard."""
    shard.after_fork()
    prove.forget()
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is not None and shard.sites:
        # multiprocessing workers leave by os._exit, past atexit: flush in multiprocessing's exit
        # hook. A forked Process clears its finalizers first and then runs the after-fork hooks.
        try:
            mp_util.register_after_fork(_TOKEN, _mp_finalizer)
        except Exception:
            pass


class _Token:
    """A weak-referenceable key for multiprocessing.util.register_after_fork."""


_TOKEN = _Token()


def _mp_finalizer(_token) -> None:
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is not None:
        mp_util.Finalize(None, shard.flush, args=(True,), exitpriority=-100)


def _prove_at_exit() -> None:
    """The program ended: prove what it scripted and traced (see :mod:`.prove`), then write the
    shard. Registered when torch is imported: it runs after the exit handlers the program
    registered later, and before torch's own (weakref finalizers unregister torch's Python ops)."""
    if _torch is not None and shard.folder is not None:
        try:
            prove.prove_all(_torch, _release)
        except BaseException as exc:  # noqa: BLE001 - nothing escapes into the program's exit
            shard.error(exc)
    shard.flush(True)


def _release() -> None:
    """Route no more calls to the recording (the proof's own calls are not the program's)."""
    _methods.clear()
    _cpp.clear()
    _objects.clear()


def _on_sigterm(signum, frame) -> None:
    import signal

    shard.flush(True)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_sigterm() -> None:
    """Flush before dying of SIGTERM, only when the program left SIGTERM at its default."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):
        pass
