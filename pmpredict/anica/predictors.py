"""Throughput predictors as black boxes for AnICA: pmpredict with a model, llvm-mca, OSACA, and
this host's hardware.

A predictor is named on the command line by a spec:

    pmpredict:MODEL        a built-in model name, a model file, or `host` (this machine's model)
    llvm-mca[-V]:CPU       any llvm-mca on PATH (`llvm-mca-19:skylake`, `llvm-mca:native`)
    osaca:ARCH             OSACA's machine file for ARCH (SKX, ZEN4, ...)
    measure                this host, timed by the block harness (pmpredict measure)

Each answers many blocks per call (`predict(texts)`), a block being its Intel-syntax
instruction lines; every answer is an `Outcome`: cycles per iteration, or a failure that says
what went wrong (`unsupported`: the tool does not know an instruction; `crash`: it died or
printed no answer; `timeout`; `invalid`: it answered zero or less). A failure is a finding of its own, never an exception.
`identity()` says what the answers depend on (tool version, model contents, CPU), which keys
the result cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from pmpredict.errors import InputError

UNSUPPORTED = "unsupported"
CRASH = "crash"
TIMEOUT = "timeout"
INVALID = "invalid"            # an answer that is no throughput (zero, negative, NaN)
FAILURES = (UNSUPPORTED, CRASH, TIMEOUT, INVALID)

DEFAULT_TIMEOUT_S = 60.0           # per block and call; a batch gets this per block it holds
LLVM_MCA_ITERATIONS = 1000         # warm-up and drain add < 0.01 cycle per iteration
INTEL_HEADER = ".intel_syntax noprefix\n"


@dataclass(frozen=True)
class Outcome:
    """One predictor's answer for one block: cycles per iteration, or why there are none."""
    cycles: float | None
    failure: str | None = None      # one of FAILURES when cycles is None
    message: str = ""

    @classmethod
    def failed(cls, failure: str, message: str) -> "Outcome":
        return cls(None, failure, " ".join(message.split())[:300])


def block_text(lines) -> str:
    return INTEL_HEADER + "\n".join(lines) + "\n"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class BlockPredictor:
    """The interface: `spec` (as given), `label` (short, for reports), `local_only` (must run
    on this host, one call at a time), identity(), predict(texts)."""
    spec: str
    label: str
    local_only = False

    def identity(self) -> str:
        raise NotImplementedError

    def predict(self, blocks: list[tuple[str, ...]]) -> list[Outcome]:
        raise NotImplementedError


class PmpredictPredictor(BlockPredictor):
    """pmpredict's own prediction, in process. A block with an instruction the model does not
    know is `unsupported` (pmpredict's figure would be a lower bound, not a prediction)."""

    def __init__(self, spec: str, model_spec: str, model=None):
        self.spec = spec
        self.model_spec = model_spec
        self._model = model
        self._predictor = None
        self.label = f"pmpredict:{os.path.basename(model_spec)}"

    def __getstate__(self):
        # sent to cluster workers: the model travels, the prepared Predictor is rebuilt there
        return {**self.__dict__, "_predictor": None}

    def model(self):
        if self._model is None:
            # deferred: the model loaders and this machine's model, when the predictor runs
            from pmpredict.formats.model_files import load_model
            from pmpredict.host.model import load_cached
            self._model = load_model(self.model_spec, host=load_cached)
        return self._model

    def reload(self) -> None:
        """Forget the model read so far: the next use reads it again (this machine's model,
        after a measurement added to it)."""
        self._model, self._predictor = None, None

    def identity(self) -> str:
        # deferred: the version is read once per campaign
        from pmpredict import __version__
        content = json.dumps(self.model().to_json(), sort_keys=True)
        return f"pmpredict {__version__} model {_digest(content)}"

    def predict(self, blocks):
        # deferred: the prediction engine (numpy, the matcher) only where pmpredict predicts
        from pmpredict.asm.kernel import select_kernel
        from pmpredict.asm.parse import parse
        from pmpredict.predict.predictor import Predictor
        if self._predictor is None:
            self._predictor = Predictor(self.model(), criticality=False)
        out = []
        for lines in blocks:
            try:
                kernel = select_kernel(parse(block_text(lines), "intel", "<block>"))
                report = self._predictor.predict(kernel, "intel", "<block>")
            except InputError as exc:
                out.append(Outcome.failed(UNSUPPORTED, exc.message))
                continue
            except Exception as exc:               # a crash of the tool is a finding
                out.append(Outcome.failed(CRASH, f"{type(exc).__name__}: {exc}"))
                continue
            unknown = report.unmatched
            if unknown:
                out.append(Outcome.failed(UNSUPPORTED, "not in the model: " +
                                          unknown[0].text.strip()))
            elif report.cycles is None or not report.cycles > 0:
                out.append(Outcome.failed(INVALID, f"predicted {report.cycles} cycles"))
            else:
                out.append(Outcome(float(report.cycles)))
        return out


_MCA_REGION = re.compile(r"\[\d+\] Code Region - (b\d+)(.*?)(?=\[\d+\] Code Region - |\Z)", re.S)


