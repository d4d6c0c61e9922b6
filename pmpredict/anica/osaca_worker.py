"""The child process that runs OSACA for AnICA: `python -m pmpredict.anica.osaca_worker ARCH
TIMEOUT_S`, one JSON list of Intel-syntax lines per input line, one JSON answer per output line
({"cycles": max(TP, LCD)} or {"cycles": null, "failure": ..., "message": ...}), flushed after
each block so that the parent keeps every answer given before a crash or a hang.

OSACA is analysed through its Python API the way `osaca --arch ARCH` analyses a kernel (optimal
port balancing twice, the dependency graph); like its command line it gives no prediction when
an instruction is missing from its machine file.
"""

from __future__ import annotations

import json
import signal
import sys
import warnings


class _Timeout(Exception):
    pass


def _expire(signum, frame):
    raise _Timeout()


def analyse(lines: list[str], machine, parser) -> dict:
    # deferred: OSACA itself, in this child only
    from osaca.semantics import INSTR_FLAGS, ArchSemantics, KernelDG
    text = "\n".join(lines) + "\n"
    kernel = parser.parse_file(text)
    kernel = [x for x in kernel if x.mnemonic is not None]
    sem = ArchSemantics(parser, machine)
    sem.normalize_instruction_forms(kernel)
    sem.add_semantics(kernel)
    unknown = [" ".join(x.line.split()) for x in kernel if INSTR_FLAGS.TP_UNKWN in x.flags]
    if unknown:
        return {"cycles": None, "failure": "unsupported",
                "message": f"not in OSACA's machine file: {unknown[0]}"}
    sem.assign_optimal_throughput(kernel)
    sem.assign_optimal_throughput(kernel)
    dg = KernelDG(kernel, parser, machine, sem, 10, False)
    tp_sum = ArchSemantics.get_throughput_sum(kernel)
    tp = float(max(tp_sum)) if tp_sum else 0.0
    deps = dg.get_loopcarried_dependencies()
    lcd = float(max((d["latency"] for d in deps.values()), default=0.0))
    cycles = max(tp, lcd)
    if not cycles > 0:
        return {"cycles": None, "failure": "invalid", "message": f"predicted 0 cycles "
                                                                  f"(TP {tp}, LCD {lcd})"}
    return {"cycles": cycles}


def main(argv: list[str]) -> int:
    arch, timeout_s = argv[0].upper(), float(argv[1])
    warnings.simplefilter("ignore")
    # deferred: OSACA itself, in this child only
    from osaca.parser import ParserX86Intel
    from osaca.semantics import MachineModel
    machine = MachineModel(arch=arch)
    parser = ParserX86Intel()
    signal.signal(signal.SIGALRM, _expire)
    for request in sys.stdin:
        lines = json.loads(request)
        try:
            signal.setitimer(signal.ITIMER_REAL, timeout_s)
            answer = analyse(lines, machine, parser)
        except _Timeout:
            answer = {"cycles": None, "failure": "timeout",
                      "message": f"no answer within {timeout_s:g} s"}
        except Exception as exc:                  # OSACA's own failure is the finding
            answer = {"cycles": None, "failure": "crash",
                      "message": f"{type(exc).__name__}: {exc}"[:300]}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
