from __future__ import annotations

import libcst as cst
from libcst.metadata import BuiltinAssignment, ScopeProvider

from ts2export.rule import Applicability, Edit, Invalid, Rule, Valid

_FORK = ("torch.jit.fork", "torch.jit._fork")
_WAIT = ("torch.jit.wait", "torch.jit._wait")
_WAIT_ALL = ("torch.futures.wait_all",)
_FUTURE = ("torch.jit.Future", "torch.futures.Future", "torch.Future")
_ATOMIC = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


class JitForkWait(Rule):
    """
    ## What it does
    Replaces `torch.jit.fork(fn, *args, **kwargs)` with the direct call `fn(*args, **kwargs)` and
    `torch.jit.wait(fut)` (or `fut.wait()`) with `fut`, where every use of the future is visible
    in the same function: `torch.jit.wait(torch.jit.fork(...))`, a name bound to a fork and
    only waited on, or a list of forks (a list display or comprehension, or `[]` filled with
    `.append(torch.jit.fork(...))`) that is only iterated to wait on each element or passed to
    `torch.futures.wait_all`. A `Future[T]` annotation on such a name becomes `T`.

    ## Why
    `torch.jit.fork` started a task on TorchScript's inter-op thread pool; outside TorchScript it
    runs the function at once and returns an already completed `torch.futures.Future`.
    `torch.export` cannot capture a fork in strict mode ("Attempted to call function marked as
    skipped") and ExecuTorch has no futures; the direct call exports cleanly.

    ## Example
    ```python
    futures = [torch.jit.fork(head, x) for head in self.heads]
    outs = [torch.jit.wait(f) for f in futures]
    ```
    becomes
    ```python
    futures = [head(x) for head in self.heads]
    outs = list(futures)
    ```

    ## Fix safety
    Safe for eager Python, `torch.compile` and `torch.export`: there `torch.jit.fork` calls the
    function synchronously (an exception raises at the fork, as it now does at the call) and
    `wait` returns the value (checked on torch 2.13). Under TorchScript -- a module that is still
    scripted -- the forked calls now run one after the other instead of in parallel: the results
    are the same, the time may be longer, and an exception in the task surfaces at the call
    instead of at the `wait`. A future used in any other way (`.then`, `.done()`, passed to
    another function, returned) is reported, not rewritten: give the function the value instead
    of the future and rewrite by hand.

    It keeps TorchScript and traces working: a direct call computes what the fork did
    (tests/test_keeps_torchscript.py).
    """

    id = "TSX503"
    summary = "`torch.jit.fork(fn, ...)` / `torch.jit.wait(fut)` become `fn(...)` / the value"
    applicability = Applicability.SAFE
    keeps_torchscript = True
    keeps_tracing = True
    blocks_export = True

    VALID = [
        Valid("import torch\ny = torch.relu(torch.ones(2))\n"),
        Valid("import concurrent.futures as cf\nwith cf.ThreadPoolExecutor() as ex:\n    f = ex.submit(print, 1)\n    f.result()\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\ndef f(x):\n    fut = torch.jit.fork(torch.relu, x)\n    y = x * 2\n"
            "    return torch.jit.wait(fut) + y\n",
            "import torch\n\n\ndef f(x):\n    fut = torch.relu(x)\n    y = x * 2\n    return fut + y\n",
            count=2,
        ),
        Invalid(
            "import torch\nfrom typing import List\n\n\ndef f(heads: List[torch.nn.Module], x):\n"
            "    futures = [torch.jit.fork(h, x, scale=2) for h in heads]\n"
            "    return [torch.jit.wait(fu) for fu in futures]\n",
            "import torch\nfrom typing import List\n\n\ndef f(heads: List[torch.nn.Module], x):\n"
            "    futures = [h(x, scale=2) for h in heads]\n    return list(futures)\n",
            count=2,
        ),
        Invalid(
            "import torch\nfrom typing import List\n\n\ndef f(x):\n"
            "    futs: List[torch.jit.Future[torch.Tensor]] = []\n"
            "    for k in range(3):\n        futs.append(torch.jit.fork(torch.add, x, k))\n"
            "    out = []\n    for fu in futs:\n        out.append(fu.wait())\n    return out\n",
            "import torch\nfrom typing import List\n\n\ndef f(x):\n"
            "    futs: List[torch.Tensor] = []\n"
            "    for k in range(3):\n        futs.append(torch.add(x, k))\n"
            "    out = []\n    for fu in futs:\n        out.append(fu)\n    return out\n",
            count=1,
        ),
        Invalid(
            "\"\"\"Docstring.\"\"\"\nfrom torch.jit import fork, wait\n\n\ndef f(x):\n    return wait(fork(lambda t: t + 1, x))\n",
            "\"\"\"Docstring.\"\"\"\n\n\ndef f(x):\n    return (lambda t: t + 1)(x)\n",
            count=1,
        ),
        Invalid(
            "import torch\n\n\ndef f(x):\n    futs = [torch.jit.fork(torch.neg, x), torch.jit.fork(torch.abs, x)]\n"
            "    return torch.futures.wait_all(futs)\n",
            "import torch\n\n\ndef f(x):\n    futs = [torch.neg(x), torch.abs(x)]\n    return futs\n",
            count=2,
        ),
        # The future escapes (returned): reported, not rewritten.
        Invalid("import torch\n\n\ndef f(x):\n    fut = torch.jit.fork(torch.relu, x)\n    return fut\n", count=1),
    ]

    # -- helpers --------------------------------------------------------------------------
    def _is_call_of(self, node: cst.CSTNode | None, names: tuple[str, ...]) -> bool:
        return isinstance(node, cst.Call) and bool(self.matches(node.func, *names))

    def _direct_call(self, fork: cst.Call) -> cst.Call | None:
        args = list(fork.args)
        if not args or args[0].keyword is not None or args[0].star:
            return None
        fn = args[0].value
        if not isinstance(fn, _ATOMIC) and not fn.lpar:
            fn = fn.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        rest = args[1:]
        if rest:
            rest[-1] = rest[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return cst.Call(func=fn, args=rest, lpar=fork.lpar, rpar=fork.rpar)

    def _sole_arg(self, call: cst.Call) -> cst.BaseExpression | None:
        if len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star:
            return call.args[0].value
        return None

    def _scope(self, node: cst.CSTNode):
        return self.get_metadata(ScopeProvider, node, None)

    def _value_wait(self, name: cst.Name) -> cst.CSTNode | None:
        """The expression that waits on ``name`` (``wait(name)`` / ``name.wait()``), else None."""
        parent = self.parent(name)
        if isinstance(parent, cst.Arg):
            call = self.parent(parent)
            if self._is_call_of(call, _WAIT) and self._sole_arg(call) is name:
                return call
        if isinstance(parent, cst.Attribute) and parent.value is name and parent.attr.value == "wait":
            call = self.parent(parent)
            if isinstance(call, cst.Call) and call.func is parent and not call.args:
                return call
        return None

    def _future_annotation(self, ann: cst.BaseExpression, in_list: bool) -> list[Edit] | None:
        """Edits turning ``Future[T]`` (or ``List[Future[T]]`` where ``in_list``) into ``T``; [] if no Future in it."""
        node = ann
        if in_list and isinstance(node, cst.Subscript) and len(node.slice) == 1:
            inner = node.slice[0].slice
            node = inner.value if isinstance(inner, cst.Index) else node
        if isinstance(node, cst.Subscript) and self.matches(node.value, *_FUTURE):
            if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
                return [Edit(node, node.slice[0].slice.value)]
            return None
        if self.matches(node, *_FUTURE):
            return None
        return []

    def _accesses(self, scope, name: str) -> list:
        """Every read of ``name`` bound in ``scope``, nested functions and comprehensions included."""
        found = {id(a.node): a for a in scope.accesses[name]}
        for assignment in scope.assignments[name]:
            for ref in getattr(assignment, "references", ()):
                found.setdefault(id(ref.node), ref)
        return self.in_source_order(found.values(), node_of=lambda a: a.node)

    # -- plans ----------------------------------------------------------------------------
    def _bound_value(self, target: cst.CSTNode, edits: list[Edit], in_list: bool) -> cst.BaseExpression | None:
        """The value bound to ``target`` by `x = v` or `x: Future[T] = v` (the annotation's rewrite
        is added to ``edits``); None for any other binding."""
        owner = self.parent(target)
        if isinstance(owner, cst.AssignTarget):
            stmt = self.parent(owner)
            if not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1:
                return None
            return stmt.value
        if isinstance(owner, cst.AnnAssign) and owner.target is target and owner.value is not None:
            ann = self._future_annotation(owner.annotation.annotation, in_list=in_list)
            if ann is None:
                return None
            edits += ann
            return owner.value
        return None

    def _plan_value(self, scope, name: str) -> list[Edit] | None:
        """Edits for a name that holds one future at a time: bound to forks, only waited on."""
        if scope is None or not scope.assignments[name]:
            return None
        edits: list[Edit] = []
        for a in scope.assignments[name]:
            value = self._bound_value(a.node, edits, in_list=False)
            if value is None or not self._is_call_of(value, _FORK):
                return None
            call = self._direct_call(value)
            if call is None:
                return None
            edits.append(Edit(value, call))
        for access in self._accesses(scope, name):
            if not isinstance(access.node, cst.Name):
                return None
            waiter = self._value_wait(access.node)
            if waiter is None:
                return None
            edits.append(Edit(waiter, access.node))
        return edits

    def _plan_list(self, scope, name: str) -> list[Edit] | None:
        """Edits for a name that holds a list of futures: filled with forks, iterated to wait."""
        if scope is None or not scope.assignments[name]:
            return None
        edits: list[Edit] = []
        forks: list[cst.Call] = []
        for a in scope.assignments[name]:
            value = self._bound_value(a.node, edits, in_list=True)
            if value is None:
                return None
            if isinstance(value, cst.ListComp) and self._is_call_of(value.elt, _FORK):
                forks.append(value.elt)
            elif isinstance(value, cst.List) and all(
                isinstance(e, cst.Element) and self._is_call_of(e.value, _FORK) for e in value.elements
            ):
                forks += [e.value for e in value.elements]
            else:
                return None
        for access in self._accesses(scope, name):
            node = access.node
            if not isinstance(node, cst.Name):
                return None
            parent = self.parent(node)
            grand = self.parent(parent) if parent is not None else None
            if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value == "append" \
                    and isinstance(grand, cst.Call) and grand.func is parent:
                item = self._sole_arg(grand)
                if not self._is_call_of(item, _FORK):
                    return None
                forks.append(item)
            elif isinstance(parent, cst.CompFor) and parent.iter is node and self._waits_all(parent):
                # `[torch.jit.wait(f) for f in futures]` is a copy of the list of values
                comp = self.parent(parent)
                copy = cst.Call(func=cst.Name("list"), args=[cst.Arg(node)], lpar=comp.lpar, rpar=comp.rpar)
                edits.append(Edit(comp, copy))
            elif isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is node and isinstance(parent.target, cst.Name):
                scope_t = self._scope(parent.target) if isinstance(parent, cst.For) else self._scope(parent.target)
                sub = self._plan_element(scope_t, parent.target.value)
                if sub is None:
                    return None
                edits += sub
            elif isinstance(parent, cst.Arg) and self._is_call_of(grand, _WAIT_ALL) and self._sole_arg(grand) is node:
                edits.append(Edit(grand, node))
            else:
                return None
        for fork in forks:
            call = self._direct_call(fork)
            if call is None:
                return None
            edits.append(Edit(fork, call))
        return edits

    def _waits_all(self, comp_for: cst.CompFor) -> bool:
        """``comp_for`` is the only clause of ``[wait(t) for t in xs]`` (or ``[t.wait() for t in xs]``)."""
        comp = self.parent(comp_for)
        target = comp_for.target
        if not (isinstance(comp, cst.ListComp) and comp.for_in is comp_for and isinstance(target, cst.Name)):
            return False
        if comp_for.ifs or comp_for.inner_for_in is not None or comp_for.asynchronous is not None:
            return False
        elt = comp.elt
        if self._is_call_of(elt, _WAIT):
            arg = self._sole_arg(elt)
        elif isinstance(elt, cst.Call) and not elt.args and isinstance(elt.func, cst.Attribute) \
                and elt.func.attr.value == "wait":
            arg = elt.func.value
        else:
            return False
        if not (isinstance(arg, cst.Name) and arg.value == target.value):
            return False
        scope = self._scope(comp)
        return scope is not None and all(isinstance(a, BuiltinAssignment) for a in scope["list"])

    def _plan_element(self, scope, name: str) -> list[Edit] | None:
        """Edits for a loop variable over a list of futures: only assigned by such loops, only waited on."""
        if scope is None:
            return None
        for a in scope.assignments[name]:
            owner = self.parent(a.node)
            if not isinstance(owner, (cst.For, cst.CompFor)) or owner.target is not a.node:
                return None
        edits = []
        for access in self._accesses(scope, name):
            waiter = self._value_wait(access.node) if isinstance(access.node, cst.Name) else None
            if waiter is None:
                return None
            edits.append(Edit(waiter, access.node))
        return edits

    def _bound_name(self, fork: cst.Call) -> tuple[str, str, cst.Name] | None:
        """(kind, name, name node) of the variable a fork call's future is stored in."""
        parent = self.parent(fork)
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
            return "value", parent.targets[0].target.value, parent.targets[0].target
        if isinstance(parent, cst.AnnAssign) and isinstance(parent.target, cst.Name):
            return "value", parent.target.value, parent.target
        if isinstance(parent, cst.ListComp) and parent.elt is fork:
            parent = self.parent(parent)
        elif isinstance(parent, cst.Element):
            parent = self.parent(self.parent(parent))
        elif isinstance(parent, cst.Arg):
            call = self.parent(parent)
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) \
                    and call.func.attr.value == "append" and isinstance(call.func.value, cst.Name):
                return "list", call.func.value.value, call.func.value
            return None
        else:
            return None
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
            return "list", parent.targets[0].target.value, parent.targets[0].target
        if isinstance(parent, cst.AnnAssign) and isinstance(parent.target, cst.Name):
            return "list", parent.target.value, parent.target
        return None

    def _plan_for(self, fork: cst.Call) -> list[Edit] | None:
        bound = self._bound_name(fork)
        if bound is None:
            return None
        kind, name, node = bound
        scope = self._scope(node)
        return self._plan_value(scope, name) if kind == "value" else self._plan_list(scope, name)

    # -- visiting -------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        if self._is_call_of(node, _FORK):
            parent = self.parent(node)
            if isinstance(parent, cst.Arg) and self._is_call_of(self.parent(parent), _WAIT):
                return  # reported with its wait
            edits = self._plan_for(node)
            if edits:
                self.report(node, "`torch.jit.fork(fn, ...)` runs `fn` synchronously outside TorchScript; call "
                            "`fn(...)` directly and use the value instead of the future", edits=edits)
            else:
                self.report(node, "`torch.jit.fork(fn, ...)`: the future is used in a way ts2export cannot follow "
                            "(returned, passed on, `.then`/`.done`); call `fn(...)` directly and pass the value instead "
                            "of the future, then drop the matching `torch.jit.wait`")
            return
        if self._is_call_of(node, _WAIT):
            arg = self._sole_arg(node)
            edits = None
            if self._is_call_of(arg, _FORK):
                call = self._direct_call(arg)
                if call is not None:
                    edits = [Edit(node, call)]
            elif isinstance(arg, cst.Name):
                edits = self._wait_plan(arg)
            if edits:
                self.report(node, "`torch.jit.wait(fut)`: once its `torch.jit.fork` is a direct call the value is "
                            "there already; use it", edits=edits)
            else:
                self.report(node, "`torch.jit.wait(fut)`: ts2export cannot follow every use of this future; make its "
                            "producer call the function directly (no `torch.jit.fork`) and use the value instead of waiting")

    def _wait_plan(self, name: cst.Name) -> list[Edit] | None:
        scope = self._scope(name)
        if scope is None:
            return None
        plan = self._plan_value(scope, name.value)
        if plan is not None:
            return plan
        # A loop variable over a list of futures: plan the list's name.
        for a in scope.assignments[name.value]:
            owner = self.parent(a.node)
            if isinstance(owner, (cst.For, cst.CompFor)) and isinstance(owner.iter, cst.Name):
                return self._plan_list(self._scope(owner.iter), owner.iter.value)
        return None
