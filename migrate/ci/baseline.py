"""The baseline ratchet: fingerprints of findings that survive line shifts, and the baseline file.

A team that cannot migrate everything at once records today's findings (``ts2export baseline``);
``ts2export check --baseline FILE`` then fails only on findings that are not in that file.

A finding's fingerprint is a hash of

- the rule id,
- the file's path relative to the configuration root (posix),
- the normalised source of the construct: the tokens of the finding's span, up to the end of its
  first logical line, with comments dropped and whitespace collapsed (``torch.jit.trace( m,x )`` and
  ``torch.jit.trace(m, x)  # old`` are the same construct),
- its occurrence index among the findings of that file with the same rule and normalised source.

Lines added or removed above a construct, a docstring, a comment or reformatting do not change it;
editing the construct itself, renaming or moving its file does (it is then new). When one of several
identical constructs in a file is removed, the last occurrence's fingerprint is the one that goes.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Iterable, Sequence

from ts2export.rule import Finding

FORMAT = 1
DEFAULT_NAME = "ts2export-baseline.json"
_CODE_CHARS = 160  # how much of the normalised source the file shows to people (the hash covers all)


class BaselineError(Exception):
    """A baseline file is missing, unreadable or not a ts2export baseline: one line, exit 2."""


# --------------------------------------------------------------------------------------------
# paths and normalised source


def relative_path(path: str | Path, root: Path) -> str:
    """``path`` relative to the configuration root, posix; absolute when it lies outside it."""
    p = Path(path)
    for candidate, base in ((p.absolute(), root), (p.resolve(), root.resolve())):
        try:
            return candidate.relative_to(base).as_posix()
        except ValueError:
            continue
    return p.resolve().as_posix()


def _decode(data: bytes) -> str:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        encoding = "utf-8"
    try:
        return data.decode(encoding, errors="replace").lstrip("\ufeff")
    except LookupError:
        return data.decode("utf-8", errors="replace").lstrip("\ufeff")


_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
         tokenize.ENCODING, tokenize.ENDMARKER}


def _join(tokens: Iterable[str]) -> str:
    """Tokens without the whitespace between them, but for one space where two words would merge."""
    out = ""
    for tok in tokens:
        if out and (out[-1].isalnum() or out[-1] == "_") and (tok[0].isalnum() or tok[0] == "_"):
            out += " "
        out += tok
    return out


class SourceFile:
    """One file's text, tokenised once, to cut normalised snippets out of it."""

    def __init__(self, text: str, python: bool) -> None:
        self.lines = text.splitlines()
        self.tokens: list[tokenize.TokenInfo] | None = None
        if python:
            try:
                self.tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
            except (tokenize.TokenError, SyntaxError):
                self.tokens = None

    def snippet(self, f: Finding) -> str:
        start = (f.line, f.column - 1)
        end = (f.end_line, f.end_column - 1) if f.end_line and f.end_column else None
        if self.tokens is not None:
            picked: list[str] = []
            for tok in self.tokens:
                if tok.start < start:
                    continue
                if tok.type == tokenize.NEWLINE or (end is not None and tok.start >= end):
                    break  # the construct's first logical line is enough to know it again
                if tok.type not in _SKIP:
                    picked.append(tok.string)
            return _join(picked)
        # C++ or a file that does not tokenise: the rest of the line, comments dropped.
        if 1 <= f.line <= len(self.lines):
            text = self.lines[f.line - 1][max(f.column - 1, 0):]
            text = re.sub(r"/\*.*?\*/", " ", text)
            text = text.split("//", 1)[0]
            return " ".join(text.split())
        return ""


class NotebookSource:
    """A notebook's code cells (magics masked), each a SourceFile: its findings name their cell."""

    def __init__(self, cells: dict[int, SourceFile]) -> None:
        self.cells = cells

    def snippet(self, f: Finding) -> str:
        cell = self.cells.get(f.cell) if f.cell is not None else None
        return cell.snippet(f) if cell is not None else ""


def read_source(path: str) -> SourceFile | NotebookSource | None:
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    if Path(path).suffix.lower() == ".ipynb":
        from ts2export.engine.notebooks import NotebookError, read

        try:
            nb = read(data)
        except NotebookError:
            return None
        return NotebookSource({c.number: SourceFile(c.masked, python=True) for c in nb.cells})
    return SourceFile(_decode(data), python=Path(path).suffix.lower() in (".py", ".pyi"))


# --------------------------------------------------------------------------------------------
# fingerprints


@dataclass(frozen=True)
class Entry:
    """One recorded finding. ``fingerprint`` is what matching uses; the rest is for people."""

    fingerprint: str
    rule: str
    path: str  # relative to the configuration root, posix
    code: str  # normalised source (shortened)
    occurrence: int
    line: int  # where it was when recorded (not used for matching)
    message: str = ""

    def to_dict(self) -> dict:
        return {"fingerprint": self.fingerprint, "rule": self.rule, "path": self.path, "line": self.line,
                "occurrence": self.occurrence, "code": self.code, "message": self.message}

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.rule, self.occurrence, self.fingerprint)


def _digest(rule: str, path: str, code: str, occurrence: int) -> str:
    h = hashlib.sha256("\0".join((rule, path, code, str(occurrence))).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:20]


