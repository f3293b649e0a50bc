"""Merging what `ts2export record` collected: shards of processes, and sites sharing an artifact.

Each process under `ts2export record` writes one shard (see ts2export.record.hooks): per call site
the inputs of every method, aggregated. `merge_shards` folds them into one recording; the same
functions merge the methods of several call sites (the sites that saved or loaded one artifact) in
ts2export.record.recording. Pure data: the standard library only.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ts2export.record.hooks.variants import empty_method, merge_method

FORMAT = "ts2export-recording"
VERSION = 1
SAMPLES_PER_METHOD = 3
SAMPLE_FILE_BYTES = 64 << 20


# ---- shards -> recording ---------------------------------------------------------------------------------


def read_shards(shard_dir: str | os.PathLike[str]) -> list[dict]:
    """Every complete shard in the folder (a shard being replaced is read in its last full state)."""
    shards = []
    for path in sorted(Path(shard_dir).glob("shard-*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if data.get("format") == "ts2export-record-shard":
            shards.append(data)
    return shards


def _relative(path: str, cwd: str) -> str:
    try:
        return Path(path).relative_to(cwd).as_posix()
    except ValueError:
        return path


_PROOF_RANK = {"skipped": 0, "proven": 1, "failed": 2}


def merge_shards(shards: list[dict], cwd: str) -> tuple[dict, list[dict]]:
    """(recording without samples, candidate samples) from the shards of one run.

    Candidate samples: {"site": i, "method": name, "variant": j, "file": shard-file, "shapes": ..., "bytes": n}."""
    sites: dict[tuple, dict] = {}
    candidates: list[dict] = []
    errors, first_error = 0, None
    for shard in shards:
        errors += shard.get("errors", 0)
        first_error = first_error or shard.get("error")
        for s in shard.get("sites", []):
            key = (s["kind"], s["file"], s["line"], s["col"], s["target"])
            site = sites.get(key)
            if site is None:
                site = sites[key] = {k: s[k] for k in ("kind", "file", "line", "end_line", "col", "end_col", "function", "target")}
                site.update(created=0, artifacts=[], saved=[], methods={})
            site["created"] += s.get("created", 0)
            for field in ("artifacts", "saved"):
                for p in s.get(field, []):
                    if p not in site[field]:
                        site[field].append(p)
            for field in ("compiled", "callers"):  # (a recording made before they were kept has none)
                if field in s:
                    into = site.setdefault(field, [])
                    into.extend(e for e in s[field] if e not in into)
            if s.get("proof") and _PROOF_RANK.get(s["proof"].get("verdict"), 0) > _PROOF_RANK.get(site.get("proof", {}).get("verdict"), -1):
                site["proof"] = s["proof"]  # one process's failure outweighs another's success
            for name, m in s.get("methods", {}).items():
                into = site["methods"].setdefault(name, empty_method())
                mapping = dict(merge_method(into, m))
                for sample in m.get("samples", []):
                    candidates.append({"key": key, "method": name, "variant": mapping.get(sample["variant"], 0), **{k: sample[k] for k in ("file", "shapes", "bytes")}})
    ordered = sorted(sites.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][3], kv[0][0], kv[0][4]))
    ids = {key: f"s{i + 1}" for i, (key, _) in enumerate(ordered)}
    out_sites = []
    artifacts: dict[str, dict] = {}
    for key, site in ordered:
        site = {"id": ids[key], **site, "path": _relative(site["file"], cwd)}
        site["artifacts"] = sorted(site["artifacts"])
        site["saved"] = sorted(site["saved"])
        for field in ("compiled", "callers"):  # what the call compiled, the calls that led to it: files relative to the run's folder
            if field in site:
                site[field] = sorted([_relative(file, cwd), value] for file, value in site[field])
        out_sites.append(site)
        for p in site["artifacts"]:
            artifacts.setdefault(p, {"saved_by": [], "loaded_by": []})["loaded_by"].append(site["id"])
        for p in site["saved"]:
            artifacts.setdefault(p, {"saved_by": [], "loaded_by": []})["saved_by"].append(site["id"])
    for c in candidates:
        c["site"] = ids[c.pop("key")]
    recording = {
        "format": FORMAT,
        "version": VERSION,
        "cwd": cwd,
        "processes": len(shards),
        "recorder_errors": errors,
        "recorder_error": first_error,
        "sites": out_sites,
        "artifacts": [{"file": p, "path": _relative(p, cwd), **artifacts[p]} for p in sorted(artifacts)],
    }
    return recording, candidates


def pick_samples(candidates: list[dict], per_method: int, max_bytes: int) -> list[dict]:
    """Up to `per_method` samples per (site, method), distinct shapes first, small ones first, within max_bytes."""
    by_method: dict[tuple, list[dict]] = {}
    for c in candidates:
        by_method.setdefault((c["site"], c["method"]), []).append(c)
    chosen, total = [], 0
    for key in sorted(by_method):
        seen: set[str] = set()
        picked = 0
        for c in sorted(by_method[key], key=lambda c: (c["bytes"], c["file"])):
            shape = json.dumps(c["shapes"])
            if picked >= per_method or shape in seen or total + c["bytes"] > max_bytes:
                continue
            seen.add(shape)
            chosen.append(c)
            picked += 1
            total += c["bytes"]
    return chosen


def dumps(obj: Any, width: int = 100, indent: str = "") -> str:
    """JSON, one value per line except containers that fit on one line of `width` characters."""
    flat = json.dumps(obj, separators=(", ", ": "))
    if not isinstance(obj, (dict, list)) or len(flat) + len(indent) <= width or not obj:
        return flat
    inner = indent + "  "
    if isinstance(obj, list):
        items = [inner + dumps(v, width, inner) for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + indent + "]"
    items = [inner + json.dumps(k) + ": " + dumps(v, width, inner) for k, v in obj.items()]
    return "{\n" + ",\n".join(items) + "\n" + indent + "}"


def samples_path(recording_path: Path) -> Path:
    """The samples archive next to a recording: `name.json` -> `name.samples.zip`."""
    p = Path(recording_path)
    return p.with_suffix(".samples.zip") if p.suffix == ".json" else p.with_name(p.name + ".samples.zip")
