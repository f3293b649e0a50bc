"""The language server, on pygls: documents checked as they change (debounced, one check at a time
in a worker thread so the server keeps answering), diagnostics published per document, and code
actions computed from the engine's fixes (a quick fix per finding under the cursor, and the
``source.fixAll.ts2export`` source action). Each document is analysed on its own: the program
model sees that one file (docs/editor.md)."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from ts2export import __version__
from ts2export.engine.document import check_document, fix_document
from ts2export.engine.tasks import FileResult
from ts2export.rule import Applicability, Finding
from ts2export.server.document import (
    FIX_ALL_KIND, SOURCE, Document, Lines, document, finding_range, fix_label, fix_mode, held_reason, minimal_edit,
    overlaps, rule_docs_url,
)

log = logging.getLogger(__name__)

#: How long typing must pause before a changed document is checked again.
DEBOUNCE_S = 0.3
PYTHON_SUFFIXES = (".py", ".pyi")


@dataclass
class Checked:
    """The last check of a document: the text it was run on, the engine's answer, its diagnostics."""

    text: str
    doc: Document
    result: FileResult | None
    diagnostics: list[lsp.Diagnostic]


class Ts2exportServer(LanguageServer):
    def __init__(self, debounce: float = DEBOUNCE_S) -> None:
        super().__init__("ts2export", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
        self.debounce = debounce
        self.pending: dict[str, asyncio.Task] = {}
        self.checked: dict[str, Checked] = {}
        self.said: set[str] = set()  # config problems already shown
        # one engine run at a time (a CPU-bound run; the event loop stays free for the protocol)
        self.engine = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ts2export-engine")

    @property
    def encoding(self) -> str:
        encoding = self.workspace.position_encoding or "utf-16"
        return str(getattr(encoding, "value", encoding))  # lsprotocol's enum: its value ("utf-8", ...)

    async def in_engine(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self.engine, fn, *args)

    async def fixed(self, doc: Document, mode: str, anchors: list[str] | None) -> FileResult | None:
        """The engine's fix of the document (None if it failed: logged, no action offered)."""
        try:
            return await self.in_engine(fix_document, doc.task, doc.options, mode, anchors)
        except Exception:
            log.exception("ts2export: fixing %s failed", doc.path)
            return None

    def schedule(self, uri: str, delay: float) -> None:
        """Check ``uri`` after ``delay`` seconds, replacing a check still waiting."""
        previous = self.pending.pop(uri, None)
        if previous is not None:
            previous.cancel()
        self.pending[uri] = asyncio.ensure_future(self._check_later(uri, delay))

    async def _check_later(self, uri: str, delay: float) -> None:
        await asyncio.sleep(delay)
        text = self.workspace.get_text_document(uri).source
        checked = await self.check(uri, text)
        if checked is None or uri not in self.workspace.text_documents:
            return  # closed meanwhile
        if self.workspace.get_text_document(uri).source != text:
            return  # the document changed meanwhile: its own check publishes
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=checked.diagnostics))

    async def check(self, uri: str, text: str) -> Checked | None:
        """The check of ``text`` (the last one when the text is the same)."""
        known = self.checked.get(uri)
        if known is not None and known.text == text:
            return known
        path = to_fs_path(uri) or uri
        try:
            doc, result = await self.in_engine(_analyse, path, text)
        except Exception:  # a bug of ours: logged, the editor keeps working
            log.exception("ts2export: checking %s failed", path)
            return None
        if doc.config_error and doc.config_error not in self.said:
            self.said.add(doc.config_error)
            self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning,
                                                           message=f"ts2export: {doc.config_error}"))
        if result is not None and result.error and result.error.startswith(("syntax error", "cannot parse")):
            if known is not None:
                return known  # half-typed code: the last diagnostics stand until it parses again
            diagnostics = []
        else:
            diagnostics = _diagnostics(uri, text, result, self.encoding)
        checked = Checked(text, doc, result, diagnostics)
        self.checked[uri] = checked
        return checked

    def forget(self, uri: str) -> None:
        pending = self.pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        self.checked.pop(uri, None)


def _warm() -> None:
    from ts2export.engine.registry import all_rules

    all_rules()


def _analyse(path: str, text: str) -> tuple[Document, FileResult | None]:
    doc = document(path, text)
    if doc.task is None:
        return doc, None
    return doc, check_document(doc.task, doc.options)


def _diagnostics(uri: str, text: str, result: FileResult | None, encoding: str) -> list[lsp.Diagnostic]:
    if result is None:
        return []
    lines = Lines(text, encoding)
    out = []
    if result.error:
        out.append(lsp.Diagnostic(range=_range(((0, 0), lines.line_end(0))), message=f"not checked: {result.error}",
                                  severity=lsp.DiagnosticSeverity.Warning, source=SOURCE))
    for f in result.findings:
        out.append(_diagnostic(uri, f, lines))
    return out


