"""One editor document in the engine's terms and back: its bytes and task, its config, and the
positions, diagnostics and edits of LSP as plain data (no pygls here: the server turns these into
its protocol's types)."""

from __future__ import annotations

import io
import os
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from ts2export.engine.config import Config, ConfigError, excluded, load_config, per_file_ignores
from ts2export.engine.tasks import Options, Task
from ts2export.rule import Applicability, Finding

SOURCE = "ts2export"
FIX_ALL_KIND = "source.fixAll.ts2export"


@dataclass
class Document:
    """What the engine is asked about one open document."""

    path: str
    text: str
    task: Task | None  # None: the config excludes the file
    options: Options
    config_error: str | None = None
    encoding: str = "utf-8"

    def decode(self, data: bytes) -> str:
        return data.decode(self.encoding, errors="surrogateescape")


def encoding_of(text: str) -> str:
    """The encoding the file declares (PEP 263 cookie, BOM), so the bytes the engine sees are the
    bytes the file would hold on disk."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(text.encode("utf-8", errors="surrogateescape")).readline)
    except SyntaxError:
        return "utf-8"
    return "utf-8" if encoding == "utf-8-sig" else encoding


def document(path: str, text: str) -> Document:
    """The task and options for ``text`` at ``path``, under the nearest ``[tool.ts2export]`` config
    (select, ignore, per-file-ignores, exclude, inputs, batch-one, external-readers,
    migrate-unfollowable, script-wrappers). A broken config is reported and the defaults are used."""
    error = None
    try:
        cfg = load_config(Path(path))
    except ConfigError as exc:
        error = str(exc)
        cfg = Config(root=Path(os.path.dirname(os.path.realpath(path))))
    from ts2export.engine.registry import known_selector

    unknown = [s for s in cfg.select + cfg.ignore if not known_selector(s)]
    if unknown and error is None:
        error = f"unknown rule id or prefix {unknown[0]!r} in [tool.ts2export] (see `ts2export rules`)"
    options = Options(
        select=tuple(s for s in cfg.select if known_selector(s)),
        ignore=tuple(s for s in cfg.ignore if known_selector(s)),
        rule_options={"inputs": dict(cfg.inputs), "root": str(cfg.root), "batch_one": cfg.batch_one},
        external_readers=cfg.external_readers,
        migrate_unfollowable=cfg.migrate_unfollowable,
        script_wrappers=tuple(cfg.script_wrappers),
    )
    encoding = encoding_of(text)
    try:
        data = text.encode(encoding, errors="surrogateescape")
    except (UnicodeEncodeError, LookupError):
        encoding, data = "utf-8", text.encode("utf-8", errors="surrogateescape")
    task = None if excluded(Path(path), cfg) else Task(path, "python", per_file_ignores(Path(path), cfg), data=data)
    return Document(path, text, task, options, error, encoding)


# ---- positions: the engine counts code points from 1, LSP counts from 0 in the negotiated units


@dataclass
class Lines:
    """The lines of a text, to turn (line, code point column) and offsets into LSP positions."""

    text: str
    encoding: str = "utf-16"  # what the client counts positions in: "utf-8", "utf-16" or "utf-32"
    starts: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.starts = [0]
        for i, ch in enumerate(self.text):
            if ch == "\n":
                self.starts.append(i + 1)

    def _line_text(self, line: int) -> str:
        start = self.starts[line]
        end = self.starts[line + 1] if line + 1 < len(self.starts) else len(self.text)
        return self.text[start:end]

    def position(self, line: int, column: int) -> tuple[int, int]:
        """(0-based line, UTF-16 character) of a 0-based line and code point column (clamped)."""
        if line >= len(self.starts):
            return self.end()
        line = max(line, 0)
        prefix = self._line_text(line)[:max(column, 0)]
        return line, _units(prefix, self.encoding)

    def at_offset(self, offset: int) -> tuple[int, int]:
        """The LSP position of a code point offset into the text."""
        import bisect

        line = bisect.bisect_right(self.starts, offset) - 1
        return line, _units(self.text[self.starts[line]:offset], self.encoding)

    def end(self) -> tuple[int, int]:
        return self.at_offset(len(self.text))

    def line_end(self, line: int) -> tuple[int, int]:
        if line >= len(self.starts):
            return self.end()
        return line, _units(self._line_text(line).rstrip("\r\n"), self.encoding)


def _units(s: str, encoding: str) -> int:
    if encoding == "utf-32":
        return len(s)
    if encoding == "utf-8":
        return len(s.encode("utf-8", errors="surrogatepass"))
    return len(s.encode("utf-16-le", errors="surrogatepass")) // 2


Range = tuple[tuple[int, int], tuple[int, int]]


def finding_range(f: Finding, lines: Lines) -> Range:
    start = lines.position(f.line - 1, f.column - 1)
    if f.end_line:
        end = lines.position(f.end_line - 1, f.end_column - 1)
    else:
        end = lines.line_end(f.line - 1)
    return start, max(start, end)


def held_reason(f: Finding) -> str | None:
    """Why the program model holds the finding's fix back: for an unsafe fix (offered as an unsafe
    quick fix), why `apply --unsafe-fixes` would."""
    if f.held:
        return f.held
    if f.applicability is Applicability.UNSAFE:
        return f.held_unsafe
    return None


def fix_label(f: Finding, more: int = 0) -> str | None:
    """What a quick fix for ``f`` is called (``more``: the other fixes of its migration unit that it
    writes too), or None when there is none to offer."""
    if f.applicability is Applicability.NONE or held_reason(f):
        return None
    label = f"Fix {f.rule_id}"
    if f.applicability is Applicability.UNSAFE:
        label += " (unsafe fix: may change behaviour)"
    if more:
        label += f" with {more} more fix{'es' if more > 1 else ''} of its migration unit"
    message = f.message if len(f.message) <= 90 else f.message[:89] + "…"
    return f"{label}: {message}"


def fix_mode(f: Finding) -> str:
    return "safe" if f.applicability is Applicability.SAFE else "unsafe"


def overlaps(a: Range, b: Range) -> bool:
    """Whether two ranges share a position (an empty range at a range's edge counts)."""
    return a[0] <= b[1] and b[0] <= a[1]


def minimal_edit(old: str, new: str, encoding: str = "utf-16") -> tuple[Range, str] | None:
    """One edit that turns ``old`` into ``new``: the changed middle between their common prefix and
    suffix (positions in ``old``), or None when they are equal."""
    if old == new:
        return None
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
        suffix += 1
    # never end or start an edit between the two characters of a CRLF
    while prefix and old[prefix - 1] == "\r":
        prefix -= 1
    while 0 < suffix < len(old) and old[len(old) - suffix] == "\n" and old[len(old) - suffix - 1] == "\r":
        suffix -= 1
    lines = Lines(old, encoding)
    start = lines.at_offset(prefix)
    end = lines.at_offset(len(old) - suffix)
    return (start, end), new[prefix:len(new) - suffix]


def rule_docs_url(rule_id: str) -> str | None:
    """Where the rule's documentation is: ``TS2EXPORT_RULES_URL`` (the address of docs/rules.md as
    published) with the rule's anchor, else docs/rules.md of a source checkout, else None."""
    from ts2export.engine.registry import rule_by_id

    rule = rule_by_id(rule_id)
    if rule is None:
        return None
    anchor = f"{rule.id.lower()}-{rule.name()}"
    base = os.environ.get("TS2EXPORT_RULES_URL")
    if base:
        return f"{base.split('#')[0]}#{anchor}"
    local = Path(__file__).resolve().parent.parent.parent / "docs" / "rules.md"
    return f"{local.as_uri()}#{anchor}" if local.is_file() else None