class LlvmMcaPredictor(BlockPredictor):
    """llvm-mca on PATH: cycles per iteration = Total Cycles / Iterations. A batch is one run
    with a region per block; when that run fails, each block runs alone, so one bad block
    fails alone."""

    def __init__(self, spec: str, executable: str, cpu: str, timeout_s: float):
        self.spec = spec
        self.executable = executable
        self.cpu = cpu
        self.timeout_s = timeout_s
        self.label = f"{executable}:{cpu}"

    def _path(self) -> str:
        path = shutil.which(self.executable)
        if path is None:
            raise InputError("<command line>", f"{self.executable} not found on PATH "
                                               f"(predictor {self.spec})")
        return path

    def identity(self) -> str:
        out = subprocess.run([self._path(), "--version"], capture_output=True, text=True,
                             timeout=30).stdout
        version = re.search(r"LLVM version ([\w.]+)", out)
        host = re.search(r"Host CPU:\s*(\S+)", out) if self.cpu == "native" else None
        return (f"llvm-mca {version.group(1) if version else '?'} -mcpu={self.cpu}"
                + (f" ({host.group(1)})" if host else ""))

    def _run(self, blocks, timeout: float):
        text = INTEL_HEADER
        for i, lines in enumerate(blocks):
            text += f"# LLVM-MCA-BEGIN b{i}\n" + "\n".join(lines) + f"\n# LLVM-MCA-END b{i}\n"
        with tempfile.TemporaryDirectory(prefix="pmpredict-anica-") as tmp:
            path = os.path.join(tmp, "blocks.s")
            with open(path, "w") as fh:
                fh.write(text)
            return subprocess.run([self._path(), f"-mcpu={self.cpu}",
                                   f"-iterations={LLVM_MCA_ITERATIONS}", "-summary-view",
                                   "-instruction-info=false", "-resource-pressure=false", path],
                                  capture_output=True, text=True, timeout=timeout)

    def predict(self, blocks):
        if not blocks:
            return []
        try:
            done = self._run(blocks, self.timeout_s * len(blocks))
        except subprocess.TimeoutExpired:
            done = None
        if done is not None and done.returncode == 0:
            found = _mca_regions(done.stdout)
            if len(found) == len(blocks):
                return [found.get(f"b{i}") or Outcome.failed(CRASH, "no summary in its output")
                        for i in range(len(blocks))]
        if len(blocks) == 1:
            return [_mca_failure(done, self.timeout_s)]
        return [self.predict([lines])[0] for lines in blocks]


def _mca_regions(stdout: str) -> dict[str, Outcome]:
    found = {}
    for name, body in _MCA_REGION.findall(stdout):
        iterations = re.search(r"Iterations:\s+(\d+)", body)
        total = re.search(r"Total Cycles:\s+(\d+)", body)
        if iterations and total and int(iterations.group(1)) > 0:
            cycles = int(total.group(1)) / int(iterations.group(1))
            found[name] = Outcome(cycles) if cycles > 0 else \
                Outcome.failed(INVALID, f"predicted {cycles} cycles")
        else:
            found[name] = Outcome.failed(CRASH, "no summary in its output")
    return found


def _mca_failure(done, timeout_s: float) -> Outcome:
    if done is None:
        return Outcome.failed(TIMEOUT, f"no answer within {timeout_s:g} s")
    first = next((ln for ln in done.stderr.splitlines() if "error" in ln),
                 done.stderr.strip() or f"exit status {done.returncode}")
    first = re.sub(r"\S*blocks\.s", "block.s", first)
    if done.returncode < 0 or "Stack dump" in done.stderr or "PLEASE submit" in done.stderr:
        return Outcome.failed(CRASH, f"killed by signal {-done.returncode}: {first}"
                              if done.returncode < 0 else first)
    if "invalid instruction" in done.stderr or "unknown" in first or "error" in first:
        return Outcome.failed(UNSUPPORTED, first)
    return Outcome.failed(CRASH, first)


class OsacaPredictor(BlockPredictor):
    """OSACA's prediction max(TP, LCD), from its own Python API in a child process
    (pmpredict.anica.osaca_worker): a hang or a crash takes the child, not the campaign."""

    def __init__(self, spec: str, arch: str, timeout_s: float):
        self.spec = spec
        self.arch = arch.upper()
        self.timeout_s = timeout_s
        self.label = f"osaca:{self.arch}"

    def identity(self) -> str:
        try:
            # deferred: OSACA's version, read once per campaign
            from importlib.metadata import version
            return f"osaca {version('osaca')} {self.arch}"
        except Exception:                                    # not installed
            raise InputError("<command line>", f"OSACA is not installed (predictor {self.spec}); "
                                               "pip install osaca") from None

    def predict(self, blocks):
        out: list[Outcome] = []
        while len(out) < len(blocks):
            out.extend(self._child(blocks[len(out):]))
        return out

    def _child(self, blocks) -> list[Outcome]:
        """Run the blocks through one child; stops at the first block it dies or hangs on."""
        request = "".join(json.dumps(list(lines)) + "\n" for lines in blocks)
        try:
            done = subprocess.run([sys.executable, "-m", "pmpredict.anica.osaca_worker",
                                   self.arch, str(self.timeout_s)],
                                  input=request, capture_output=True, text=True,
                                  timeout=self.timeout_s * len(blocks) + 30)
            stdout, err, code = done.stdout, done.stderr, done.returncode
        except subprocess.TimeoutExpired as exc:
            stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            err, code = "", None
        out = []
        for line in stdout.splitlines():
            try:
                answer = json.loads(line)
            except ValueError:
                break
            out.append(Outcome(answer["cycles"]) if answer.get("cycles") is not None else
                       Outcome.failed(answer.get("failure", CRASH), answer.get("message", "")))
        if len(out) < len(blocks):                 # the child died or hung on the next block
            if code is None:
                out.append(Outcome.failed(TIMEOUT, f"no answer within {self.timeout_s:g} s"))
            else:
                last = (err.strip().splitlines() or [f"exit status {code}"])[-1]
                out.append(Outcome.failed(CRASH, last))
        return out


