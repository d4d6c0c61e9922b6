"""Counter-example-guided port mapping inference (Ritter, ch. 4, Algorithm 4.1).

    Experiments <- the singletons, measured
    loop
        m1 <- findMapping(Experiments)                    (None: no mapping explains them)
        m2, e <- findOtherMapping(Experiments, m1)        (none: m1 is the answer)
        Experiments <- Experiments + (e, measure(e))

findMapping asks the SMT solver for a mapping consistent with every measurement;
findOtherMapping for a second consistent mapping m2 and an experiment e on which m1 and m2
disagree by more than the noise can hide (|t1 - t2| > 2 eps |e|; eps = 0: t1 != t2). Both
share one incremental solver (4.3): the free mapping and every measured experiment are
asserted once, findOtherMapping's constraints are pushed and popped. The encodings are in
infer/smt_encoding.py.

As in the thesis (4.3): the experiments start with every form alone; the experiments asked
for are stratified by size (at most b forms, b = 2, 3, ...; when none of size <= b
distinguishes, an unbounded query decides whether to go on with b + 1 or stop, so the result
is complete and only small experiments are measured); a measurement is consistent when
its cycles per instruction are within eps of the model's; an R_max cap makes the model's
throughput max(ports, |e| / R_max). The uops per form are bounded by --max-uops and by the
singleton (n uops need at least n / P cycles), and ports (and a form's uop slots) are
symmetry-broken.

After a measurement, m1 stays if it explains it, else m2 if it does (both satisfied the
earlier experiments by construction), and only otherwise is findMapping called again.

Stopping: `should_stop()` (a deadline) is polled between solver calls and by a watchdog
thread that interrupts a running check; SIGTERM and Ctrl-C interrupt a check too (z3 runs
without the GIL; the watchdog hears the signal through the wakeup fd) and surface as
KeyboardInterrupt. A stopped run returns the last consistent mapping (complete = False).
Resume: the experiments measured so far are asserted at once and the loop goes on from its
size bound; the measurements are not repeated, the solving is.
"""

from __future__ import annotations

import math
import select
import signal
import socket
import threading
import time
from dataclasses import asdict, dataclass, field

import z3

from pmpredict.infer.oracles import MeasurementLog, OnlineRunStopped, OracleError, canonical
from pmpredict.infer.smt_encoding import (ENCODINGS, Encoder, MappingVars, as_fraction,
                                          exact_cycles, _real)


@dataclass(frozen=True)
class CegisSettings:
    n_ports: int
    max_uops: int = 1                 # uop slots per form; 1: the two-level model
    max_length: int | None = None     # largest experiment asked for; None: complete
    epsilon: float = 0.0              # tolerance on cycles per instruction (0: exact)
    r_max: float | None = None        # peak instructions per cycle (None: no cap)
    encoding: str = "flow"            # relateThroughput for the free mapping: flow | hall
    seed: int = 0
    incremental: bool = True          # one solver, push/pop (4.3)
    symmetry: bool = True             # double-lex symmetry breaking over ports and slots

    def __post_init__(self):
        if self.encoding not in ENCODINGS:
            raise ValueError(f"encoding must be one of {', '.join(ENCODINGS)}")
        if not 1 <= self.n_ports <= 16:
            raise ValueError("ports must be between 1 and 16")
        if self.max_uops < 1:
            raise ValueError("max_uops must be >= 1")
        if self.max_length is not None and self.max_length < 2:
            raise ValueError("max_length must be >= 2")
        if not 0.0 <= self.epsilon < 1.0:
            raise ValueError("epsilon must be in [0, 1)")

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "CegisSettings":
        return cls(**data)


# --- stopping a running check -----------------------------------------------------------------


