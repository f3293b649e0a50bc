"""Torch's errors that a held-back unit quotes, said in a sentence a user can act on.

A recording's proof (or an export the program ran) fails with torch's own words, which name an
internal class rather than the user's construct (``CellParamsBase ... does not have a field with
name '__obj_flatten__'`` is a dynamically quantized LSTM). Each known class of failure has a
sentence (what the construct is, why torch.export refuses it on this torch, what to do) and a
section of docs/holds.md with the migration a person would write. Checked on torch 2.13.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DOCS = "docs/holds.md"


@dataclass(frozen=True)
class KnownError:
    key: str  # the anchor of its section in docs/holds.md
    pattern: re.Pattern
    sentence: str

    @property
    def see(self) -> str:
        return f"{DOCS}#{self.key}"


KNOWN = (
    KnownError("quantized-modules", re.compile(
        r"__obj_flatten__|CellParamsBase|LinearPackedParamsBase|Conv\dPackedParamsBase|quantized::linear_dynamic"),
        "the model holds dynamically quantized layers (torch.ao.quantization.quantize_dynamic packs their weights "
        "into TorchScript custom classes), which torch.export cannot trace on this torch: export the float model, "
        "then quantize the exported program (the PT2E flow) or lower it with a quantizing backend, and check the "
        "outputs within quantization tolerance"),
    KnownError("custom-classes", re.compile(r"torch\.classes\.|ScriptObject|does not have a field with name|FakeScriptObject"),
               "the model holds a TorchScript custom class (a TorchBind object): torch.export needs a fake class "
               "registered for it (torch._library.register_fake_class) or the object replaced by tensors"),
    KnownError("non-leaf-parameters", re.compile(r"Cannot assign non-leaf Tensor to parameter"),
               "some parameters are not leaves (written with copy_ while grad mode was on, as conv and batch-norm "
               "fusing helpers do): make them leaves before exporting (fuse under torch.no_grad(), or replace each "
               "with nn.Parameter(p.detach()))"),
    KnownError("data-dependent-code", re.compile(
        r"GuardOnDataDependentSymNode|Could not guard on data-dependent|Data-dependent branching|data-dependent expression"),
        "the code decides on a tensor's values (an if, a loop count, or a size read from data): rewrite the branch "
        "with torch.cond (TSX401 does for an if in forward) or state the size with torch._check"),
    KnownError("specialized-sizes", re.compile(r"Guard failed|Constraints violated|specialized to|not in range"),
               "the export fixed a size the program calls with other values (a recurrent layer's sequence length, a "
               "Python if on an input's size, a size-1 example): export with an example at a size in the range the "
               "program serves, or keep the size static where it is"),
    KnownError("scripted-children", re.compile(r"Exporting a ScriptModule is not supported|RecursiveScriptModule"),
               "the model holds a scripted or traced part: export the eager module (ts2export's TSX106 rewrites one "
               "stored in __init__) and keep no ScriptModule inside it"),
)


def explain(error: str) -> KnownError | None:
    """The known class of a torch error's text, if any (the first that matches, most specific first)."""
    for known in KNOWN:
        if known.pattern.search(error or ""):
            return known
    return None


def with_sentence(error: str) -> str:
    """``error`` followed by what it means and what to do, where its class is known."""
    known = explain(error)
    if known is None:
        return error
    return f"{error} ({known.sentence}; see {known.see})"