def fingerprint_findings(findings: Sequence[Finding], root: Path) -> list[tuple[Finding, Entry]]:
    """Each finding with its baseline entry (fingerprint), in the findings' order."""
    sources: dict[str, SourceFile | None] = {}
    seen: dict[tuple[str, str, str], int] = {}
    out: list[tuple[Finding, Entry]] = []
    for f in sorted(findings, key=Finding.sort_key):
        if f.path not in sources:
            sources[f.path] = read_source(f.path)
        src = sources[f.path]
        code = src.snippet(f) if src is not None else ""
        rel = relative_path(f.path, root)
        n = seen.get((f.rule_id, rel, code), 0)
        seen[(f.rule_id, rel, code)] = n + 1
        entry = Entry(_digest(f.rule_id, rel, code, n), f.rule_id, rel, code[:_CODE_CHARS], n, f.line, f.message)
        out.append((f, entry))
    return out


# --------------------------------------------------------------------------------------------
# the file


@dataclass
class Baseline:
    entries: list[Entry] = field(default_factory=list)

    def fingerprints(self) -> set[str]:
        return {e.fingerprint for e in self.entries}

    def dumps(self) -> str:
        doc = {
            "tool": "ts2export",
            "format": FORMAT,
            "note": "Findings recorded by `ts2export baseline`; `ts2export check --baseline` fails only on others.",
            "findings": [e.to_dict() for e in sorted(self.entries, key=Entry.sort_key)],
        }
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def load(path: Path, label: str | None = None) -> Baseline:
    """Read a baseline file; ``label`` names it in errors (default: ``path``)."""
    shown = label or str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BaselineError(f"{shown}: no such baseline file (record one with `ts2export baseline PATH... -o {shown}`)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{shown}: cannot read baseline: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(f"{shown}: not a ts2export baseline (invalid JSON at line {exc.lineno}: {exc.msg})") from None
    if not isinstance(doc, dict) or doc.get("tool") != "ts2export" or not isinstance(doc.get("findings"), list):
        raise BaselineError(f"{shown}: not a ts2export baseline (record one with `ts2export baseline`)")
    if doc.get("format") != FORMAT:
        raise BaselineError(f"{shown}: baseline format {doc.get('format')!r} is not supported by this ts2export (expected {FORMAT})")
    entries = []
    for i, item in enumerate(doc["findings"]):
        try:
            entries.append(Entry(str(item["fingerprint"]), str(item["rule"]), str(item["path"]), str(item.get("code", "")),
                                 int(item.get("occurrence", 0)), int(item.get("line", 0)), str(item.get("message", ""))))
        except (KeyError, TypeError, ValueError):
            raise BaselineError(f"{shown}: baseline entry {i + 1} is malformed (needs fingerprint, rule and path)") from None
    return Baseline(entries)


def write(path: Path, baseline: Baseline) -> bool:
    """Write the baseline atomically; False (nothing written) when the file already says the same."""
    from ts2export.textio import atomic_write_bytes

    data = baseline.dumps().encode("utf-8")
    try:
        if Path(path).read_bytes() == data:
            return False
    except OSError:
        pass
    try:
        atomic_write_bytes(Path(path), data)
    except OSError as exc:
        raise BaselineError(f"{path}: cannot write baseline: {exc.strerror or exc}") from None
    return True


# --------------------------------------------------------------------------------------------
# scope: which entries a run can confirm or deny


@dataclass(frozen=True)
class Scope:
    """What a run looked at: entries outside it are neither new, gone nor rewritten.

    ``paths``: relative paths (files or folders; "" for the whole root) the run covered;
    ``rule_in_scope``: whether a rule id ran; ``unchecked``: files that could not be checked (their
    entries are kept as they are)."""

    paths: tuple[str, ...]
    rule_in_scope: object = None  # Callable[[str, str], bool] | None: (rule id, path) -> ran there
    unchecked: frozenset[str] = frozenset()

    def covers(self, entry: Entry) -> bool:
        if entry.path in self.unchecked:
            return False
        p = PurePosixPath(entry.path)
        if not any(s in ("", ".") or p == PurePosixPath(s) or PurePosixPath(s) in p.parents for s in self.paths):
            return False
        return self.rule_in_scope is None or bool(self.rule_in_scope(entry.rule, entry.path))


@dataclass
class Comparison:
    new: list[tuple[Finding, Entry]]
    known: list[tuple[Finding, Entry]]
    gone: list[Entry]
    kept: list[Entry]  # baseline entries outside the scope

    def updated(self) -> Baseline:
        """The baseline without its gone entries (never with new findings): ``--update-baseline``."""
        return _unique([*self.kept, *(e for _, e in self.known)])

    def recorded(self) -> Baseline:
        """Every current finding, plus the entries outside the scope: ``ts2export baseline``."""
        return _unique([*self.kept, *(e for _, e in self.known), *(e for _, e in self.new)])


def _unique(entries: Iterable[Entry]) -> Baseline:
    """One entry per fingerprint; a later one (current line and message) replaces an earlier one."""
    by_fp: dict[str, Entry] = {}
    for e in entries:
        by_fp[e.fingerprint] = e
    return Baseline(list(by_fp.values()))


def compare(current: Sequence[tuple[Finding, Entry]], baseline: Baseline, scope: Scope) -> Comparison:
    known_fps = baseline.fingerprints()
    now_fps = {e.fingerprint for _, e in current}
    new = [(f, e) for f, e in current if e.fingerprint not in known_fps]
    known = [(f, e) for f, e in current if e.fingerprint in known_fps]
    in_scope = [e for e in baseline.entries if scope.covers(e)]
    gone = sorted((e for e in in_scope if e.fingerprint not in now_fps), key=Entry.sort_key)
    kept = [e for e in baseline.entries if not scope.covers(e)]
    return Comparison(new, known, gone, kept)


def gone_line(entry: Entry) -> str:
    return f"{entry.path}:{entry.line}: {entry.rule} {entry.code or entry.message} (gone)"
