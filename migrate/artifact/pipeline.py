"""migrate-artifact: convert -> verify -> lower -> verify, with a markdown + JSON report."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ts2export.artifact.convert import ConvertReport, convert
from ts2export.artifact.errors import EXIT_ERROR, EXIT_MISMATCH, EXIT_OK, ArtifactError
from ts2export.artifact.fsutil import write_text_atomic
from ts2export.artifact.loading import load_pt2
from ts2export.artifact.lower import LowerReport, lower
from ts2export.artifact.package import PackageReport, package
from ts2export.artifact.verify import (
    PteRunner,
    ReferenceRunner,
    TorchScriptRunner,
    VerifyReport,
    compare_runs,
    input_sets_for,
    verify,
)


@dataclasses.dataclass
class MigrateReport:
    source: str
    out_dir: str
    steps: list[dict[str, Any]]
    convert: ConvertReport | None = None
    verify_pt2: VerifyReport | None = None
    package: PackageReport | None = None
    verify_package: VerifyReport | None = None
    lower: LowerReport | None = None
    verify_pte: VerifyReport | None = None
    error: str | None = None

    @property
    def exit_code(self) -> int:
        if self.error:
            return EXIT_ERROR
        if any(v is not None and not v.ok for v in (self.verify_pt2, self.verify_package, self.verify_pte)):
            return EXIT_MISMATCH
        return EXIT_OK

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": {EXIT_OK: "pass", EXIT_MISMATCH: "mismatch", EXIT_ERROR: "error"}[self.exit_code],
            "source": self.source,
            "out_dir": self.out_dir,
            "error": self.error,
            "steps": self.steps,
            "convert": dataclasses.asdict(self.convert) if self.convert else None,
            "verify_pt2": self.verify_pt2.to_dict() if self.verify_pt2 else None,
            "package": self.package.to_dict() if self.package else None,
            "verify_package": self.verify_package.to_dict() if self.verify_package else None,
            "lower": self.lower.to_dict() if self.lower else None,
            "verify_pte": self.verify_pte.to_dict() if self.verify_pte else None,
        }

    def to_markdown(self) -> str:
        d = self.to_dict()
        out = [f"# ts2export migrate-artifact: `{self.source}`", "", f"Status: **{d['status']}**", ""]
        if self.error:
            out += [f"Error: `{self.error}`", ""]
        out += ["| step | result | seconds | detail |", "|---|---|---|---|"]
        for s in self.steps:
            out.append(f"| {s['step']} | {s['result']} | {s['seconds']:.2f} | {s.get('detail', '')} |")
        if self.convert:
            out += ["", "## Convert", ""]
            out.append(f"Methods in the TorchScript module: {', '.join(self.convert.available)}")
            out.append("")
            for m in self.convert.methods:
                out.append(f"- `{m.method}`: {m.strategy}; inputs {', '.join(m.inputs)}")
                out += [f"  - {n}" for n in m.notes]
        verifications = (
            ("Verify: TorchScript vs .pt2", self.verify_pt2),
            ("Verify: TorchScript vs AOTInductor package", self.verify_package),
            ("Verify: TorchScript vs .pte", self.verify_pte),
        )
        for title, rep in verifications:
            if rep is None:
                continue
            out += ["", f"## {title}", "", "```", rep.to_text(), "```"]
        if self.package:
            out += ["", "## Package", "", "```", self.package.to_text(), "```"]
        if self.lower:
            out += ["", "## Lower", "", "```", self.lower.to_text(), "```"]
        return "\n".join(out) + "\n"


def migrate_artifact(
    old: str,
    out_dir: str | None = None,
    specs: Sequence[str] = (),
    inputs_file: str | None = None,
    methods: Sequence[str] = (),
    backend: str = "xnnpack",
    device: str = "auto",
    samples: int = 3,
    seed: int = 0,
    reference: str | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    do_lower: bool = True,
    to_device: str | None = None,
    do_package: bool = False,
) -> MigrateReport:
    """convert (on the artifact's device, see devices.choose_device) -> verify -> [package ->
    verify the package] -> [lower -> verify the .pte]; stops at the first error."""
    src = Path(old)
    out = Path(out_dir) if out_dir else Path(f"{src.stem}_export")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ArtifactError(f"cannot create {out}: {exc.strerror}") from None
    pt2 = out / f"{src.stem}.pt2"
    pte = out / f"{src.stem}.pte"
    pkg = out / f"{src.stem}_aoti.pt2"
    report = MigrateReport(str(src), str(out), [])

    def step(name: str, fn: Any, describe: Any) -> Any:
        t0 = time.perf_counter()
        try:
            value = fn()
        except ArtifactError as exc:
            report.steps.append({"step": name, "result": "error", "seconds": time.perf_counter() - t0, "detail": str(exc)})
            report.error = f"{name}: {exc}"
            raise
        result, detail = describe(value)
        report.steps.append({"step": name, "result": result, "seconds": time.perf_counter() - t0, "detail": detail})
        return value

    def verdict(v: VerifyReport) -> tuple[str, str]:
        return ("pass" if v.ok else "mismatch", f"{len(v.comparisons)} comparisons, {len(v.mismatches())} mismatches")

    try:
        report.convert = step(
            "convert",
            lambda: convert(old, str(pt2), specs, inputs_file, methods, seed, device, to_device),
            lambda r: ("ok", ", ".join(f"{m.method} via {m.strategy}" for m in r.methods) + f" on {r.device}"),
        )
        report.verify_pt2 = step(
            "verify .pt2",
            lambda: verify(old, str(pt2), (), None, device, samples, rtol, atol, seed, reference),
            verdict,
        )
        if do_package:
            target = report.verify_pt2.device
            report.package = step(
                "package",
                lambda: package(str(pt2), str(pkg), target),
                lambda r: ("ok", f"{r.size_bytes} bytes for {r.device}"),
            )
            report.verify_package = step(
                "verify package",
                lambda: verify(old, str(pkg), (), None, device, samples, rtol, atol, seed, reference),
                verdict,
            )
        if do_lower:
            report.lower = step(
                "lower",
                lambda: lower(str(pt2), str(pte), backend),
                lambda r: ("ok", f"{r.size_bytes} bytes, " + ", ".join(f"{m.method} {100 * m.share:.0f}% delegated" for m in r.methods)),
            )
            report.verify_pte = step(
                "verify .pte",
                lambda: _verify_pte(old, str(pt2), str(pte), samples, seed, rtol, atol, reference, device),
                verdict,
            )
    except ArtifactError:
        pass
    write_text_atomic(out / "report.json", json.dumps(report.to_dict(), indent=2))
    write_text_atomic(out / "report.md", report.to_markdown())
    return report


def _verify_pte(
    old: str, pt2: str, pte: str, samples: int, seed: int, rtol: float | None, atol: float | None,
    reference: str | None, device: str = "auto",
) -> VerifyReport:
    """The TorchScript model (on its device) against the .pte (on CPU), on the .pt2's stored and
    generated inputs."""
    programs, meta = load_pt2(pt2)
    t0 = time.perf_counter()
    old_runner = TorchScriptRunner(old, device, prefer_accelerator=False)
    runners: dict[str, Any] = {
        "old": old_runner,
        "new": PteRunner(pte, {m: ep.call_spec.out_spec for m, ep in programs.items()}),
    }
    if reference:
        runners["reference"] = ReferenceRunner(reference, old_runner.device)
    comparisons = []
    for m, ep in programs.items():
        sets = input_sets_for(m, ep, meta, (), None, samples, seed, runners["new"].planned_sizes(m))
        comparisons.extend(compare_runs(m, sets, runners, rtol, atol, False))
    return VerifyReport(old, pte, str(old_runner.device), list(old_runner.notes), comparisons, {"run_compare": time.perf_counter() - t0})