def _diagnostic(uri: str, f: Finding, lines: Lines) -> lsp.Diagnostic:
    where = _range(finding_range(f, lines))
    reason = held_reason(f)
    message = f.message
    related = None
    if reason:
        what = "fix held back" if f.held else "unsafe fix held back by `apply --unsafe-fixes`"
        message = f"{message} ({what}: {reason})"
        related = [lsp.DiagnosticRelatedInformation(location=lsp.Location(uri=uri, range=where),
                                                    message=f"held back: {reason}")]
    href = rule_docs_url(f.rule_id)
    return lsp.Diagnostic(
        range=where, message=message, severity=lsp.DiagnosticSeverity.Warning, code=f.rule_id, source=SOURCE,
        code_description=lsp.CodeDescription(href=href) if href else None, related_information=related,
        data={"anchor": f.anchor, "fix": f.applicability.value},
    )


def _range(r) -> lsp.Range:
    (sl, sc), (el, ec) = r
    return lsp.Range(start=lsp.Position(line=sl, character=sc), end=lsp.Position(line=el, character=ec))


def _wanted(kind: str, only) -> bool:
    return not only or any(kind == o or kind.startswith(f"{o}.") for o in only)


def _edit(uri: str, old: str, new: str, encoding: str) -> lsp.WorkspaceEdit | None:
    change = minimal_edit(old, new, encoding)
    if change is None:
        return None
    where, text = change
    return lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(range=_range(where), new_text=text)]})


def _is_python(server: Ts2exportServer, uri: str) -> bool:
    doc = server.workspace.get_text_document(uri)
    return getattr(doc, "language_id", None) == "python" or uri.endswith(PYTHON_SUFFIXES)


def build(debounce: float = DEBOUNCE_S) -> Ts2exportServer:
    server = Ts2exportServer(debounce)

    @server.feature(lsp.INITIALIZED)
    def initialized(ls: Ts2exportServer, params: lsp.InitializedParams) -> None:
        ls.engine.submit(_warm)  # the rules imported before the first document arrives

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: Ts2exportServer, params: lsp.DidOpenTextDocumentParams) -> None:
        if _is_python(ls, params.text_document.uri):
            ls.schedule(params.text_document.uri, 0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: Ts2exportServer, params: lsp.DidChangeTextDocumentParams) -> None:
        if _is_python(ls, params.text_document.uri):
            ls.schedule(params.text_document.uri, ls.debounce)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: Ts2exportServer, params: lsp.DidSaveTextDocumentParams) -> None:
        if _is_python(ls, params.text_document.uri):
            ls.checked.pop(params.text_document.uri, None)  # the config may have changed too
            ls.schedule(params.text_document.uri, 0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(ls: Ts2exportServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(
        code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.SourceFixAll, FIX_ALL_KIND]))
    async def code_action(ls: Ts2exportServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        return await _code_actions(ls, params)

    return server


async def _code_actions(ls: Ts2exportServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    uri = params.text_document.uri
    if not _is_python(ls, uri):
        return []
    text = ls.workspace.get_text_document(uri).source
    checked = await ls.check(uri, text)
    if checked is None or checked.result is None or checked.doc.task is None:
        return []
    doc, only, encoding = checked.doc, params.context.only, ls.encoding
    lines = Lines(text, encoding)
    actions: list[lsp.CodeAction] = []
    if _wanted(lsp.CodeActionKind.QuickFix, only):
        cursor = ((params.range.start.line, params.range.start.character),
                  (params.range.end.line, params.range.end.character))
        for f, diagnostic in zip(checked.result.findings, [d for d in checked.diagnostics if d.code]):
            label = fix_label(f)
            if label is None or not overlaps(finding_range(f, lines), cursor):
                continue
            fixed = await ls.fixed(doc, fix_mode(f), [f.anchor])
            edit = _edit(uri, text, doc.decode(fixed.new), encoding) if fixed is not None and fixed.changed else None
            if edit is not None:
                label = fix_label(f, max(len(fixed.fixed) - 1, 0))  # a fix migrates with its unit (docs/units.md)
                actions.append(lsp.CodeAction(title=label, kind=lsp.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                                              edit=edit, is_preferred=f.applicability is Applicability.SAFE))
    if _wanted(FIX_ALL_KIND, only) and any(
            f.applicability is Applicability.SAFE and not f.held for f in checked.result.findings):
        fixed = await ls.fixed(doc, "safe", None)
        edit = _edit(uri, text, doc.decode(fixed.new), encoding) if fixed is not None and fixed.changed else None
        if edit is not None:
            actions.append(lsp.CodeAction(title="ts2export: fix all safe findings", kind=FIX_ALL_KIND, edit=edit))
    return actions


def serve() -> None:
    """Serve over standard input and output until the client says exit."""
    build().start_io()
