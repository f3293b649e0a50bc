import libcst as cst

from ts2export.rule import Applicability, Edit, Invalid, Rule, Valid

from ._runtime_util import block_statements, const, literal, statement_edits, unreachable_after

_NAMES = ("torch.jit.is_scripting", "torch._jit_internal.is_scripting")


class JitIsScripting(Rule):
    """
    ## What it does
    Replaces `torch.jit.is_scripting()` with `False` and removes the branches that only ran under
    TorchScript: `if torch.jit.is_scripting(): A else: B` becomes `B` (un-indented into the
    enclosing block), `if not torch.jit.is_scripting(): A` becomes `A` (and where `A` ends in
    `return`/`raise`, the statements after it, now unreachable, go too), an `elif` whose test is
    always false disappears, an `if` with nothing left is removed (or becomes `pass` where it was
    the only statement of its block). Boolean expressions are simplified:
    `torch.jit.is_scripting() or cond` becomes `cond`, `not torch.jit.is_scripting() and x`
    becomes `x`, `a if torch.jit.is_scripting() else b` becomes `b`.

    ## Why
    `torch.jit.is_scripting()` told code whether the TorchScript compiler was compiling it, so a
    model could keep a scriptable and a Python-only variant side by side. Once the model runs as
    Python (eager, `torch.compile`, `torch.export`), the scripted variant is dead code that still
    has to be read and maintained.

    ## Example
    ```python
    def forward(self, x):
        if torch.jit.is_scripting():
            return self.loop(x)
        else:
            return self.vectorised(x)
    ```
    becomes
    ```python
    def forward(self, x):
        return self.vectorised(x)
    ```

    ## Fix safety
    Safe: `torch.jit.is_scripting()` returns False in eager Python, under `torch.jit.trace`,
    `torch.compile` and `torch.export.export` (strict and non-strict), checked on torch 2.13; it is
    True only while code runs as TorchScript. Only the operands that follow a constant in `and` /
    `or` are dropped, where Python never evaluates them; `x or torch.jit.is_scripting()` becomes
    `x` only where the value is used as a condition (`if`, `while`, `assert`, `not`, a
    conditional expression's test). A program that still scripts the code now runs the Python
    branch under TorchScript too; that branch may not be scriptable (which is why the check was
    there) -- migrate the `torch.jit.script` call as well.

    Where an entry point that stays TorchScript still compiles the code, the fix is held back:
    TorchScript would compile the Python branch it kept out. A trace is not affected
    (`is_scripting()` is False there).
    """

    id = "TSX501"
    summary = "`torch.jit.is_scripting()` is always False outside TorchScript: remove the scripted branch"
    applicability = Applicability.SAFE
    keeps_tracing = True

    VALID = [
        Valid("import torch\nif torch.compiler.is_compiling():\n    x = 1\n"),
        Valid("def is_scripting():\n    return True\nif is_scripting():\n    x = 1\n"),
        Valid("import torch\nf = torch.jit.is_tracing()\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\ndef f(x):\n    if torch.jit.is_scripting():\n        y = x + 1\n"
            "    else:\n        # eager path\n        y = x + 2\n    return torch.relu(y)\n",
            "import torch\n\n\ndef f(x):\n    # eager path\n    y = x + 2\n    return torch.relu(y)\n",
        ),
        Invalid(
            "import torch\n\n\ndef f(x):\n    if not torch.jit.is_scripting():\n        x = x.relu()\n"
            "    else:\n        x = x.clamp(min=0)\n    return torch.relu(x)\n",
            "import torch\n\n\ndef f(x):\n    x = x.relu()\n    return torch.relu(x)\n",
        ),
        Invalid(
            "import torch\n\n\ndef f(x):\n    if torch.jit.is_scripting():\n        return x\n    return torch.relu(x * 2)\n",
            "import torch\n\n\ndef f(x):\n    return torch.relu(x * 2)\n",
        ),
        Invalid(
            "'''Docstring.'''\nimport torch\n\n\ndef f(x):\n    if torch.jit.is_scripting():\n        return torch.relu(x)\n",
            "'''Docstring.'''\n\n\ndef f(x):\n    pass\n",
        ),
        Invalid(
            "'''Docstring.'''\nfrom torch.jit import is_scripting\n\n\ndef f(x, n):\n    if n > 2:\n        x = x + 1\n"
            "    elif is_scripting():\n        x = x + 2\n    elif n > 0:\n        x = x + 3\n"
            "    else:\n        x = x + 4\n    return x\n",
            "'''Docstring.'''\n\n\ndef f(x, n):\n    if n > 2:\n        x = x + 1\n    elif n > 0:\n        x = x + 3\n"
            "    else:\n        x = x + 4\n    return x\n",
        ),
        Invalid(
            "import torch\n\n\ndef f(x, n):\n    if n > 2:\n        x = x + 1\n"
            "    elif not torch.jit.is_scripting():\n        x = x + 2\n    else:\n        x = x + 4\n    return torch.relu(x)\n",
            "import torch\n\n\ndef f(x, n):\n    if n > 2:\n        x = x + 1\n"
            "    else:\n        x = x + 2\n    return torch.relu(x)\n",
        ),
        Invalid(
            "import torch\n\n\ndef f(x):\n    if not torch.jit.is_scripting():\n        return torch.relu(x)\n"
            "    # TorchScript path\n    y = x.clamp(min=0)\n    return y\n",
            "import torch\n\n\ndef f(x):\n    return torch.relu(x)\n",
        ),
        Invalid(
            "import torch\n\n\ndef f(x, fast):\n    if fast:\n        if torch.jit.is_scripting():\n"
            "            raise RuntimeError('not in TorchScript')\n\n        x = torch.relu(x)\n    return x\n",
            "import torch\n\n\ndef f(x, fast):\n    if fast:\n        x = torch.relu(x)\n    return x\n",
        ),
        Invalid(
            "import torch\n\n\ndef f(x, training):\n    if torch.jit.is_scripting() or training:\n        x = x * 2\n    return torch.relu(x)\n",
            "import torch\n\n\ndef f(x, training):\n    if training:\n        x = x * 2\n    return torch.relu(x)\n",
        ),
        Invalid(
            "import torch\n\n\ndef f(x, ok):\n    if not torch.jit.is_scripting() and ok:\n        x = x * 2\n    return torch.relu(x)\n",
            "import torch\n\n\ndef f(x, ok):\n    if ok:\n        x = x * 2\n    return torch.relu(x)\n",
        ),
        Invalid(
            "import torch\n\n\ndef f(x, ok):\n    if ok and not torch.jit.is_scripting():\n        x = x * 2\n    return torch.relu(x)\n",
            "import torch\n\n\ndef f(x, ok):\n    if ok:\n        x = x * 2\n    return torch.relu(x)\n",
        ),
        Invalid(
            "import torch\nuse_fast = torch.jit.is_scripting() or (1 + 1 == 2)\n",
            "use_fast = (1 + 1 == 2)\n",
        ),
        Invalid(
            "import torch\nys = [y for y in range(3) if not torch.jit.is_scripting()]\n",
            "ys = [y for y in range(3)]\n",
        ),
        Invalid(
            "import torch\nflag = not torch.jit.is_scripting() and 3\nlabel = 'ts' if torch.jit.is_scripting() else 'py'\n",
            "flag = 3\nlabel = 'py'\n",
            count=2,
        ),
        Invalid(
            "import torch\n\n\ndef f(x):\n    assert not torch.jit.is_scripting(), 'eager only'\n    return torch.relu(x)\n",
            "import torch\n\n\ndef f(x):\n    return torch.relu(x)\n",
        ),
        Invalid(
            "import torch\nscripting = torch.jit.is_scripting()\nif torch.jit.is_scripting(): x = 1; y = 2\nelse: x = 3; y = 4\n",
            "scripting = False\nx = 3; y = 4\n",
            count=2,
        ),
    ]

    # -- simplification -------------------------------------------------------------------
    def _is_target(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Call) and not node.args and bool(self.matches(node.func, *_NAMES))

    def _simplify(self, node: cst.BaseExpression, truth: bool) -> cst.BaseExpression:
        """``node`` with is_scripting() = False, simplified.

        ``truth``: only the truth value of the result matters (a condition)."""
        if self._is_target(node):
            return literal(False)
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            inner = self._simplify(node.expression, True)
            c = const(inner)
            if c is not None:
                return literal(not c)
            if inner is node.expression:
                return node
            return node.with_changes(expression=inner)
        if isinstance(node, cst.BooleanOperation):
            left = self._simplify(node.left, truth)
            right = self._simplify(node.right, truth)
            lc, rc = const(left), const(right)
            is_and = isinstance(node.operator, cst.And)
            if lc is not None:
                if lc is not is_and:  # False and x -> False; True or x -> True
                    return literal(lc)
                return self._keep_parens(node, right)
            if truth and rc is is_and:  # x and True / x or False: same truth value as x
                return self._keep_parens(node, left)
            if truth and rc is not None and self._pure(left):  # n and False -> False; n or True -> True
                return literal(rc)
            if left is node.left and right is node.right:
                return node
            return node.with_changes(left=left, right=right)
        return node

    @staticmethod
    def _pure(node: cst.BaseExpression) -> bool:
        """Evaluating ``node`` for its truth value has no effect worth keeping (a plain name or literal)."""
        return isinstance(node, (cst.Name, cst.BaseNumber, cst.SimpleString))

    def _keep_parens(self, old: cst.BaseExpression, new: cst.BaseExpression) -> cst.BaseExpression:
        """``new`` (an operand of ``old``) standing where ``old`` stood: keep ``old``'s parentheses
        where they hold a line break or ``new`` is not atomic."""
        if not old.lpar or getattr(new, "lpar", None) or const(new) is not None:
            return new
        atomic = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.BaseNumber, cst.BaseString)
        if isinstance(new, atomic) and "\n" not in self.code_of(old):
            return new
        return new.with_changes(lpar=old.lpar, rpar=old.rpar)

    def _outermost(self, node: cst.BaseExpression) -> cst.BaseExpression:
        while True:
            parent = self.parent(node)
            if isinstance(parent, cst.BooleanOperation) or (
                isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not)
            ):
                node = parent
            else:
                return node

    # -- statements -----------------------------------------------------------------------
    def _if_edits(self, stmt: cst.If, value: bool) -> list[Edit]:
        parent = self.parent(stmt)
        if isinstance(parent, cst.If) and parent.orelse is stmt:  # an elif
            if value:
                return [Edit(stmt, cst.Else(body=stmt.body, leading_lines=stmt.leading_lines,
                                            whitespace_before_colon=stmt.whitespace_after_test))]
            rest = stmt.orelse
            if rest is None:
                return [Edit(stmt, cst.RemovalSentinel.REMOVE)]
            return [Edit(stmt, rest.with_changes(leading_lines=stmt.leading_lines))]
        if value:
            new = block_statements(stmt.body)
        elif stmt.orelse is None:
            new = []
        elif isinstance(stmt.orelse, cst.Else):
            new = block_statements(stmt.orelse.body)
        else:
            new = [stmt.orelse.with_changes(leading_lines=())]
        return statement_edits(self, stmt, new) + unreachable_after(self, stmt, new)

    def visit_Call(self, node: cst.Call) -> None:
        if not self._is_target(node):
            return
        expr = self._outermost(node)
        parent = self.parent(expr)
        message = ("`torch.jit.is_scripting()` is always False outside TorchScript (eager, torch.compile, "
                   "torch.export); keep the Python branch only")
        if isinstance(parent, cst.CompIf) and parent.test is expr:
            value = self._simplify(expr, True)
            if const(value) is True:  # `[x for x in xs if True]`: drop the filter
                self.report(node, message, edits=[Edit(parent, cst.RemovalSentinel.REMOVE)])
                return
        elif isinstance(parent, (cst.If, cst.While, cst.Assert, cst.IfExp)) and parent.test is expr:
            value = self._simplify(expr, True)
            c = const(value)
            if c is not None and isinstance(parent, cst.If):
                self.report(node, message, edits=self._if_edits(parent, c))
                return
            if c is not None and isinstance(parent, cst.IfExp):
                branch = self._keep_parens(parent, parent.body if c else parent.orelse)
                self.report(node, message, edits=[Edit(parent, self.substitute(parent, branch))])
                return
            if c is True and isinstance(parent, cst.Assert):
                stmt = self.parent(parent)
                if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
                    self.report(node, message, edits=statement_edits(self, stmt, []))
                    return
            if c is False and isinstance(parent, cst.While) and parent.orelse is None:
                self.report(node, message, edits=statement_edits(self, parent, []))
                return
        else:
            value = self._simplify(expr, False)
        # The simplified expression keeps the precedence its place needs (operands only move up
        # where the operator they leave binds less tightly, or they keep its parentheses).
        self.report(node, message, edits=[Edit(expr, value)])