class _Watchdog:
    """While a check runs: interrupt it when should_stop() turns true or a signal arrives
    (SIGINT/SIGTERM; their Python handlers run once the check returns)."""

    def __init__(self, ctx, should_stop):
        self.ctx = ctx
        self.should_stop = should_stop
        self.fired = False

    def __enter__(self):
        self.done = threading.Event()
        self.rsock = self.wsock = None
        self.old_fd = None
        if threading.current_thread() is threading.main_thread():
            try:
                self.rsock, self.wsock = socket.socketpair()
                self.wsock.setblocking(False)
                self.old_fd = signal.set_wakeup_fd(self.wsock.fileno(), warn_on_full_buffer=False)
            except (ValueError, OSError):
                self._close_socks()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()
        return self

    def _close_socks(self):
        for s in (self.rsock, self.wsock):
            if s is not None:
                s.close()
        self.rsock = self.wsock = None

    def _watch(self):
        while not self.done.is_set():
            if self.rsock is not None:
                ready, _, _ = select.select([self.rsock], [], [], 0.1)
                if ready:
                    try:
                        data = self.rsock.recv(64)
                    except OSError:
                        data = b""
                    if any(b in (signal.SIGINT, signal.SIGTERM) for b in data):
                        self.fired = True
                        self.ctx.interrupt()
                        return
            else:
                self.done.wait(0.1)
            if self.should_stop is not None and self.should_stop():
                self.fired = True
                self.ctx.interrupt()
                return

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()
        if self.old_fd is not None:
            signal.set_wakeup_fd(self.old_fd)
        self._close_socks()
        return False


# --- the solver ------------------------------------------------------------------------------


