"""Explainable port mapping inference with a total-uops counter (Ritter, ch. 6).

The uops.info algorithm (Abel and Reineke; Algorithm 6.1) without per-port counters: only
cycles (an Oracle) and the total uops of an experiment (a UopCounter) are read.

1. **Singletons** (6.2.1, 1-2). Every form alone: its cycles t and uops c. A form of one
   uop is a blocking-instruction candidate; its uop runs on k = 1 / t ports.
2. **Unique blocking instructions** (6.2.1, 3; Theorem 6.3). Candidates with the same k use
   the same port set iff t({i, j}) = t(i) + t(j); one representative per port set.
3. **Their port sets** (6.2.1, 4). CEGIS (infer/cegis.py) over the representatives in the
   two-level model, with each one's port count fixed to its k.
4. **Peak rate** (6.2.3). A greedy experiment of blocking instructions kept while they
   raise the IPC; a warning if the peak is no more than a blocking port set's size (the
   equivalence test of step 2 is then unreliable).
5. **Every other form** (6.2.2, Algorithm 6.1). For each blocking instruction B of port set
   Q, smallest Q first: e = {B: k, i: 1} and e' = {B: k} with k = min(max(2|Q| max(1,
   floor(t_i)), |Q| c_i, 10), 100) (uops.info's choice). The uops of i that cannot evade Q
   add (t(e) - t(e')) |Q| uops to it; those not already found on subsets of Q are uops on
   exactly Q. Stops early once the found uops reach the counter's c.

Every form's decomposition is justified by named experiments: the result carries, per
form, a list of {experiment, measured, establishes}.

Assumptions (the thesis' own): a blocking instruction exists for the port set of every uop
(else those uops are not found: the form's found uops fall short of its counter, a note
says so); the machine follows the port mapping model closely; measurements are accurate to
eps cycles per instruction. The "improper" blocking instructions of 6.3.4 (a store whose
two uops come only together) are not handled.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

from pmpredict.infer.cegis import CegisSettings, run_cegis
from pmpredict.infer.oracles import MeasurementLog, OnlineRunStopped, OracleError, canonical
from pmpredict.infer.smt_encoding import ENCODINGS


@dataclass(frozen=True)
class CountersSettings:
    n_ports: int
    epsilon: float = 0.0              # tolerance on cycles per instruction
    r_max: float | None = None
    encoding: str = "flow"            # CEGIS of step 3
    seed: int = 0
    max_length: int | None = None     # CEGIS of step 3

    def __post_init__(self):
        if self.encoding not in ENCODINGS:
            raise ValueError(f"encoding must be one of {', '.join(ENCODINGS)}")
        if not 1 <= self.n_ports <= 16:
            raise ValueError("ports must be between 1 and 16")

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "CountersSettings":
        return cls(**data)

    def cegis(self) -> CegisSettings:
        return CegisSettings(self.n_ports, 1, self.max_length, self.epsilon, self.r_max,
                             self.encoding, self.seed)


@dataclass
class CountersResult:
    uops: dict                        # form -> (mask, count) pairs, for the forms characterized
    justifications: dict              # form -> [{experiment, measured, establishes}]
    blocking: dict                    # representative -> {"ports": mask, "k": k, "members": [...]}
    left_out: dict                    # form -> why it has no mapping
    notes: list                       # warnings (assumptions that look violated)
    finished: bool
    reason: str | None                # None | "stopped" | "interrupted" | "unsat"
    peak_ipc: float | None = None
    cegis: dict = field(default_factory=dict)
    interrupted: BaseException | None = None


def _ports_text(mask: int, ports) -> str:
    return "[" + ",".join(p for k, p in enumerate(ports) if mask >> k & 1) + "]"


def blocking_count(q_size: int, t: float, uops: int) -> int:
    """How many copies of a blocking instruction flood its ports (uops.info's term)."""
    k1 = 2 * q_size * max(1, math.floor(t + 1e-9))
    k2 = q_size * uops
    return min(max(k1, k2, 10), 100)


# measurements are logged to 9 decimals: two that should be equal differ by at most this
_LOGGED_TOL = 1e-6


@dataclass
class _Run:
    """What the five steps share: the measuring (oracle, counter, log, stop and step hooks),
    the progress of the current step, and the result being built."""
    oracle: object
    counter: object
    settings: CountersSettings
    ports: object
    log: MeasurementLog
    should_stop: object
    progress: object
    on_step: object
    started: float
    result: CountersResult
    phase: str = "singletons"
    done: int = 0
    total: int | None = 0
    t0: float = 0.0

    @property
    def just(self) -> dict:
        return self.result.justifications

    @property
    def notes(self) -> list:
        return self.result.notes

    def report(self) -> None:
        if self.progress:
            done, total = self.done, self.total
            elapsed = time.monotonic() - self.t0
            eta = elapsed / done * (total - done) if total and done else None
            self.progress({"phase": self.phase, "done": done, "total": total,
                           "elapsed": time.monotonic() - self.started, "eta": eta})

    def begin(self, name: str, total: int | None) -> None:
        self.phase, self.done, self.total, self.t0 = name, 0, total, time.monotonic()
        self.report()

    def step_done(self) -> None:
        self.done += 1
        self.report()

    def measure(self, exps, with_uops=False) -> list:
        """(cycles, uops or None) of each experiment; OnlineRunStopped if should_stop() says
        so."""
        if self.should_stop is not None and self.should_stop():
            raise OnlineRunStopped()
        cyc = self.log.measure(self.oracle, exps)
        out = []
        for e, c in zip(exps, cyc):
            if c is None:
                why = getattr(self.oracle, "errors", {}).get(canonical(e), "no measurement")
                raise OracleError(f"experiment {dict(canonical(e))} could not be measured: {why}")
            rec = self.log.get(e)
            if with_uops and rec.get("uops") is None:
                rec["uops"] = round(float(self.counter.uops(canonical(e))), 6)
            out.append((c, rec.get("uops")))
        if self.on_step:
            self.on_step()
        return out

    def equal_cpi(self, a, b, length) -> bool:
        return abs(a - b) <= self.settings.epsilon * length + _LOGGED_TOL


@dataclass
class _Blocking:
    """The unique blocking instructions (step 2): representative -> its members, and each
    candidate's representative."""
    reps: dict
    rep_of: dict


def run_counters(oracle, counter, forms, settings: CountersSettings, *, ports,
                 log: MeasurementLog | None = None, should_stop=None, progress=None,
                 on_step=None) -> CountersResult:
    """Ch. 6 on `forms`. ports: the port names of the result (for the explanations).
    log: the measurement log, also a cache (a resumed run replays the algorithm on it and
    measures only what it lacks). on_step() after every measurement (the checkpoint)."""
    started = time.monotonic()
    log = log if log is not None else MeasurementLog()
    forms = list(forms)
    result = CountersResult({}, {f: [] for f in forms}, {}, {}, [], False, None)
    run = _Run(oracle, counter, settings, ports, log, should_stop, progress, on_step, started,
               result, total=len(forms), t0=started)
    try:
        t, c, candidates = _measure_singletons(run, forms)
        blocking = _unique_blocking_instructions(run, candidates, t)
        rep_list = sorted(blocking.reps)
        rep_mask = _blocking_port_sets(run, blocking, rep_list, candidates)
        if rep_mask is None:
            result.reason = "unsat"
            result.notes.append("no two-level mapping of the blocking instructions explains "
                                "their measurements (outside the port mapping model, or eps "
                                "too small)")
            result.finished = True
            return result
        _peak_rate(run, rep_list, candidates)
        _decompose_other_forms(run, forms, blocking, rep_list, rep_mask, candidates, t, c)
        result.finished = True
        return result
    except OnlineRunStopped:
        result.reason = "stopped"
        return result
    except KeyboardInterrupt as exc:
        result.reason = "interrupted"
        result.interrupted = exc
        return result


def _measure_singletons(run: _Run, forms) -> tuple[dict, dict, dict]:
    """1. Every form alone: its cycles t and uops c, and the blocking-instruction candidates
    (form -> k, a single uop on k ports). Returns (t, c, candidates)."""
    run.begin("singletons", len(forms))
    t, c = {}, {}
    for f in forms:
        (cyc, n), = run.measure([((f, 1),)], with_uops=True)
        t[f], c[f] = cyc, int(round(n))
        if abs(n - round(n)) > 0.05:
            run.notes.append(f"{f}: the counter reads {n} uops per instance, not a whole number")
        run.step_done()
    candidates = {}
    for f in forms:
        k = round(1 / t[f]) if t[f] > 0 else 0
        entry = {"experiment": {f: 1}, "measured": {"cycles": t[f], "uops": c[f]}}
        if c[f] == 1 and 1 <= k <= run.settings.n_ports and run.equal_cpi(t[f], 1 / k, 1):
            candidates[f] = k
            entry["establishes"] = (f"one uop, {k} instance(s) per cycle: a blocking "
                                    f"instruction candidate for a set of {k} port(s)")
        elif c[f] == 1:
            entry["establishes"] = ("one uop, but not 1/k cycles for a k <= ports: not a "
                                    "blocking instruction")
        else:
            entry["establishes"] = f"{c[f]} uops in total (the counter)"
        run.just[f].append(entry)
    return t, c, candidates


def _unique_blocking_instructions(run: _Run, candidates: dict, t: dict) -> _Blocking:
    """2. One representative per port set: candidates with the same k share their ports iff
    their pair is additive (Theorem 6.3)."""
    run.begin("equivalence", len(candidates))
    just = run.just
    reps: dict[str, list] = {}            # representative -> members
    rep_of: dict[str, str] = {}
    for f in sorted(candidates, key=lambda f: (candidates[f], f)):
        same = None
        for r in reps:
            if candidates[r] != candidates[f]:
                continue
            (both, _), = run.measure([((f, 1), (r, 1))] if f < r else [((r, 1), (f, 1))])
            additive = run.equal_cpi(both, t[f] + t[r], 2)
            exp = dict(canonical({f: 1, r: 1}))
            if additive:
                just[f].append({"experiment": exp, "measured": {"cycles": both},
                                "establishes": f"{both} = {t[f]} + {t[r]} (additive): the "
                                               f"same ports as {r} (Theorem 6.3)"})
                same = r
                break
            just[f].append({"experiment": exp, "measured": {"cycles": both},
                            "establishes": f"{both} < {t[f]} + {t[r]}: other ports than {r}"})
        if same is None:
            reps[f] = [f]
            rep_of[f] = f
        else:
            reps[same].append(f)
            rep_of[f] = same
        run.step_done()
    if run.settings.r_max is not None:
        wide = [r for r in reps if candidates[r] >= run.settings.r_max]
        if len(wide) > 1:
            run.notes.append(f"blocking instructions {', '.join(wide)} use at least R_max "
                             "ports: the additivity test cannot tell their port sets apart "
                             "(6.2.3)")
    return _Blocking(reps, rep_of)


def _blocking_port_sets(run: _Run, blocking: _Blocking, rep_list: list,
                        candidates: dict) -> dict | None:
    """3. The representatives' port sets by CEGIS: representative -> port mask, with the
    justifications and the uops of every blocking instruction recorded; None when no
    two-level mapping explains them."""
    run.begin("cegis", None)
    cg = _cegis_of_representatives(run, rep_list, candidates)
    if cg.mapping is None:
        return None
    rep_mask = {r: cg.mapping[r][0] for r in rep_list}
    _record_blocking(run, cg, blocking, rep_list, rep_mask, candidates)
    return rep_mask


def _cegis_of_representatives(run: _Run, rep_list: list, candidates: dict):
    """CEGIS in the two-level model, each representative's port count fixed to its k; its
    statistics go into the result. OnlineRunStopped or KeyboardInterrupt where CEGIS was
    stopped."""
    def cegis_progress(info):
        if run.progress:
            run.progress({**info, "phase": "cegis", "elapsed": time.monotonic() - run.started})

    on_step = run.on_step
    cg = run_cegis(run.oracle, rep_list, run.settings.cegis(), log=run.log,
                   should_stop=run.should_stop, progress=cegis_progress,
                   on_step=lambda _s: on_step and on_step(),
                   fixed_uops={r: 1 for r in rep_list},
                   port_counts={r: candidates[r] for r in rep_list}, phase="cegis")
    run.result.cegis = {"experiments": len(cg.experiments), "iterations": cg.iterations,
                        "solver_calls": cg.solver_calls,
                        "solver_seconds": round(cg.solver_seconds, 3),
                        "complete_up_to": cg.complete_up_to}
    if cg.interrupted is not None:
        raise cg.interrupted
    if cg.reason == "stopped":
        raise OnlineRunStopped()
    return cg


def _record_blocking(run: _Run, cg, blocking: _Blocking, rep_list: list, rep_mask: dict,
                     candidates: dict) -> None:
    """The blocking instructions' port sets into the result, each justified by the CEGIS
    experiments it took part in."""
    result, just, ports = run.result, run.just, run.ports
    for r in rep_list:
        result.blocking[r] = {"ports": rep_mask[r], "k": candidates[r],
                              "members": sorted(blocking.reps[r])}
        evidence = [e for e in cg.experiments if any(f == r for f, _ in e) and
                    sum(n for _, n in e) > 1]
        listed = [j["experiment"] for j in just[r]]
        for e in evidence:
            rec = run.log.get(e)
            if dict(e) in listed:
                continue
            just[r].append({"experiment": dict(e), "measured": {"cycles": rec["cycles"]},
                            "establishes": "evidence for the blocking port sets (CEGIS)"})
        scope = ("any length" if cg.complete_up_to is None
                 else f"up to {cg.complete_up_to} forms")
        just[r].append({"experiment": None, "measured": None,
                        "establishes": f"ports {_ports_text(rep_mask[r], ports)}: with these "
                                       f"{len(evidence)} experiments and the singletons, no "
                                       "other port sets of the blocking instructions (with "
                                       "their port counts) are distinguishable by an "
                                       f"experiment of {scope} (CEGIS)"})
    for f, r in blocking.rep_of.items():
        result.uops[f] = ((rep_mask[r], 1),)
        if f != r:
            just[f].append({"experiment": None, "measured": None,
                            "establishes": f"ports {_ports_text(rep_mask[r], ports)}, "
                                           f"those of {r}"})


def _peak_rate(run: _Run, rep_list: list, candidates: dict) -> None:
    """4. The peak IPC (6.2.3): blocking instructions, widest first, kept while they raise
    it; a note where one blocking instruction alone reaches it."""
    run.begin("peak", len(rep_list))
    order = sorted(rep_list, key=lambda r: (-candidates[r], r))
    peak_exp: dict[str, int] = {}
    peak = None
    for r in order:
        trial = dict(peak_exp)
        trial[r] = trial.get(r, 0) + candidates[r]
        (cyc, _), = run.measure([canonical(trial)])
        ipc = sum(trial.values()) / cyc
        if peak is None or ipc > peak + _LOGGED_TOL:
            peak, peak_exp = ipc, trial
        run.step_done()
    run.result.peak_ipc = round(peak, 6) if peak is not None else None
    widest = max(candidates[r] for r in rep_list) if rep_list else 0
    if peak is not None and peak <= widest + _LOGGED_TOL:
        run.notes.append(f"the peak rate {peak:.3g} IPC is reached by one blocking instruction "
                         f"alone ({widest} ports): uops evading blocked ports may go unseen "
                         "(6.2.3)")


def _decompose_other_forms(run: _Run, forms, blocking: _Blocking, rep_list: list,
                           rep_mask: dict, candidates: dict, t: dict, c: dict) -> None:
    """5. Every form that is not a blocking instruction, against the blocking instructions,
    smallest port set first (Algorithm 6.1)."""
    rest = [f for f in forms if f not in blocking.rep_of]
    blockers = sorted(rep_list, key=lambda r: (candidates[r], r))
    run.begin("decompose", len(rest))
    for f in rest:
        found = _uops_beside_blockers(run, f, blockers, rep_mask, t[f], c[f])
        total = sum(found.values())
        if total != c[f]:
            run.notes.append(f"{f}: the counter reads {c[f]} uops, the blocking instructions "
                             f"account for {total}")
        if found:
            run.result.uops[f] = tuple(sorted(found.items()))
        else:
            run.result.left_out[f] = "no uop confined to any blocking instruction's ports"
        run.step_done()


def _uops_beside_blockers(run: _Run, f: str, blockers: list, rep_mask: dict, t_f: float,
                          c_f: int) -> dict[int, int]:
    """Form f's uops (port mask -> count) found beside each blocking instruction in turn,
    until they reach the counter's c_f; each step justified."""
    eps, ports, just = run.settings.epsilon, run.ports, run.just
    found: dict[int, int] = {}
    for b in blockers:
        if sum(found.values()) >= c_f:
            just[f].append({"experiment": None, "measured": None,
                            "establishes": f"all {c_f} counted uops found: the other "
                                           "blocking instructions are not needed"})
            break
        q = rep_mask[b]
        size = bin(q).count("1")
        k = blocking_count(size, t_f, c_f)
        (with_f, _), (alone, _) = run.measure([((b, k), (f, 1)) if b < f else ((f, 1), (b, k)),
                                               ((b, k),)])
        raw = (with_f - alone) * size
        n = int(round(raw))
        if abs(raw - n) > max(0.1, eps * (k + 1) * size * 2):
            run.notes.append(f"{f}: beside {k}x {b} its uops on {_ports_text(q, ports)} come "
                             f"to {raw:.3f}, not a whole number (outside the model?)")
        below = sum(v for m, v in found.items() if m != q and m & ~q == 0)
        surplus = n - below
        exp = dict(canonical({b: k, f: 1}))
        measured = {"cycles": with_f, "without": {"experiment": {b: k}, "cycles": alone}}
        qt = _ports_text(q, ports)
        if surplus > 0:
            found[q] = surplus
            what = (f"({with_f} - {alone}) x {size} = {n} uop(s) cannot evade {qt}; "
                    f"{below} of them run on its subsets: {surplus} uop(s) on {qt}")
        else:
            what = (f"({with_f} - {alone}) x {size} = {n} uop(s) cannot evade {qt}, "
                    f"{below} found on its subsets: none on exactly {qt}")
        just[f].append({"experiment": exp, "measured": measured, "establishes": what})
    return found
