"""The recorder that runs inside a program under `ts2export record`.

The bootstrap `sitecustomize` that `ts2export record` puts on the child's PYTHONPATH loads this file
by path (the recorded program may run another interpreter, where ts2export is not installed) and
calls `install(shard_dir)`. It imports only the standard library until the program imports torch;
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
`ts2export record` merges the shards when the command ends (see ts2export.record_merge).
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
import weakref

# Bounds: the recording stays small whatever the program does. Calls past a bound are counted.
MAX_SHAPE_KEYS = 256  # distinct input signatures cached per method (later new ones are analysed, not cached)
MAX_VARIANTS = 16  # distinct structures/dtypes/ranks per method
MAX_SIZES = 32  # distinct sizes kept per dim
MAX_CONST_VALUES = 8  # distinct values kept per non-tensor input
MAX_SAMPLES = 3  # real input samples per method and process
MAX_SAMPLE_BYTES = 1 << 20  # per sample
MAX_PROCESS_SAMPLE_BYTES = 16 << 20  # per process
VALUE_RANGE_FIRST = 4  # integer value ranges: every call of a signature's first calls...
VALUE_RANGE_EVERY = 256  # ...then one call in this many
FLUSH_SECONDS = 1.0  # counts reach the shard at most this late
NOVEL_FLUSHES = 500  # novelties written at once; past that, at most one write per FLUSH_SECONDS
MAX_SAVED_PATHS = 16
_INTEGER_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")

_dir: str | None = None
_lock = threading.RLock()
_sites: dict[tuple, "_Site"] = {}
_methods: dict[int, tuple] = {}  # id(ScriptMethod | ScriptFunction) -> (weakref, _Method)
_cpp: dict[int, tuple] = {}  # id(torch._C.ScriptModule of a recorded module) -> (weakref, _Site)
_objects: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # module / lite module -> _Site
_state = {"dirty": False, "last": 0.0, "novel_flushes": 0, "nonce": "", "errors": 0, "error": None,
          "sample_bytes": 0, "samples": 0, "flushing": False, "patched": False}
_orig: dict[str, object] = {}
_torch = None
_Tensor = None
_torch_dir = ""
_here = os.path.abspath(__file__)


# ---- installation ----------------------------------------------------------------------------------


def install(shard_dir: str) -> None:
    """Start recording into `shard_dir`: patch torch now if imported, else when it is."""
    global _dir, MAX_SAMPLES
    if _dir is not None:
        return
    _dir = shard_dir
    try:
        MAX_SAMPLES = max(0, int(os.environ.get("TS2EXPORT_RECORD_SAMPLES", MAX_SAMPLES)))
    except ValueError:
        pass
    _new_nonce()
    if "torch" in sys.modules and hasattr(sys.modules["torch"], "jit"):
        _patch_torch(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _Finder("torch"))
    if "torch.jit.mobile" in sys.modules:
        _patch_mobile(sys.modules["torch.jit.mobile"])
    else:
        sys.meta_path.insert(0, _Finder("torch.jit.mobile"))
    atexit.register(_flush, True)
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
                _error(exc)

        try:
            loader.exec_module = exec_then_patch
        except (AttributeError, TypeError):
            pass
        return spec


def _new_nonce() -> None:
    _state["nonce"] = f"{os.getpid()}-{os.urandom(4).hex()}"


def _error(exc: BaseException) -> None:
    _state["errors"] += 1
    if _state["error"] is None:
        _state["error"] = f"{type(exc).__name__}: {exc}"[:300]
    _state["dirty"] = True


# ---- patching --------------------------------------------------------------------------------------


def _patch_torch(torch) -> None:
    global _torch, _Tensor, _torch_dir
    if _state["patched"]:
        return
    _state["patched"] = True
    _torch = torch
    _Tensor = torch.Tensor
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
                _state["dirty"] = True
            else:
                _flush_soon()
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
        if tb.tb_frame.f_code.co_filename != _here:
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
    while frame is not None and frame.f_code.co_filename == _here:
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
    with _lock:
        site = _sites.get(key)
        if site is None:
            site = _sites[key] = _Site(kind, file, line, end_line, col, end_col, function, target)
        site.created += 1
        if artifact and artifact not in site.artifacts and len(site.artifacts) < MAX_SAVED_PATHS:
            site.artifacts.append(artifact)
        _state["dirty"] = True
    return site


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


def _guarded_register(kind, obj, frame, artifact=None) -> None:
    try:
        if not _recordable(obj):
            return
        site = _site_for(kind, _target_name(obj), frame, artifact)
        _register(obj, site)
        if not _state.get("sigterm"):
            _state["sigterm"] = True
            _install_sigterm()
        _flush_soon(novel=True)
    except Exception as exc:
        _error(exc)


def _make_script(orig):
    def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
        __tracebackhide__ = True  # pytest and IPython leave this frame out of tracebacks
        # `script` resolves names in its caller's frame: one more frame (this one) to skip.
        out = orig(obj, optimize, _frames_up + 1, _rcb, example_inputs)
        frame = _caller()
        if frame is not None and _dir is not None:
            _guarded_register("script", out, frame)
        return out

    return script


def _make_trace(orig):
    def trace(func, *args, **kwargs):
        __tracebackhide__ = True  # pytest and IPython leave this frame out of tracebacks
        out = orig(func, *args, **kwargs)
        frame = _caller()
        if frame is not None and _dir is not None:
            _guarded_register("trace", out, frame)
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
                _error(exc)
        return out

    return trace


def _make_trace_module(orig):
    def trace_module(mod, inputs, *args, **kwargs):
        __tracebackhide__ = True  # pytest and IPython leave this frame out of tracebacks
        out = orig(mod, inputs, *args, **kwargs)
        frame = _caller()
        if frame is not None and _dir is not None:
            _guarded_register("trace_module", out, frame)
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
                _error(exc)
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
            if frame is not None and _dir is not None:
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
        if _dir is not None and args:
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
            _error(exc)
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
        with _lock:
            if path not in site.saved and len(site.saved) < MAX_SAVED_PATHS:
                site.saved.append(path)
                _flush_soon(novel=True)
    except Exception as exc:
        _error(exc)


# ---- observing calls ---------------------------------------------------------------------------------


def _recorded_call(method: "_Method", call, obj, args, kwargs):
    """The slow path: a new signature, or a call whose integer values are sampled."""
    __tracebackhide__ = True  # pytest and IPython leave this frame out of tracebacks
    if _dir is None or _torch._C._get_tracing_state() is not None:
        return call(obj, *args, **kwargs)
    try:
        pending = method.before(args, kwargs)
    except Exception as exc:
        _error(exc)
        pending = None
    out = call(obj, *args, **kwargs)
    if pending is not None:
        try:
            method.commit(pending)
        except Exception as exc:
            _error(exc)
    return out


def _observe_example(method: "_Method", args, kwargs) -> None:
    pending = method.before(args, kwargs)
    if pending is not None:
        method.commit(pending)
        method.examples += 1


def _call_key(args, kwargs):
    """A cheap hashable signature of a call's inputs (the cache key of its analysis). One or two
    tensors give a flat (dtype, shape, ...) tuple; anything else a tuple of per-input keys, which
    never equals a flat one (its items are tuples, never dtypes)."""
    T = _Tensor
    if not kwargs:
        n = len(args)
        if n == 2 and type(args[0]) is T and type(args[1]) is T:
            a, b = args
            return (a.dtype, a.shape, b.dtype, b.shape)
        if n == 1 and type(args[0]) is T:
            a = args[0]
            return (a.dtype, a.shape)
        return tuple([_key(a) for a in args])
    return (tuple([_key(a) for a in args]), tuple([(k, _key(v)) for k, v in kwargs.items()]))


def _key(o):
    """A cheap hashable signature of one input: shapes and dtypes of tensors, values of constants."""
    if isinstance(o, _Tensor):
        return (o.dtype, o.shape)
    t = type(o)
    if t is tuple or t is list:
        return (t, tuple([_key(x) for x in o]))
    if t is dict:
        return (t, tuple([(k, _key(v)) for k, v in o.items()]))
    if o is None or t is bool or t is int or t is float or t is str:
        return (t, o)
    if isinstance(o, tuple) and hasattr(t, "_fields"):
        return (t, tuple([_key(x) for x in o]))
    return (t,)


def _flatten(o, tensors: list, consts: list):
    """The structure of one input as a hashable tree; tensors and constants are appended in order."""
    if isinstance(o, _Tensor):
        tensors.append(o)
        return ("T",)
    t = type(o)
    if t is tuple or t is list:
        return (t.__name__, tuple(_flatten(x, tensors, consts) for x in o))
    if t is dict and all(type(k) in (str, int) for k in o):
        return ("dict", tuple((k, _flatten(v, tensors, consts)) for k, v in o.items()))
    if isinstance(o, tuple) and hasattr(t, "_fields"):
        return ("namedtuple", f"{t.__module__}.{t.__qualname__}", tuple(t._fields), tuple(_flatten(x, tensors, consts) for x in o))
    if o is None or t in (bool, int, float, str):
        consts.append(o)
        return ("C", t.__name__ if o is not None else "None")
    return ("O", f"{t.__module__}.{t.__qualname__}")


def _plain(node) -> bool:
    """True when the structure holds only tensors, constants, tuples, lists and dicts (savable)."""
    kind = node[0]
    if kind in ("T", "C"):
        return True
    if kind in ("tuple", "list"):
        return all(_plain(x) for x in node[1])
    if kind == "dict":
        return all(_plain(v) for _, v in node[1])
    return False


def _tree_json(node):
    kind = node[0]
    if kind == "T":
        return {"tensor": None}
    if kind in ("tuple", "list"):
        return {kind: [_tree_json(x) for x in node[1]]}
    if kind == "dict":
        return {"dict": [[k, _tree_json(v)] for k, v in node[1]]}
    if kind == "namedtuple":
        return {"namedtuple": node[1], "fields": list(node[2]), "items": [_tree_json(x) for x in node[3]]}
    if kind == "C":
        return {"const": node[1]}
    return {"other": node[1]}


def _numbered(tree, counters):
    """JSON tree with tensor and constant leaves numbered in flatten order."""
    if "tensor" in tree:
        counters[0] += 1
        return {"tensor": counters[0] - 1}
    if "const" in tree:
        counters[1] += 1
        return {"const": counters[1] - 1, "type": tree["const"]}
    for kind in ("tuple", "list"):
        if kind in tree:
            return {kind: [_numbered(x, counters) for x in tree[kind]]}
    if "dict" in tree:
        return {"dict": [[k, _numbered(v, counters)] for k, v in tree["dict"]]}
    if "namedtuple" in tree:
        return {**tree, "items": [_numbered(x, counters) for x in tree["items"]]}
    return tree


def _dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def _value_ranges(tensors, int_leaves) -> list:
    out = []
    for i in int_leaves:
        t = tensors[i]
        if t.numel() == 0 or t.is_meta or (type(t) is not _Tensor and not isinstance(t, _torch.nn.Parameter)):
            continue
        try:
            lo, hi = _torch.aminmax(t.detach())
        except RuntimeError:  # a dtype without aminmax: no range
            continue
        out.append((i, int(lo), int(hi)))
    return out


def _clone(o):
    if isinstance(o, _Tensor):
        return o.detach().to("cpu", copy=True)
    t = type(o)
    if t is tuple or t is list:
        return t(_clone(x) for x in o)
    if t is dict:
        return {k: _clone(v) for k, v in o.items()}
    return o


class _Shape:
    """One cached input signature of a method: its variant, its shapes and how often it was seen."""

    __slots__ = ("count", "variant", "value_calls", "dims")

    def __init__(self, variant, dims) -> None:
        self.count = 0
        self.variant = variant
        self.value_calls = 0
        self.dims = dims


class _Pending:
    __slots__ = ("key", "shape", "variant_key", "skeleton", "metas", "consts", "values", "sample", "sizes")


class _Variant:
    def __init__(self, skeleton, metas, consts) -> None:
        counters = [0, 0]
        self.tree = _numbered(_tree_json(skeleton), counters)
        self.dtypes = [m[0] for m in metas]
        self.dims = [[[s, s, {s}, False] for s in m[1]] for m in metas]  # min, max, sizes, more
        self.devices = [{m[2]} for m in metas]
        self.int_leaves = [i for i, m in enumerate(metas) if m[0] in _INTEGER_DTYPES]
        self.values: dict[int, list] = {}
        self.consts = [[type(c).__name__ if c is not None else "None", [], False] for c in consts]
        self.calls = 0
        self.classes = None  # partition of (tensor, dim) by "always the same size"
        self.shapes: set = set()  # distinct shapes seen (up to MAX_SHAPE_KEYS)
        self.more_shapes = 0

    def add_shape(self, metas, consts) -> None:
        sizes = {}
        for i, m in enumerate(metas):
            if m[2] not in self.devices[i]:
                self.devices[i].add(m[2])
            for d, s in enumerate(m[1]):
                dim = self.dims[i][d]
                if s < dim[0]:
                    dim[0] = s
                if s > dim[1]:
                    dim[1] = s
                if s not in dim[2]:
                    if len(dim[2]) < MAX_SIZES:
                        dim[2].add(s)
                    else:
                        dim[3] = True
                sizes[(i, d)] = s
        if self.classes is None:
            groups: dict[int, list] = {}
            for member, s in sizes.items():
                groups.setdefault(s, []).append(member)
            self.classes = list(groups.values())
        else:
            refined = []
            for members in self.classes:
                if len(members) == 1:
                    refined.append(members)
                    continue
                groups = {}
                for member in members:
                    groups.setdefault(sizes[member], []).append(member)
                refined.extend(groups.values())
            self.classes = refined
        for j, c in enumerate(consts):
            entry = self.consts[j]
            if c not in entry[1]:
                if len(entry[1]) < MAX_CONST_VALUES and (c is None or type(c) in (bool, int, float, str)):
                    entry[1].append(c)
                else:
                    entry[2] = True
        shape = tuple(m[1] for m in metas)
        if shape in self.shapes:
            pass
        elif len(self.shapes) < MAX_SHAPE_KEYS:
            self.shapes.add(shape)
        else:
            self.more_shapes += 1

    def add_values(self, values) -> bool:
        """Widen the integer value ranges; True when one changed."""
        changed = False
        for i, lo, hi in values:
            r = self.values.get(i)
            if r is None:
                self.values[i] = [lo, hi]
                changed = True
                continue
            if lo < r[0]:
                r[0] = lo
                changed = True
            if hi > r[1]:
                r[1] = hi
                changed = True
        return changed

    def to_json(self, shape_counts: dict) -> dict:
        return {
            "args": self.tree["tuple"][0],
            "kwargs": self.tree["tuple"][1],
            "calls": self.calls,
            "tensors": [
                {
                    "dtype": self.dtypes[i],
                    "dims": [{"min": d[0], "max": d[1], "sizes": sorted(d[2]), "more_sizes": d[3]} for d in self.dims[i]],
                    "values": self.values.get(i),
                    "devices": sorted(self.devices[i]),
                }
                for i in range(len(self.dtypes))
            ],
            "consts": [{"type": c[0], "values": list(c[1]), "more_values": c[2]} for c in self.consts],
            "classes": [[list(m) for m in members] for members in (self.classes or [])],
            "shapes": [
                [[list(s) for s in shape], shape_counts.get(shape, 0)]
                for shape in sorted(self.shapes, key=lambda s: (-shape_counts.get(s, 0), s))
            ],
            "more_shapes": self.more_shapes,
        }


class _Method:
    def __init__(self, site: "_Site", name: str, arg_names) -> None:
        self.site = site
        self.name = name
        self.arg_names = list(arg_names or [])
        self.reset()

    def reset(self) -> None:
        self.calls = 0
        self.examples = 0
        self.uncached = 0
        self.dropped = 0  # calls whose structure was past MAX_VARIANTS
        self.shapes: dict = {}
        self.variants: dict = {}
        self.samples: list = []

    def before(self, args, kwargs):
        key = _call_key(args, kwargs)
        shape = self.shapes.get(key)
        if shape is not None:
            variant = shape.variant
            if variant.int_leaves:
                n = shape.value_calls
                shape.value_calls = n + 1
                if n < VALUE_RANGE_FIRST or n % VALUE_RANGE_EVERY == 0:
                    tensors: list = []
                    _flatten((args, kwargs), tensors, [])
                    return (shape, _value_ranges(tensors, variant.int_leaves))
            return shape
        return self._novel(key, args, kwargs)

    def _novel(self, key, args, kwargs):
        tensors: list = []
        consts: list = []
        skeleton = _flatten((args, kwargs), tensors, consts)
        metas = [(_dtype_name(t.dtype), tuple(int(s) for s in t.shape), t.device.type) for t in tensors]
        p = _Pending()
        p.key = key
        p.shape = None
        p.variant_key = (skeleton, tuple((m[0], len(m[1])) for m in metas))
        p.skeleton = skeleton
        p.metas = metas
        p.consts = consts
        ints = [i for i, m in enumerate(metas) if m[0] in _INTEGER_DTYPES]
        p.values = _value_ranges(tensors, ints) if ints else []
        p.sample = None
        if (
            len(self.samples) < MAX_SAMPLES
            and _state["sample_bytes"] < MAX_PROCESS_SAMPLE_BYTES
            and _plain(skeleton)
        ):
            nbytes = sum(t.numel() * t.element_size() for t in tensors)
            shapes = tuple(m[1] for m in metas)
            if nbytes <= MAX_SAMPLE_BYTES and shapes not in {s["shapes"] for s in self.samples}:
                p.sample = (_clone(tuple(args)), _clone(dict(kwargs)), nbytes, shapes)
        return p

    def commit(self, p) -> None:
        if type(p) is _Shape:  # the hot path: a signature seen before
            p.count += 1
            p.variant.calls += 1
            self.calls += 1
            _flush_soon()
            return
        if type(p) is tuple:  # a signature seen before, with sampled integer value ranges
            shape, values = p
            shape.count += 1
            shape.variant.calls += 1
            self.calls += 1
            shape.variant.add_values(values)  # a wider value range is written within FLUSH_SECONDS
            _flush_soon()
            return
        with _lock:
            self.calls += 1
            variant = self.variants.get(p.variant_key)
            if variant is None:
                if len(self.variants) >= MAX_VARIANTS:
                    self.dropped += 1
                    _flush_soon()
                    return
                variant = self.variants[p.variant_key] = _Variant(p.skeleton, p.metas, p.consts)
            variant.calls += 1
            variant.add_shape(p.metas, p.consts)
            variant.add_values(p.values)
            if len(self.shapes) < MAX_SHAPE_KEYS:
                entry = self.shapes[p.key] = _Shape(variant, tuple(m[1] for m in p.metas))
                entry.count = 1
                entry.value_calls = 1
            else:
                self.uncached += 1
            if p.sample is not None:
                self._save_sample(p, list(self.variants).index(p.variant_key))
        _flush_soon(novel=True)

    def _save_sample(self, p, variant_index: int) -> None:
        args, kwargs, nbytes, shapes = p.sample
        name = f"sample-{_state['nonce']}-{_state['samples']}.pt"
        _state["samples"] += 1
        path = os.path.join(_dir, name)
        tmp = path + ".tmp"
        _torch.save((args, kwargs), tmp)
        os.replace(tmp, path)
        _state["sample_bytes"] += nbytes
        self.samples.append({"file": name, "variant": variant_index, "shapes": shapes, "bytes": nbytes})

    def to_json(self) -> dict:
        counts: dict = {}
        for shape in self.shapes.values():
            per = counts.setdefault(id(shape.variant), {})
            per[shape.dims] = per.get(shape.dims, 0) + shape.count
        return {
            "arg_names": self.arg_names,
            "calls": self.calls,
            "trace_examples": self.examples,
            "uncached_calls": self.uncached,
            "dropped_calls": self.dropped,
            "variants": [v.to_json(counts.get(id(v), {})) for v in self.variants.values()],
            "samples": [{**s, "shapes": [list(x) for x in s["shapes"]]} for s in self.samples],
        }


class _Site:
    def __init__(self, kind, file, line, end_line, col, end_col, function, target) -> None:
        self.kind = kind
        self.file = file
        self.line = line
        self.end_line = end_line
        self.col = col
        self.end_col = end_col
        self.function = function
        self.target = target
        self.created = 0
        self.artifacts: list = []  # paths loaded here
        self.saved: list = []  # paths the objects made here were saved to
        self.methods: dict[str, _Method] = {}

    def method(self, name: str, arg_names=None) -> _Method:
        m = self.methods.get(name)
        if m is None:
            m = self.methods[name] = _Method(self, name, arg_names)
        elif arg_names and not m.arg_names:
            m.arg_names = list(arg_names)
        return m

    def reset(self) -> None:
        self.created = 0
        self.artifacts = []
        self.saved = []
        for m in self.methods.values():
            m.reset()

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "file": self.file,
            "line": self.line,
            "end_line": self.end_line,
            "col": self.col,
            "end_col": self.end_col,
            "function": self.function,
            "target": self.target,
            "created": self.created,
            "artifacts": list(self.artifacts),
            "saved": list(self.saved),
            "methods": {name: m.to_json() for name, m in self.methods.items()},
        }


# ---- writing the shard ---------------------------------------------------------------------------------


def _flush_soon(novel: bool = False) -> None:
    _state["dirty"] = True
    now = time.monotonic()
    if novel and _state["novel_flushes"] < NOVEL_FLUSHES:
        _state["novel_flushes"] += 1
        _flush()
    elif now - _state["last"] >= FLUSH_SECONDS:
        _flush()


def _flush(final: bool = False) -> None:
    """Write this process's snapshot (atomically replacing the previous one) when it changed.
    A forked worker that recorded nothing writes no shard."""
    if _dir is None or _state["flushing"] or not _state["dirty"]:
        return
    if not _sites and not _state["errors"]:
        return
    _state["flushing"] = True
    try:
        with _lock:
            snapshot = {
                "format": "ts2export-record-shard",
                "version": 1,
                "pid": os.getpid(),
                "ppid": os.getppid(),
                "argv": list(getattr(sys, "argv", []))[:32],
                "cwd": os.getcwd(),
                "torch": getattr(_torch, "__version__", None),
                "final": final,
                "errors": _state["errors"],
                "error": _state["error"],
                "sites": [s.to_json() for s in _sites.values()],
            }
            _state["dirty"] = False
            _state["last"] = time.monotonic()
        data = json.dumps(snapshot, separators=(",", ":"))
        path = os.path.join(_dir, f"shard-{_state['nonce']}.json")
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except Exception as exc:  # the folder may be gone (the recorder ended first): stay silent
        _state["errors"] += 1
        if _state["error"] is None:
            _state["error"] = f"{type(exc).__name__}: {exc}"[:300]
    finally:
        _state["flushing"] = False


def _after_fork() -> None:
    """In a forked child: keep what is registered, drop the parent's counts, start a new shard."""
    global _lock
    _lock = threading.RLock()
    _new_nonce()
    _state.update(dirty=False, last=time.monotonic(), novel_flushes=0, sample_bytes=0, samples=0,
                  flushing=False, errors=0, error=None)
    for site in _sites.values():
        site.reset()
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is not None and _sites:
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
        mp_util.Finalize(None, _flush, args=(True,), exitpriority=-100)


def _on_sigterm(signum, frame) -> None:
    import signal

    _flush(True)
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
