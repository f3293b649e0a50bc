"""Fixtures that build real TorchScript artifacts from the corpus models (nothing is committed).

Converted and lowered artifacts are cached for the session: lowering takes seconds per model.
"""

from __future__ import annotations

import importlib.util
import logging
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus" / "models"

# Corpus models that go through the whole chain (convert, verify, lower, verify).
CHAIN_MODELS = [
    "small_cnn",
    "multi_input_mlp",
    "dict_tuple_outputs",
    "embedding_bag",
    "branchy",
    "mx_block_scaled",
    "multi_method",
    "loop_accumulate",
    "mixed_dtypes",
]


def load_corpus(name: str, builder: str = "build") -> tuple[Any, Any, list[str], str]:
    """(model, example_inputs, specs, legacy) from corpus/models/<name>.py."""
    path = CORPUS / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"corpus_models_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model, example, specs = getattr(module, builder)()
    return model, example, specs, module.LEGACY


def save_torchscript(model: torch.nn.Module, example: Any, legacy: str, path: Path) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = torch.jit.script(model) if legacy == "script" else torch.jit.trace(model, example)
        ts.save(str(path))
    return path


def method_specs(name: str, specs: list[str]) -> tuple[list[str], list[str]]:
    """(--input specs, --method names) used to convert corpus model `name`."""
    if name == "multi_method":
        return specs + [f"encode:{specs[0]}"], ["forward", "encode"]
    return specs, []


class Artifacts:
    """Builds and caches .pt / .pt2 / .pte for corpus models in one session directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[tuple[str, str], Path] = {}

    def torchscript(self, name: str, builder: str = "build", legacy: str | None = None) -> Path:
        key = (f"{name}:{builder}:{legacy}", "pt")
        if key not in self._cache:
            model, example, _, default_legacy = load_corpus(name, builder)
            self._cache[key] = save_torchscript(
                model, example, legacy or default_legacy, self.root / f"{name}-{builder}-{legacy or default_legacy}.pt"
            )
        return self._cache[key]

    def specs(self, name: str, builder: str = "build") -> tuple[list[str], list[str]]:
        _, _, specs, _ = load_corpus(name, builder)
        return method_specs(name, specs)

    def pt2(self, name: str) -> Path:
        key = (name, "pt2")
        if key not in self._cache:
            from ts2export.artifact.convert import convert

            specs, methods = self.specs(name)
            out = self.root / f"{name}.pt2"
            with _quiet():
                convert(str(self.torchscript(name)), str(out), specs, None, methods)
            self._cache[key] = out
        return self._cache[key]

    def pte(self, name: str) -> Path:
        key = (name, "pte")
        if key not in self._cache:
            from ts2export.artifact.lower import lower

            out = self.root / f"{name}.pte"
            with _quiet():
                lower(str(self.pt2(name)), str(out))
            self._cache[key] = out
        return self._cache[key]


class _quiet:
    def __enter__(self) -> None:
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")
        logging.disable(logging.CRITICAL)

    def __exit__(self, *exc: Any) -> None:
        logging.disable(logging.NOTSET)
        self._w.__exit__(*exc)


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Artifacts:
    return Artifacts(tmp_path_factory.mktemp("artifacts"))


@pytest.fixture
def cli():
    """Invoke the artifact commands on a fresh typer app: returns (exit code, stdout, stderr)."""
    import typer
    from typer.testing import CliRunner

    from ts2export.artifact.cli import register

    app = typer.Typer()
    register(app)

    @app.callback()
    def _root() -> None:
        """ts2export (test app)"""

    def run(*args: Any) -> tuple[int, str, str]:
        result = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
        return result.exit_code, result.stdout, result.stderr

    return run
