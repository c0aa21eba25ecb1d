"""Case files: one shrunk counterexample as static JSON that replays against any target.

    {"format": "cascade-conformance-case", "version": 1, "invariant": "WIRE-2",
     "statement": "...", "case": {...}, "found_on": "python:...", "message": "...",
     "target_args": ["--target", "http://127.0.0.1:0", "--launch", "..."]}

``case`` is exactly what the invariant's property checks; it depends on nothing but the kit.
``target_args`` (optional) are the command-line words that reached the target it was found on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.catalogue import CATALOGUE

FORMAT = "cascade-conformance-case"
VERSION = 1


class CaseFileError(ValueError):
    pass


@dataclass(frozen=True)
class CaseFile:
    invariant: str
    case: dict[str, Any]
    found_on: str = ""
    message: str = ""
    target_args: tuple[str, ...] = ()


def write_case(path: Path, item: CaseFile) -> Path:
    document = {
        "format": FORMAT,
        "version": VERSION,
        "invariant": item.invariant,
        "statement": CATALOGUE[item.invariant].statement,
        "case": item.case,
        "found_on": item.found_on,
        "message": item.message,
    }
    if item.target_args:
        document["target_args"] = list(item.target_args)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_case(path: Path) -> CaseFile:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CaseFileError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise CaseFileError(f"{path}: not UTF-8 text: {exc.reason} at byte {exc.start}") from exc
    except json.JSONDecodeError as exc:
        raise CaseFileError(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno}") from exc
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise CaseFileError(f'{path}: not a case file (expected "format": "{FORMAT}")')
    version = document.get("version")
    if type(version) is not int or version != VERSION:  # JSON true and 1.0 are == 1 in Python
        raise CaseFileError(f"{path}: case file version {version!r}; this kit reads version {VERSION}")
    invariant = document.get("invariant")
    if not isinstance(invariant, str) or invariant not in CATALOGUE:
        raise CaseFileError(f"{path}: unknown invariant {invariant!r}")
    if not isinstance(document.get("case"), dict):
        raise CaseFileError(f'{path}: "case" must be an object')
    target_args = document.get("target_args", [])
    if not isinstance(target_args, list) or not all(isinstance(word, str) for word in target_args):
        raise CaseFileError(f'{path}: "target_args" must be a list of strings')
    return CaseFile(
        invariant, document["case"], document.get("found_on", ""), document.get("message", ""), tuple(target_args)
    )