class MeasurePredictor(BlockPredictor):
    """This host, through the block harness of `pmpredict measure`: the blocks of a call are
    timed in one harness build, one call at a time, on this machine only."""
    local_only = True

    def __init__(self, spec: str = "measure"):
        self.spec = spec
        self.label = "measure"

    def identity(self) -> str:
        # deferred: the harness (numpy, the compiler check) when the hardware is asked
        from pmpredict.measure.cpu import cpu_identity
        from pmpredict.measure.instantiate import HARNESS_ISA
        from pmpredict.measure.runner import check_host
        try:
            check_host()
        except Exception as exc:
            raise InputError("<host>", f"cannot measure on this machine: {exc}") from None
        # deferred: the harness versions, part of what a block's timing depends on
        from pmpredict.measure.codegen import BLOCK_LOOP_VERSION, HARNESS_VERSION
        # the CPU identity ends in its feature flags (a kilobyte): a digest says the same
        vendor, family, model, stepping, name, *rest = cpu_identity().split("|")
        return (f"measure {HARNESS_ISA} harness {HARNESS_VERSION}.{BLOCK_LOOP_VERSION} {name} "
                f"({vendor} family "
                f"{family} model {model} stepping {stepping}) {_digest('|'.join(rest))}")

    def predict(self, blocks):
        # deferred: the harness (numpy, the compiler check) when the hardware is asked
        from pmpredict.measure.block import (BLOCK_OPTIONS, cached_block, measure_blocks,
                                             prepare_block)
        from pmpredict.measure.cache import ResultCache, default_cache_dir
        from pmpredict.measure.cpu import cpu_identity
        out: list[Outcome | None] = [None] * len(blocks)
        prepared = {}
        cache = ResultCache(default_cache_dir(), cpu_identity())
        try:
            for i, lines in enumerate(blocks):
                try:
                    block = prepare_block(block_text(lines), "intel", "<block>")
                except InputError as exc:
                    out[i] = Outcome.failed(UNSUPPORTED, exc.message)
                    continue
                hit = cached_block(cache, block, BLOCK_OPTIONS)
                if hit is not None:
                    out[i] = _timed(hit)
                else:
                    prepared[i] = block
            if prepared:
                timings = measure_blocks(list(prepared.values()), BLOCK_OPTIONS, cache)
                for i, timing in zip(prepared, timings):
                    out[i] = _timed(timing)
        finally:
            cache.close()
        return out


def _timed(timing) -> Outcome:
    if timing.cycles is not None and timing.cycles > 0:
        return Outcome(float(timing.cycles))
    why = getattr(timing, "error", None) or "the harness gave no cycles"
    # what the assembler refuses, this CPU does not run: not a failure of the harness
    return Outcome.failed(UNSUPPORTED if "does not assemble" in why else CRASH, why)


def parse_spec(spec: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> BlockPredictor:
    """The predictor a --predictor value names; an InputError for anything else."""
    spec = spec.strip()
    if spec == "measure":
        return MeasurePredictor(spec)
    tool, colon, arg = spec.partition(":")
    if not colon or not arg:
        raise InputError("<command line>", f"predictor {spec!r}: expected pmpredict:MODEL, "
                                           "llvm-mca[-VERSION]:CPU, osaca:ARCH or measure")
    if tool == "pmpredict":
        return PmpredictPredictor(spec, arg)
    if re.fullmatch(r"llvm-mca(-\d+)?", tool):
        if not re.fullmatch(r"[\w.+-]+", arg):
            raise InputError("<command line>", f"predictor {spec!r}: {arg!r} is not a CPU name")
        return LlvmMcaPredictor(spec, tool, arg, timeout_s)
    if tool == "osaca":
        if not re.fullmatch(r"[A-Za-z0-9]+", arg):
            raise InputError("<command line>", f"predictor {spec!r}: {arg!r} is not an "
                                               "OSACA architecture")
        return OsacaPredictor(spec, arg, timeout_s)
    raise InputError("<command line>", f"predictor {spec!r}: unknown tool {tool!r} (expected "
                                       "pmpredict, llvm-mca[-VERSION], osaca or measure)")
