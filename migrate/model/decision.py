"""Which fixes must wait so that no program breaks, decided after the rules have checked every file.

1. a unit whose call sites cannot all be rewritten (no fix, an unsafe fix without
   ``--unsafe-fixes``, suppressed, a reader of an artifact made outside the run) keeps all of them;
2. a fix inside code that an entry point which stays still compiles (or traces) is held back
   unless its rule keeps that code working under TorchScript (``keeps_torchscript``,
   ``keeps_tracing``);
3. an entry point rewritten to ``torch.export`` is held back when the code it exports keeps a
   construct that makes export fail (``blocks_export`` findings that are not fixed), or may keep
   one (its target cannot be followed); where its rule offers a second fix that exports nothing
   (the module runs eager), that fix is taken instead, and the entry point still leaves TorchScript;

repeated until nothing changes. The engine applies the :class:`Decision`, per file.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from ts2export.model import pathpattern as ap
from ts2export.model.eager_branches import eager_only_lines, only_called_from
from ts2export.model.files import Files
from ts2export.model.known_errors import KNOWN, with_sentence
from ts2export.model.findings import ScanFinding
from ts2export.model.links import Links
from ts2export.model.patched import Patched
from ts2export.model.reach import Reach
from ts2export.model.scriptuses import ScriptUses
from ts2export.model.sites import (
    CALL_SITES, COMPILERS, ENTRY_CLASS, ENTRY_DECORATOR, ENTRY_IF_TRACING, ENTRY_SCRIPT, ENTRY_TRACE, READER, TRANSFORM,
    WRITER, Site, Sites,
)
from ts2export.model.units import Units, covers
from ts2export.model.values import UNKNOWN


@dataclass
class Decision:
    """What the model decided for one run (plain data, per file)."""

    held: dict[str, dict[str, str]] = field(default_factory=dict)  # path -> anchor -> reason
    regions: dict[str, dict[str, tuple[str | None, str | None]]] = field(default_factory=dict)
    units: dict[str, dict[str, str]] = field(default_factory=dict)  # path -> anchor -> unit label
    switched: dict[str, dict[str, str]] = field(default_factory=dict)  # path -> anchor -> why its second fix
    #: entry points that migrate on a recorded proof of the code as it was: one that failed at code a
    #: fix rewrites (see Solver._rewritten_where_it_failed), or one proven by doing at run time what
    #: apply writes (`as_apply_writes`): {"path", "line", "proof", "key"}, to replay the proof on the
    #: code apply writes (ts2export.engine.replayed)
    exempted: list[dict] = field(default_factory=list)

    def for_file(self, path: str) -> "FileDecision":
        return FileDecision(self.held.get(path, {}), self.regions.get(path, {}), self.units.get(path, {}),
                            self.switched.get(path, {}))


@dataclass(frozen=True)
class FileDecision:
    held: dict[str, str]
    regions: dict[str, tuple[str | None, str | None]]  # def qualname -> (compiled by, traced by)
    units: dict[str, str]
    switched: dict[str, str] = field(default_factory=dict)  # anchor -> why the second fix is taken

    def region_hold(self, defs: Sequence[str], keeps_torchscript: bool, keeps_tracing: bool) -> str | None:
        """Why a fix inside ``defs`` (innermost first) must wait, if it must."""
        for qualname in defs:
            compiled, traced = self.regions.get(qualname, (None, None))
            if compiled and not keeps_torchscript:
                return compiled
            if traced and not keeps_tracing:
                return traced
        return None


@dataclass(eq=False)
class Solver:
    files: Files
    sites: Sites
    links: Links
    units: Units
    reach: Reach
    script_uses: ScriptUses
    external_readers: bool
    proof_of: Callable[[Site], dict | None] | None = None  # the recording's proof of an entry point
    migrate_unfollowable: bool = False  # an entry point whose target cannot be followed may migrate
    patched: Patched | None = None  # classes given attributes from outside their body
    findings: list[ScanFinding] = field(default_factory=list, init=False)

    def _rewritten_where_it_failed(self, proof: dict, fixable: Callable[[ScanFinding], bool]) -> bool:
        """The proof (which exported the code as it was) failed at a line a fix of this run
        rewrites, with what that fix's rule says export raises on the construct as it is (a
        data-dependent `if` that becomes torch.cond): it says nothing of the code apply writes."""
        frame, error = proof.get("frame"), proof.get("error") or ""
        if not frame:
            return False
        file, line = frame[0], frame[1]  # (the file as the run names it: see Program)
        for fi in self.findings:
            if not (fixable(fi) and fi.proof_failures and any(p in error for p in fi.proof_failures)):
                continue
            if fi.path != file:
                continue
            if any(start[0] <= line <= end[0] for start, end, _ in fi.fix_spans):
                return True
        return False

    def _torchscript_inside(self, s: Site, goes: Callable[[Site], bool]) -> Site | None:
        """A call site that stays TorchScript and makes a value the module ``s`` exports is built
        from: `torch.jit.script(Ensemble(members))` where `members = [torch.jit.load(p) for p in
        paths]` and that load is held (names in the exported expression, followed to their values
        once, and the calls in those)."""
        from ts2export.model.pyfile import first_arg

        arg = first_arg(s.node, "obj", "func", "mod")
        if arg is None:
            return None
        origins = self.script_uses.origins
        exprs: list[tuple] = [(s.file, arg)]
        for sub in ast.walk(arg):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                for value in origins.values.values(s.file, sub):
                    if value is not UNKNOWN and len(value) == 2 and isinstance(value[1], ast.AST):
                        exprs.append(value)
        for vf, expr in exprs:
            for node in ast.walk(expr):
                if not isinstance(node, ast.Call):
                    continue
                inner = self.sites.at(vf, node)
                if inner is not None and inner is not s and inner.kind in (READER, ENTRY_SCRIPT, ENTRY_TRACE) \
                        and not goes(inner):
                    return inner
        return None

    def proof(self, s: Site) -> dict | None:
        if self.proof_of is None or s.kind not in (ENTRY_SCRIPT, ENTRY_TRACE):
            return None
        return self.proof_of(s)

    def attach(self, findings: Iterable[ScanFinding]) -> None:
        """Give each site the findings of the first pass that report it."""
        by_file = self.sites.by_file()
        self.findings = list(findings)
        for s in self.sites.all:
            s.findings = []
        for fi in self.findings:
            for s in by_file.get(fi.path, ()):
                if (fi.start, fi.end) == (s.start, s.end) or (
                    s.kind in (ENTRY_DECORATOR, ENTRY_IF_TRACING, ENTRY_CLASS)
                    and fi.start <= s.start and s.end <= fi.end and fi.start[0] == s.start[0]
                ):
                    s.findings.append(fi)
        self.units.form(self.findings)

    def solve(self, extra_held: dict[tuple[str, str], str] | None = None) -> Decision:
        """Which fixes to hold back, and why. ``extra_held``: (path, anchor) -> reason, fixes the
        engine could not apply (their units wait too)."""
        held: dict[tuple[str, str], str] = dict(extra_held or {})
        switched: dict[tuple[str, str], str] = {}  # findings whose second fix (no export) is taken
        exempted: dict[int, Site] = {}  # entry points whose failed proof lies in code a fix rewrites
        writers = {id(s) for s in self.sites.all if self.links.is_writer(s)}
        sites = [s for s in self.sites.all if s.kind != WRITER or id(s) in writers]
        reach = {id(s): self.reach.reach(s) for s in sites if s.kind not in (WRITER, READER)}

        covering: dict[int, list[ScanFinding]] = {}  # site -> findings whose fix rewrites it
        for fi in self.findings:
            for site in self.sites.by_file().get(fi.path, ()):
                if fi.fix_spans and covers(fi, site) and fi not in site.findings:
                    covering.setdefault(id(site), []).append(fi)

        def fixable(fi: ScanFinding) -> bool:
            return fi.fixable and fi.key not in held

        def goes(s: Site) -> bool:
            return any(fixable(fi) for fi in [*s.findings, *covering.get(id(s), ())])

        def hold(fi: ScanFinding, reason: str) -> bool:
            if fi.fixable and fi.key not in held:
                held[fi.key] = reason
                return True
            return False

        def hold_export(fi: ScanFinding, reason: str) -> bool:
            """An export that must wait: its rule's second fix if it offers one, else held."""
            if fi.alternative_spans is not None and fi.fixable and fi.key not in held:
                if fi.key in switched:
                    return False
                switched[fi.key] = reason
                return True
            return hold(fi, reason)

        def writes_export(fi: ScanFinding) -> bool:
            return fi.key not in switched and exports(fi)

        def stays(s: Site) -> str:
            """Why a call site stays TorchScript, as a predicate ("stays TorchScript (...)")."""
            for fi in s.findings:
                if fi.key in held:
                    return f"is held back ({held[fi.key]})"
            for fi in s.findings:
                if not fi.fixable:
                    return f"stays TorchScript (see {fi.rule_id} there)"
            return "stays TorchScript"

        changed = True
        rounds = 0
        while changed and rounds < 50:
            changed = False
            rounds += 1
            # 1. units: all their call sites migrate, or none
            leaves_fixed = any(fixable(fi) and fi.makes_parameters_leaves for fi in self.findings)
            for unit in self.units.all:
                members = [s for s in unit.sites if s.kind != WRITER or id(s) in writers]
                blockers: list[tuple[Site, str]] = []  # (site, why it stays, as a predicate)
                order = {ENTRY_SCRIPT: 0, ENTRY_TRACE: 0, READER: 1, WRITER: 2}
                for s in sorted(members, key=lambda s: order.get(s.kind, 3)):
                    uses = self.script_uses.of(s)
                    proof = self.proof(s)
                    if proof and s.kind in (ENTRY_SCRIPT, ENTRY_TRACE) and not any(
                            fixable(fi) and writes_export(fi) for fi in s.findings):
                        proof = None  # its fix runs the module eager: nothing is exported, whatever the proof found
                    if proof and proof.get("verdict") == "failed" and goes(s) and not self._rewritten_where_it_failed(proof, fixable):
                        blockers.append((s, proof_failure(proof)))
                    elif proof and proof.get("verdict") == "failed" and goes(s):
                        exempted[id(s)] = s
                    elif proof and proof.get("non_leaf") and goes(s) and not leaves_fixed:
                        blockers.append((s, non_leaf_failure(proof)))
                    elif s.kind in (ENTRY_SCRIPT, ENTRY_TRACE) and goes(s) and any(
                            fixable(fi) and writes_export(fi) for fi in s.findings) and (
                            inner := self._torchscript_inside(s, goes)) is not None:
                        blockers.append((s, (
                            f"would export a module holding what {inner.describe()} makes, which stays TorchScript: "
                            "torch.export cannot trace a TorchScript module inside the program it exports (migrate "
                            "that one first, then apply again)")))
                    elif uses and (goes(s) or s.kind in CALL_SITES or s.kind == ENTRY_DECORATOR):
                        # a test that checks what the value is (its type, its TorchScript code)
                        blockers.append((s, (
                            f"makes a value that {uses[0].where} uses as TorchScript (`{uses[0].text}`), which an "
                            "exported program is not: change that code (or check the exported value), then apply again")))
                    elif s.kind == READER and not self.external_readers and not any(
                            id(w) in writers for w in self.links.links.get(id(s), ())):
                        shown = " or ".join(sorted({ap.shown(p) for p in s.patterns}))
                        blockers.append((s, (
                            f"reads `{shown}`, which no checked file writes: artifacts made elsewhere must be converted "
                            "first (`ts2export convert`, same path), then run apply with `--external-readers`")))
                    elif s.kind in CALL_SITES and not goes(s):
                        blockers.append((s, stays(s)))
                    elif s.kind == ENTRY_DECORATOR and len(members) > 1 and not goes(s):
                        blockers.append((s, stays(s)))  # what it compiles keeps its TorchScript values
                    elif s.kind == TRANSFORM and not goes(s):
                        # what it transforms cannot migrate without it (the reverse is fine)
                        blockers.append((s, stays(s)))
                if not blockers:
                    continue
                blocker, why = blockers[0]
                # a recorded export that failed: script calls that may run eager instead do
                failed = (self.proof(blocker) or {}).get("verdict") == "failed"
                for s in members:
                    if s.kind == TRANSFORM and s is not blocker:
                        continue  # `freeze(m)` may go while `m` stays TorchScript
                    reason = why if s is blocker else f"it migrates together with {blocker.describe()}, which {why}"
                    if s is blocker:
                        reason = f"{s.describe()} {why}"
                    for fi in [*s.findings, *covering.get(id(s), ())]:
                        changed |= (hold_export if failed and fi in s.findings else hold)(fi, reason)
            # 2. code that TorchScript still compiles or traces
            compiled, traced, unknown_compiled, unknown_traced = self._staying_reach(sites, reach, goes)
            for fi in self.findings:
                if not fixable(fi) or not fi.defs:
                    continue
                patch = self._patched_decorator(fi) if fi.keeps_torchscript else None
                why = self._region_reason(fi.path, fi.defs, compiled, traced, unknown_compiled, unknown_traced,
                                          fi.keeps_torchscript and patch is None, fi.keeps_tracing)
                if why and patch:
                    why += f" (without its decorator TorchScript compiles the class as it is when first used, {patch})"
                if why:
                    changed |= hold(fi, why)
            # 3. exports that would fail on code left as it is (what only eager Python runs aside:
            # the holds below are of the export sites' own findings, which leave these as they are)
            skipped = self._eager_only(fixable)
            for s in sites:
                if s.kind not in (ENTRY_SCRIPT, ENTRY_TRACE) or not goes(s):
                    continue
                if not any(fixable(fi) and writes_export(fi) for fi in s.findings):
                    continue  # its fix runs the module eager (or drops the call): nothing is exported
                proof = self.proof(s) or {}
                if proof.get("verdict") == "proven" and proof.get("as_apply_writes"):
                    exempted[id(s)] = s  # proven by doing at run time what apply writes: replayed on it
                if proof.get("verdict") == "proven" and not proof.get("as_apply_writes"):
                    # the recording exported it and compared: evidence beats the static guess (a
                    # proof that did at run time what apply writes, a scripted child run eager, a
                    # named tuple registered, holds only where those fixes are written: the static
                    # checks below still run)
                    continue
                defs, unknown = reach[id(s)]
                if s.kind == ENTRY_TRACE:
                    fi = next((fi for fi in self.findings if fi.trace_takes_one_path
                               and any((fi.path, q) in defs for q in fi.defs)), None)
                    if fi is not None:
                        why = (f"the trace recorded one path through {fi.rule_id} in `{fi.defs[0]}` ({fi.where}): "
                               "TorchScript runs the branch its example took for every input, and the exported "
                               "program would decide per input, so outputs could change; trace with an example of each "
                               "case and check, or script the model, then apply again")
                        for own in s.findings:
                            changed |= hold_export(own, why)
                        continue
                for fi in self.findings:
                    if not fi.blocks_export or fixable(fi):
                        continue
                    if any((fi.path, q) in defs for q in fi.defs) and not self._export_skips(fi, skipped):
                        why = (f"torch.export would stop at {fi.rule_id} in `{fi.defs[0]}` ({fi.where}), which "
                               + ("is held back" if fi.fixable else "has no automatic fix"))
                        for own in s.findings:
                            changed |= hold_export(own, why)
                        break
                else:
                    if unknown and not self.migrate_unfollowable:
                        # what it exports cannot be followed: any code of the run TorchScript could compile
                        fi = next((fi for fi in self.findings if fi.blocks_export and not fixable(fi) and fi.defs
                                   and self._compilable(fi.path, fi.defs) and not self._export_skips(fi, skipped)), None)
                        if fi is not None:
                            why = (f"its target cannot be followed, so it may export any code of the run, and torch.export "
                                   f"would stop at {fi.rule_id} in `{fi.defs[0]}` ({fi.where}), which "
                                   + ("is held back" if fi.fixable else "has no automatic fix")
                                   + "; to let it migrate anyway, set `migrate-unfollowable = true` under [tool.ts2export] "
                                   "and check the result with `apply --test` or a recording")
                            for own in s.findings:
                                changed |= hold_export(own, why)
        out = self._decision(held, switched, sites, reach, goes)
        for s in exempted.values():
            own = next((fi for fi in s.findings if fixable(fi)), None)
            if own is not None:
                out.exempted.append({"path": s.file.path, "line": s.start[0], "proof": self.proof(s), "key": own.key})
        return out

    def _patched_decorator(self, fi: ScanFinding) -> str | None:
        """Where the run patches the class on whose decorator ``fi`` lies (see
        :mod:`ts2export.model.patched`), if it does."""
        if self.patched is None or not fi.defs:
            return None
        f = self.files.file(fi.path)
        d = f.def_by_qualname.get(fi.defs[0]) if f is not None else None
        if d is None or d.kind != "class" or d.node.lineno <= fi.start[0] <= (d.node.end_lineno or d.node.lineno):
            return None  # in its body: not on a class's decorator lines, nor `X = torch.jit.script(X)` after it
        return self.patched.why(fi.path, d.qualname)

    def _eager_only(self, fixable: Callable[[ScanFinding], bool]) -> dict[str, list[tuple[int, int]]]:
        """Per file, the lines that run only in eager Python once this run's fixes are written
        (see ts2export.model.eager_branches): export does not trace them."""
        out: dict[str, list[tuple[int, int]]] = {}
        for fi in self.findings:
            if fi.export_skips_eager_branch and fixable(fi):
                f = self.files.file(fi.path)
                lines = eager_only_lines(f, fi.start[0]) if f is not None else None
                if lines is not None:
                    out.setdefault(fi.path, []).append(lines)
        return out

    def _export_skips(self, fi: ScanFinding, skipped: dict[str, list[tuple[int, int]]]) -> bool:
        """Whether export does not trace the code of ``fi``: it lies in a branch that runs only in
        eager Python, or in a function that only such branches call."""
        if not skipped:
            return False
        if any(a <= fi.start[0] <= b for a, b in skipped.get(fi.path, ())):
            return True
        if not fi.defs:
            return False
        name = fi.defs[0].rsplit(".", 1)[-1]
        f = self.files.file(fi.path)
        d = f.def_by_qualname.get(fi.defs[0]) if f is not None else None
        owner = f.def_by_qualname.get(d.parent) if d is not None and d.parent else None
        if d is None or d.kind != "function" or name == "forward" or owner is None or owner.kind != "class":
            return False  # methods only: a function may be imported under another name
        return only_called_from(self.files.naming(name.encode()), name, skipped)

    def _staying_reach(self, sites, reach, goes):
        compiled: dict[tuple[str, str], Site] = {}
        traced: dict[tuple[str, str], Site] = {}
        unknown_compiled: Site | None = None
        unknown_traced: Site | None = None
        for s in sites:
            if s.kind in (WRITER, READER) or goes(s):
                continue
            defs, unknown = reach[id(s)]
            table = compiled if s.kind in COMPILERS else traced
            for key in defs:
                table.setdefault(key, s)
            if unknown and not self.migrate_unfollowable:  # (with it, such a site holds back only what it names)
                if s.kind in COMPILERS and unknown_compiled is None:
                    unknown_compiled = s
                elif s.kind not in COMPILERS and unknown_traced is None:
                    unknown_traced = s
        return compiled, traced, unknown_compiled, unknown_traced

    def _region_reason(self, path, defs, compiled, traced, unknown_compiled, unknown_traced, keeps_ts, keeps_tr) -> str | None:
        for keeps, table, unknown, verb in ((keeps_ts, compiled, unknown_compiled, "compiled"),
                                            (keeps_tr, traced, unknown_traced, "traced")):
            if keeps:
                continue
            for q in defs:
                s = table.get((path, q))
                if s is not None:
                    return f"`{q}` is still {verb} by TorchScript through {s.describe()}, which stays"
            if unknown is not None and self._compilable(path, defs):
                return (f"this code may be {verb} by TorchScript through {unknown.describe()}, which stays "
                        "and whose target ts2export cannot follow")
        return None

    def _compilable(self, path: str, defs: Sequence[str]) -> bool:
        """Whether the code at ``defs`` could be compiled by TorchScript at all: not when its
        top-level definition calls TorchScript's own entry points, loads or saves (TorchScript
        cannot compile those), nor at module level."""
        if not defs:
            return False
        top = defs[-1]
        for s in self.sites.by_file().get(path, ()):
            if s.kind in (ENTRY_SCRIPT, ENTRY_TRACE, READER, WRITER) and (s.scope == top or s.scope.startswith(top + ".")):
                return False
        return True

    def _decision(self, held, switched, sites, reach, goes) -> Decision:
        out = Decision()
        for fi in self.findings:
            if fi.key in held:
                out.held.setdefault(fi.path, {})[fi.anchor] = held[fi.key]
            elif fi.key in switched:
                out.switched.setdefault(fi.path, {})[fi.anchor] = switched[fi.key]
        compiled, traced, unknown_compiled, unknown_traced = self._staying_reach(sites, reach, goes)
        for path in sorted({fi.path for fi in self.findings}):  # regions are asked of findings only
            f = self.files.file(path)
            if f is None:
                continue
            regions = {}
            for d in f.defs:
                c = self._region_reason(path, [d.qualname], compiled, {}, unknown_compiled, None, False, True)
                t = self._region_reason(path, [d.qualname], {}, traced, None, unknown_traced, True, False)
                if c or t:
                    regions[d.qualname] = (c, t)
            if regions:
                out.regions[path] = regions
        for s in sites:
            for fi in s.findings:
                out.units.setdefault(fi.path, {})[fi.anchor] = s.unit.label if s.unit else ""
        for fi in self.findings:
            if fi.anchor in out.units.get(fi.path, {}):
                continue
            for s in sites:
                if s.kind in (WRITER, READER):
                    continue
                defs, _ = reach[id(s)]
                if any((fi.path, q) in defs for q in fi.defs):
                    out.units.setdefault(fi.path, {})[fi.anchor] = s.unit.label if s.unit else ""
                    break
        return out


