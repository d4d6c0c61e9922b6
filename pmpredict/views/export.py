"""View of `pmpredict export`: what was written (exporters.common.ExportResult)."""

from __future__ import annotations


def json(result) -> dict:
    return {"output": result.path, "format": result.format, "forms": result.forms,
            "skipped": list(result.skipped), **result.json_details()}


def text(result) -> str:
    line = f"wrote {result.path}: {result.written()}\n"
    if result.skipped:
        line += (f"{len(result.skipped)} forms not exported (listed in a comment in "
                 f"{result.path})\n")
    return line
