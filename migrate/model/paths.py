"""The artifact paths an expression may evaluate to, as patterns (:mod:`.pathpattern`): literals,
f-strings, ``+``, ``%`` and ``.format``, ``os.path.join`` and pathlib, ``str(...)``, and every
value a name or parameter is bound to."""

from __future__ import annotations

import ast
import re

from ts2export.model import pathpattern as ap
from ts2export.model.memo import MAX_DEPTH
from ts2export.model.names import Names
from ts2export.model.pyfile import PyFile
from ts2export.model.values import UNKNOWN, Values


class Paths:
    def __init__(self, names: Names, values: Values) -> None:
        self.names = names
        self.values = values
        self._patterns: dict[tuple[int, int], list] = {}  # (id(node), depth) -> patterns's answer

    def patterns(self, f: PyFile, node: ast.AST | None, depth: int = 0) -> list[ap.Pattern]:
        """The path patterns an expression may evaluate to."""
        if node is None or depth > MAX_DEPTH:
            return [(ap.ANY,)]
        key = (id(node), depth)
        if key not in self._patterns:
            self._patterns[key] = self._find_patterns(f, node, depth)
        return list(self._patterns[key])

    def _find_patterns(self, f: PyFile, node: ast.AST, depth: int) -> list[ap.Pattern]:
        out: list[ap.Pattern] = []
        for value in self.values.values(f, node, depth):
            if value is UNKNOWN or value[0] in ("def", "annotated"):
                out.append((ap.ANY,))
            else:
                out.extend(self._pattern_of(value[0], value[1], depth + 1))
            if len(out) > ap.MAX_ALTERNATIVES:
                return [(ap.ANY,)]
        return list(dict.fromkeys(out)) or [(ap.ANY,)]

    def _product(self, f: PyFile, parts: list, depth: int, combine) -> list[ap.Pattern]:
        options: list[list[ap.Pattern]] = []
        for part in parts:
            options.append([(part,)] if isinstance(part, str) else self.patterns(f, part, depth))
        results: list[list[ap.Pattern]] = [[]]
        for opts in options:
            results = [r + [o] for r in results for o in opts]
            if len(results) > ap.MAX_ALTERNATIVES:
                return [(ap.ANY,)]
        return [combine(r) for r in results]

    def _pattern_of(self, f: PyFile, node: ast.AST, depth: int) -> list[ap.Pattern]:
        if isinstance(node, ast.Constant):
            return [(node.value,)] if isinstance(node.value, str) else [(ap.ANY,)]
        if isinstance(node, ast.JoinedStr):
            parts = [v.value if isinstance(v, ast.Constant) else v.value for v in node.values]
            return self._product(f, parts, depth, lambda ps: ap.concat(*ps))
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Add):
                return self._product(f, [node.left, node.right], depth, lambda ps: ap.concat(*ps))
            if isinstance(node.op, ast.Div):
                return self._product(f, [node.left, node.right], depth, ap.join)
            if isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
                return [ap.normalize(tuple(ap.ANY if i % 2 else p for i, p in enumerate(re.split(r"(%[-#0 +]*\d*(?:\.\d+)?[sdrifgx])", node.left.value))))]
            return [(ap.ANY,)]
        if isinstance(node, ast.Call):
            return self._call_pattern(f, node, depth)
        return [(ap.ANY,)]

    def _call_pattern(self, f: PyFile, node: ast.Call, depth: int) -> list[ap.Pattern]:
        name = self.names.qualified(f, node.func) or ""
        args = list(node.args)
        if name in ("os.path.join", "posixpath.join", "ntpath.join", "pathlib.Path", "pathlib.PurePath",
                    "pathlib.PosixPath", "pathlib.PurePosixPath") and args and not node.keywords:
            return self._product(f, args, depth, ap.join)
        if name in ("builtins.str", "os.fspath", "os.path.abspath", "os.path.realpath", "os.path.normpath",
                    "os.path.expanduser", "builtins.open") and args:
            return self.patterns(f, args[0], depth)
        if name in ("io.BytesIO", "io.StringIO"):
            if not self._buffer_stays(f, node):
                return [(ap.ANY,)]  # its bytes go somewhere (a file, an upload, a caller): any path
            if args or node.keywords:  # the bytes of another buffer (`io.BytesIO(buffer.getvalue())`) are that buffer;
                inner = self.patterns(f, args[0], depth) if args else []  # other bytes may come from any file
                return inner if inner and all(ap.is_buffer(p) for p in inner) else [(ap.ANY,)]
            return [ap.buffer(f"{f.path}:{node.lineno}:{node.col_offset}")]
        if isinstance(node.func, ast.Attribute):
            method = node.func.attr
            receiver = node.func.value
            if method == "format" and isinstance(receiver, ast.Constant) and isinstance(receiver.value, str):
                return [ap.normalize(tuple(ap.ANY if i % 2 else p for i, p in enumerate(re.split(r"(\{[^{}]*\})", receiver.value))))]
            if method == "joinpath":
                return self._product(f, [receiver, *args], depth, ap.join)
            if method in ("getvalue", "getbuffer") and not args:  # a buffer's bytes: known by the buffer
                return [p for p in self.patterns(f, receiver, depth) if ap.is_buffer(p)] or [(ap.ANY,)]
            if method in ("resolve", "absolute", "expanduser", "as_posix", "__fspath__"):
                return self.patterns(f, receiver, depth)
            if method == "with_suffix" and args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
                return [(ap.ANY, args[0].value)]
            if method == "with_name" and args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
                return [(ap.ANY, "/" + args[0].value)]
        return [(ap.ANY,)]

    def _buffer_stays(self, f: PyFile, call: ast.Call) -> bool:
        """Whether an in-memory buffer is only written and read back by torch in sight: bound to a
        name (``buf = io.BytesIO()``, ``with io.BytesIO() as buf``) whose every use is an argument
        of a torch call or of a ``.save``, a ``.seek``/``.tell``/``.close``, or ``buf.getvalue()``
        made into another buffer. Anything else (``fh.write(buf.getvalue())``, an upload, a return)
        lets its bytes reach a file some reader may open, so it matches any path."""
        scope = f.scope_at(call).node
        parents = {id(child): parent for parent in ast.walk(scope) for child in ast.iter_child_nodes(parent)}
        holder = parents.get(id(call))
        if isinstance(holder, ast.Assign) and len(holder.targets) == 1 and isinstance(holder.targets[0], ast.Name):
            name = holder.targets[0].id
        elif isinstance(holder, ast.withitem) and isinstance(holder.optional_vars, ast.Name):
            name = holder.optional_vars.id
        else:
            return isinstance(holder, (ast.Call, ast.keyword)) and self._torch_call(f, holder, parents)
        for ref in ast.walk(scope):
            if not (isinstance(ref, ast.Name) and ref.id == name and isinstance(ref.ctx, ast.Load)):
                continue
            parent = parents.get(id(ref))
            if isinstance(parent, (ast.Call, ast.keyword)) and self._torch_call(f, parent, parents):
                continue
            if isinstance(parent, ast.Attribute) and parent.attr in ("seek", "tell", "close"):
                continue
            if isinstance(parent, ast.Attribute) and parent.attr == "getvalue":
                made = parents.get(id(parents.get(id(parent))))  # io.BytesIO(buf.getvalue())
                if isinstance(made, ast.Call) and self.names.qualified(f, made.func) == "io.BytesIO":
                    continue
            return False
        return True

    def _torch_call(self, f: PyFile, node: ast.AST, parents: dict) -> bool:
        """Whether ``node`` (a call the buffer is an argument of, or a keyword of one) is torch's own
        save or load, or a ``.save`` method (``scripted.save(buf)``)."""
        call = parents.get(id(node)) if isinstance(node, ast.keyword) else node
        if not isinstance(call, ast.Call) or call.func is node:
            return False
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in ("save", "_save_for_lite_interpreter"):
            return True
        return (self.names.qualified(f, func) or "").startswith("torch.")