_EXPORT_CALL = re.compile(r"torch\.export\.|(?<![\w.])export\(")  # not `# ts2export: ...` in a comment


def exports(fi: ScanFinding) -> bool:
    """Whether the fix of ``fi`` writes a call of torch.export (not, say, the eager module)."""
    return any(_EXPORT_CALL.search(code) for _, _, code in fi.fix_spans)


def non_leaf_failure(proof: dict) -> str:
    """Why an entry point whose proof needed its parameters made leaves stays where no fix of the
    run makes them leaves (their in-place writes are not in the checked files, or not in a form
    that is fixed)."""
    known = next(k for k in KNOWN if k.key == "non-leaf-parameters")
    names = ", ".join(f"`{n}`" for n in proof["non_leaf"][:4])
    return (f"exports parameters ({names}) that `ExportedProgram.module()` refuses (`ValueError: Cannot assign non-leaf "
            f"Tensor to parameter`), and no fix of this run makes them leaves: {known.sentence} (see {known.see}), then "
            "record and apply again")


def proof_failure(proof: dict) -> str:
    """Why an entry point whose proof failed stays, as a predicate."""
    where = ""
    if proof.get("frame"):
        file, line, function = proof["frame"]
        where = f" in `{function}` ({file}:{line})"
    method = f" `{proof['method']}`" if proof.get("method") not in (None, "forward") else ""
    error = with_sentence(proof.get("error", "?"))
    if proof.get("step") in ("export", "save"):
        error = f"torch.export.{proof['step']}{method} raised {error}"
    elif method:
        error = f"{method.strip()}: {error}"
    return f"failed its proof in the recording: {error}{where}; change that code, then record and apply again"