class CegisSolver:
    """findMapping / findOtherMapping over one incremental z3 solver."""

    def __init__(self, forms, settings: CegisSettings, slots_per_form, *,
                 fixed_counts: bool = False, port_counts: dict | None = None,
                 should_stop=None):
        self.forms = list(forms)
        self.index = {f: i for i, f in enumerate(self.forms)}
        self.settings = settings
        self.should_stop = should_stop
        self.ctx = z3.Context()
        self.mv = MappingVars(self.ctx, self.forms, settings.n_ports, slots_per_form,
                              fixed_counts=fixed_counts, port_counts=port_counts,
                              symmetry=settings.symmetry)
        self.enc = Encoder(self.mv, settings.encoding, settings.r_max)
        self.solver = self._new_solver()
        self.base: list = []             # every base assertion (a non-incremental solver replays)
        self._assert_base(self.mv.take_constraints())
        self.calls = 0
        self.seconds = 0.0
        self.by_kind: dict[str, float] = {}      # solver seconds per kind of query
        self.eps = as_fraction(settings.epsilon, 10**6)

    def _new_solver(self):
        s = z3.Solver(ctx=self.ctx)
        s.set("random_seed", int(self.settings.seed))
        s.set("ctrl_c", False)
        return s

    def _assert_base(self, constraints) -> None:
        self.base += constraints
        self.solver.add(constraints)

    def _consistent_with(self, t, cycles, length) -> list:
        meas = as_fraction(cycles, 10**6) if self.eps else as_fraction(cycles)
        if not self.eps:
            return [t == _real(self.ctx, meas)]
        tol = self.eps * length
        return [t >= _real(self.ctx, meas - tol), t <= _real(self.ctx, meas + tol)]

    def add(self, counts, cycles) -> None:
        """Assert relateThroughput[M_free, e, t] for a measured experiment (hard-wired)."""
        exp = {self.index[f]: int(n) for f, n in counts}
        length = sum(exp.values())
        t = z3.Real(f"t_meas_{len(self.base)}", self.ctx)
        cons = self.enc.relate(exp, t, length) + self._consistent_with(t, cycles, length)
        self._assert_base(self.mv.take_constraints() + cons)

    def _check(self, extra=None, kind: str = "findMapping"):
        started = time.monotonic()
        self.calls += 1
        if self.should_stop is not None and self.should_stop():
            raise OnlineRunStopped()
        solver = self.solver
        if not self.settings.incremental:
            solver = self._new_solver()
            solver.add(self.base + (extra or []))
        elif extra is not None:
            solver.push()
            solver.add(extra)
        try:
            with _Watchdog(self.ctx, self.should_stop) as dog:
                result = solver.check()
                try:
                    model = solver.model() if result == z3.sat else None
                except z3.Z3Exception:
                    if not dog.fired:          # an interrupt right after check: a stop
                        raise
                    result, model = z3.unknown, None
        finally:
            if self.settings.incremental and extra is not None:
                solver.pop()
            spent = time.monotonic() - started
            self.seconds += spent
            self.by_kind[kind] = self.by_kind.get(kind, 0.0) + spent
        if dog.fired:        # the context is canceled now: whatever the check answered
            if self.should_stop is not None and self.should_stop():
                raise OnlineRunStopped()
            raise KeyboardInterrupt
        if result == z3.unknown:
            raise RuntimeError(f"the SMT solver gave up: {solver.reason_unknown()}")
        return model

    def find_mapping(self):
        """A mapping (form -> unit uop masks) consistent with every experiment, or None."""
        model = self._check()
        return None if model is None else self.mv.decode(model)

    def find_other(self, m1: dict, bound: int | None):
        """(m2, experiment) with m2 consistent and the experiment telling m1 and m2 apart by
        more than the noise, at most `bound` forms long (None: any length), or None."""
        ctx = self.ctx
        e = {i: z3.Int(f"e_{i}_{self.calls}", ctx) for i in range(len(self.forms))}
        length = z3.Sum(list(e.values()))
        t1 = z3.Real(f"t1_{self.calls}", ctx)
        t2 = z3.Real(f"t2_{self.calls}", ctx)
        known = [m1[f] for f in self.forms]
        cons = [v >= 0 for v in e.values()] + [length >= 2]
        if bound is not None:
            cons.append(length <= bound)
        cons += self.enc.relate_known(known, e, t1, length)
        cons += self.enc.relate(e, t2, length)
        if self.eps:
            gap = _real(ctx, 2 * self.eps) * z3.ToReal(length)
            cons.append(z3.Or(t1 - t2 > gap, t2 - t1 > gap))
        else:
            cons.append(t1 != t2)
        # definitions made on the way (conf variables) belong to the base level
        self._assert_base(self.mv.take_constraints())
        model = self._check(cons, "findOtherMapping" if bound is not None
                            else "findOtherMapping (unbounded)")
        if model is None:
            return None
        exp = tuple(sorted((self.forms[i], model.eval(v, True).as_long())
                           for i, v in e.items() if model.eval(v, True).as_long() > 0))
        return self.mv.decode(model), exp


# --- the loop --------------------------------------------------------------------------------


@dataclass
class CegisResult:
    mapping: dict | None              # form -> unit uop masks (descending); None: none found
    finished: bool                    # False: stopped (deadline) or interrupted
    reason: str | None                # None | "unsat" | "stopped" | "interrupted"
    experiments: list                 # the experiments of this inference, in order (canonical)
    bound: int | None                 # the size bound reached
    iterations: int = 0
    solver_calls: int = 0
    solver_seconds: float = 0.0
    complete_up_to: int | None = None   # None: no experiment of any length distinguishes
    solver_by_kind: dict = field(default_factory=dict)   # seconds per kind of query
    interrupted: BaseException | None = None
    notes: list = field(default_factory=list)


def consistent(mapping, counts, cycles, epsilon: float, r_max=None) -> bool:
    """Does the mapping explain the measurement (its CPI within epsilon)?"""
    t = exact_cycles(mapping, counts, r_max)
    n = sum(c for _, c in counts)
    if not epsilon:
        return t == as_fraction(cycles)
    return abs(float(t) - float(cycles)) <= epsilon * n + 1e-9


