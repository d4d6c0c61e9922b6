"""View of `pmpredict export`: what was written (exporters.common.ExportResult)."""

from __future__ import annotations


def json(result) -> dict:
    out = {"output": result.path, "format": result.format, "forms": result.forms,
           "skipped": list(result.skipped)}
    if result.format == "llvm":
        out["opcodes"] = result.opcodes
        out["writes"] = result.writes
        out["shared_opcodes"] = [{"opcode": op, "form": form, "others": list(others)}
                                 for op, form, others in result.shared]
    return out


def text(result) -> str:
    if result.format == "llvm":
        line = (f"wrote {result.path}: {result.opcodes} opcodes bound, "
                f"{len(result.shared)} opcodes shared by several forms\n")
    else:
        line = f"wrote {result.path}: {result.forms} instruction forms\n"
    if result.skipped:
        line += (f"{len(result.skipped)} forms not exported (listed in a comment in "
                 f"{result.path})\n")
    return line