def slot_bounds(forms, singles: dict, settings: CegisSettings) -> list[int]:
    """Uop slots per form: at most max_uops, and n uops need n / P cycles alone."""
    out = []
    for f in forms:
        t = singles.get(f)
        if t is None:
            out.append(settings.max_uops)
            continue
        most = math.floor((float(t) + settings.epsilon) * settings.n_ports + 1e-9)
        out.append(max(1, min(settings.max_uops, most)))
    return out


@dataclass
class _Run:
    """What the steps of run_cegis share: the oracle and its log, the experiments used so
    far (in order, canonical), the progress hook and the solver (once there is one)."""
    oracle: object
    log: MeasurementLog
    progress: object
    phase: str
    started: float
    used: list = field(default_factory=list)
    solver: CegisSolver | None = None

    def measure(self, exps) -> list:
        """The cycles of each experiment (from the log where it has them), each noted as used."""
        cyc = self.log.measure(self.oracle, exps)
        for e, c in zip(exps, cyc):
            if c is None:
                why = getattr(self.oracle, "errors", {}).get(canonical(e), "no measurement")
                raise OracleError(f"experiment {dict(canonical(e))} could not be measured: {why}")
            key = canonical(e)
            if key not in self.used:
                self.used.append(key)
        return cyc

    def report(self, what, bound) -> None:
        if self.progress:
            solver = self.solver
            self.progress({"phase": self.phase, "step": what, "done": len(self.used),
                           "total": None, "bound": bound,
                           "elapsed": time.monotonic() - self.started, "eta": None,
                           "solver_s": solver.seconds if solver else 0.0})


def run_cegis(oracle, forms, settings: CegisSettings, *, log: MeasurementLog | None = None,
              resume: dict | None = None, should_stop=None, progress=None, on_step=None,
              fixed_uops: dict | None = None, port_counts: dict | None = None,
              phase: str = "cegis") -> CegisResult:
    """Algorithm 4.1 on `forms` with `oracle`'s measurements.

    log: the measurement log (a cache: what it has is not measured again; every experiment
    of this run is added to it). resume: {"bound": b} of a checkpoint whose experiments are
    in the log: they are all asserted at once. fixed_uops: form -> known uop count (the
    three-level model with a uop counter, Fig. 4.5); port_counts: form -> the number of
    ports of its single uop (counters.py). progress(dict) after every step, on_step(state)
    after every measurement (for the checkpoint).
    """
    run = _Run(oracle, log if log is not None else MeasurementLog(), progress, phase,
               time.monotonic())
    forms = list(forms)
    singles = _measure_singletons(run, forms)
    run.solver = _new_solver(forms, singles, settings, fixed_uops, port_counts, should_stop)
    _assert_logged(run, set(forms))
    result = CegisResult(None, False, None, run.used, _first_bound(resume, settings))
    try:
        return _search(run, settings, result, on_step)
    except OnlineRunStopped:
        return _finish(result, run.solver, "stopped")
    except KeyboardInterrupt as exc:
        return _finish(result, run.solver, "interrupted", interrupted=exc)


def _measure_singletons(run: _Run, forms: list) -> dict:
    """Every form alone: form -> its cycles."""
    run.report("singletons", None)
    return dict(zip(forms, run.measure([((f, 1),) for f in forms])))


def _new_solver(forms: list, singles: dict, settings: CegisSettings, fixed_uops, port_counts,
                should_stop) -> CegisSolver:
    """The solver over `forms`, their uop slots fixed (fixed_uops) or bounded by the
    singletons."""
    if fixed_uops:
        slots = [int(fixed_uops[f]) for f in forms]
    else:
        slots = slot_bounds(forms, singles, settings)
    return CegisSolver(forms, settings, slots, fixed_counts=bool(fixed_uops),
                       port_counts=port_counts, should_stop=should_stop)


def _assert_logged(run: _Run, formset: set) -> None:
    """Everything the log knows about these forms (a resumed run's experiments; the
    counters' pair experiments) is evidence too."""
    for key, rec in run.log.records.items():
        if rec["cycles"] is not None and all(f in formset for f, _ in key):
            run.solver.add(key, rec["cycles"])
            if key not in run.used:
                run.used.append(key)


def _first_bound(resume: dict | None, settings: CegisSettings) -> int:
    """The size bound to start from: a checkpoint's, else 2; at most max_length."""
    bound = (resume or {}).get("bound") or 2
    if settings.max_length is not None:
        bound = min(bound, settings.max_length)
    return bound


def _search(run: _Run, settings: CegisSettings, result: CegisResult, on_step) -> CegisResult:
    """The loop of Algorithm 4.1 from result.bound: findMapping, then findOtherMapping and a
    measurement until no experiment tells two consistent mappings apart."""
    solver = run.solver
    run.report("findMapping", result.bound)
    m1 = solver.find_mapping()
    if m1 is None:
        return _finish(result, solver, "unsat", True)
    result.mapping = m1
    while True:
        run.report("findOtherMapping", result.bound)
        found = solver.find_other(m1, result.bound)
        if found is None:
            top = settings.max_length
            if not _larger_bound_distinguishes(run, m1, top, result.bound):
                return _finish(result, solver, None, True, complete_up_to=top)
            result.bound += 1
            if on_step:
                on_step({"bound": result.bound})
            continue
        m2, exp = found
        m1 = _learn(run, settings, result, m1, m2, exp, on_step)
        if m1 is None:
            result.mapping = None
            return _finish(result, solver, "unsat", True)
        result.mapping = m1


def _larger_bound_distinguishes(run: _Run, m1: dict, top: int | None, bound: int) -> bool:
    """No experiment of at most `bound` forms tells m1 from another mapping: whether one of
    at most `top` forms (None: any length) does, so the bound should grow."""
    if top is not None and bound >= top:
        return False
    run.report("findOtherMapping (unbounded)", bound)
    return run.solver.find_other(m1, top) is not None


def _learn(run: _Run, settings: CegisSettings, result: CegisResult, m1: dict, m2: dict,
           exp, on_step) -> dict | None:
    """Measure the experiment that tells m1 and m2 apart and assert it: the mapping to go on
    with (m1 if it explains the measurement, else m2 if it does, else findMapping's), None
    when no mapping explains the experiments any more."""
    solver = run.solver
    (cycles,) = run.measure([exp])
    solver.add(exp, cycles)
    result.iterations += 1
    if on_step:
        on_step({"bound": result.bound})
    if consistent(m1, exp, cycles, settings.epsilon, settings.r_max):
        return m1
    if consistent(m2, exp, cycles, settings.epsilon, settings.r_max):
        return m2
    run.report("findMapping", result.bound)
    return solver.find_mapping()


def _finish(result: CegisResult, solver: CegisSolver, reason=None, finished=False,
            interrupted=None, complete_up_to=None) -> CegisResult:
    """The result as the run ends, with the solver's statistics."""
    result.finished = finished
    result.reason = reason
    result.solver_calls = solver.calls
    result.solver_seconds = solver.seconds
    result.solver_by_kind = {k: round(v, 3) for k, v in solver.by_kind.items()}
    result.interrupted = interrupted
    result.complete_up_to = complete_up_to
    return result


def mapping_uops(mapping: dict) -> dict:
    """form -> MachineModel uops ((mask, count) pairs) from unit uop masks."""
    out = {}
    for f, masks in mapping.items():
        merged: dict[int, int] = {}
        for m in masks:
            merged[m] = merged.get(m, 0) + 1
        out[f] = tuple(sorted(merged.items()))
    return out


def describe_uops(uops, ports) -> str:
    """'2x[A,B] + 1x[C]' for a form's (mask, count) pairs."""
    return " + ".join(f"{c}x[{','.join(p for k, p in enumerate(ports) if m >> k & 1)}]"
                      for m, c in uops) or "(none)"
