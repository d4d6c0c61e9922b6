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
from pmpredict.infer.oracles import MeasurementLog, OracleError, Stopped, canonical
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


def run_counters(oracle, counter, forms, settings: CountersSettings, *, ports,
                 log: MeasurementLog | None = None, should_stop=None, progress=None,
                 on_step=None) -> CountersResult:
    """Ch. 6 on `forms`. ports: the port names of the result (for the explanations).
    log: the measurement log, also a cache (a resumed run replays the algorithm on it and
    measures only what it lacks). on_step() after every measurement (the checkpoint)."""
    started = time.monotonic()
    log = log if log is not None else MeasurementLog()
    forms = list(forms)
    eps = settings.epsilon
    tol = 1e-6                  # measurements are logged to 9 decimals
    just: dict[str, list] = {f: [] for f in forms}
    notes: list[str] = []
    result = CountersResult({}, just, {}, {}, notes, False, None)
    phase_state = {"phase": "singletons", "done": 0, "total": len(forms), "t0": started}

    def report():
        if progress:
            done, total = phase_state["done"], phase_state["total"]
            elapsed = time.monotonic() - phase_state["t0"]
            eta = elapsed / done * (total - done) if total and done else None
            progress({"phase": phase_state["phase"], "done": done, "total": total,
                      "elapsed": time.monotonic() - started, "eta": eta})

    def phase(name, total):
        phase_state.update(phase=name, done=0, total=total, t0=time.monotonic())
        report()

    def measure(exps, with_uops=False):
        if should_stop is not None and should_stop():
            raise Stopped()
        cyc = log.measure(oracle, exps)
        out = []
        for e, c in zip(exps, cyc):
            if c is None:
                why = getattr(oracle, "errors", {}).get(canonical(e), "no measurement")
                raise OracleError(f"experiment {dict(canonical(e))} could not be measured: {why}")
            rec = log.get(e)
            if with_uops and rec.get("uops") is None:
                rec["uops"] = round(float(counter.uops(canonical(e))), 6)
            out.append((c, rec.get("uops")))
        if on_step:
            on_step()
        return out

    def equal_cpi(a, b, length):
        return abs(a - b) <= eps * length + tol

    try:
        # 1. singletons: cycles and uops
        phase("singletons", len(forms))
        t, c = {}, {}
        for f in forms:
            (cyc, n), = measure([((f, 1),)], with_uops=True)
            t[f], c[f] = cyc, int(round(n))
            if abs(n - round(n)) > 0.05:
                notes.append(f"{f}: the counter reads {n} uops per instance, not a whole number")
            phase_state["done"] += 1
            report()
        candidates = {}
        for f in forms:
            k = round(1 / t[f]) if t[f] > 0 else 0
            entry = {"experiment": {f: 1}, "measured": {"cycles": t[f], "uops": c[f]}}
            if c[f] == 1 and 1 <= k <= settings.n_ports and equal_cpi(t[f], 1 / k, 1):
                candidates[f] = k
                entry["establishes"] = (f"one uop, {k} instance(s) per cycle: a blocking "
                                        f"instruction candidate for a set of {k} port(s)")
            elif c[f] == 1:
                entry["establishes"] = ("one uop, but not 1/k cycles for a k <= ports: not a "
                                        "blocking instruction")
            else:
                entry["establishes"] = f"{c[f]} uops in total (the counter)"
            just[f].append(entry)

        # 2. unique blocking instructions: additivity within equal port counts
        phase("equivalence", len(candidates))
        reps: dict[str, list] = {}            # representative -> members
        rep_of: dict[str, str] = {}
        for f in sorted(candidates, key=lambda f: (candidates[f], f)):
            same = None
            for r in reps:
                if candidates[r] != candidates[f]:
                    continue
                (both, _), = measure([((f, 1), (r, 1))] if f < r else [((r, 1), (f, 1))])
                additive = equal_cpi(both, t[f] + t[r], 2)
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
            phase_state["done"] += 1
            report()
        if settings.r_max is not None:
            wide = [r for r in reps if candidates[r] >= settings.r_max]
            if len(wide) > 1:
                notes.append(f"blocking instructions {', '.join(wide)} use at least R_max ports: "
                             "the additivity test cannot tell their port sets apart (6.2.3)")

        # 3. CEGIS for the representatives' port sets
        phase("cegis", None)
        rep_list = sorted(reps)

        def cegis_progress(info):
            if progress:
                progress({**info, "phase": "cegis", "elapsed": time.monotonic() - started})

        cg = run_cegis(oracle, rep_list, settings.cegis(), log=log, should_stop=should_stop,
                       progress=cegis_progress, on_step=lambda _s: on_step and on_step(),
                       fixed_uops={r: 1 for r in rep_list},
                       port_counts={r: candidates[r] for r in rep_list}, phase="cegis")
        result.cegis = {"experiments": len(cg.experiments), "iterations": cg.iterations,
                        "solver_calls": cg.solver_calls,
                        "solver_seconds": round(cg.solver_seconds, 3),
                        "complete_up_to": cg.complete_up_to}
        if cg.interrupted is not None:
            raise cg.interrupted
        if cg.reason == "stopped":
            raise Stopped()
        if cg.mapping is None:
            result.reason = "unsat"
            notes.append("no two-level mapping of the blocking instructions explains their "
                         "measurements (outside the port mapping model, or eps too small)")
            result.finished = True
            return result
        rep_mask = {r: cg.mapping[r][0] for r in rep_list}
        for r in rep_list:
            result.blocking[r] = {"ports": rep_mask[r], "k": candidates[r],
                                  "members": sorted(reps[r])}
            evidence = [e for e in cg.experiments if any(f == r for f, _ in e) and
                        sum(n for _, n in e) > 1]
            listed = [j["experiment"] for j in just[r]]
            for e in evidence:
                rec = log.get(e)
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
        for f, r in rep_of.items():
            result.uops[f] = ((rep_mask[r], 1),)
            if f != r:
                just[f].append({"experiment": None, "measured": None,
                                "establishes": f"ports {_ports_text(rep_mask[r], ports)}, "
                                               f"those of {r}"})

        # 4. peak rate (6.2.3)
        phase("peak", len(rep_list))
        order = sorted(rep_list, key=lambda r: (-candidates[r], r))
        peak_exp: dict[str, int] = {}
        peak = None
        for r in order:
            trial = dict(peak_exp)
            trial[r] = trial.get(r, 0) + candidates[r]
            (cyc, _), = measure([canonical(trial)])
            ipc = sum(trial.values()) / cyc
            if peak is None or ipc > peak + tol:
                peak, peak_exp = ipc, trial
            phase_state["done"] += 1
            report()
        result.peak_ipc = round(peak, 6) if peak is not None else None
        widest = max(candidates[r] for r in rep_list) if rep_list else 0
        if peak is not None and peak <= widest + tol:
            notes.append(f"the peak rate {peak:.3g} IPC is reached by one blocking instruction "
                         f"alone ({widest} ports): uops evading blocked ports may go unseen (6.2.3)")

        # 5. every other form against the blocking instructions
        rest = [f for f in forms if f not in rep_of]
        blockers = sorted(rep_list, key=lambda r: (candidates[r], r))
        phase("decompose", len(rest))
        for f in rest:
            found: dict[int, int] = {}
            for b in blockers:
                if sum(found.values()) >= c[f]:
                    just[f].append({"experiment": None, "measured": None,
                                    "establishes": f"all {c[f]} counted uops found: the other "
                                                   "blocking instructions are not needed"})
                    break
                q = rep_mask[b]
                size = bin(q).count("1")
                k = blocking_count(size, t[f], c[f])
                (with_f, _), (alone, _) = measure([((b, k), (f, 1)) if b < f else ((f, 1), (b, k)),
                                                   ((b, k),)])
                raw = (with_f - alone) * size
                n = int(round(raw))
                if abs(raw - n) > max(0.1, eps * (k + 1) * size * 2):
                    notes.append(f"{f}: beside {k}x {b} its uops on {_ports_text(q, ports)} come "
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
            total = sum(found.values())
            if total != c[f]:
                notes.append(f"{f}: the counter reads {c[f]} uops, the blocking instructions "
                             f"account for {total}")
            if found:
                result.uops[f] = tuple(sorted(found.items()))
            else:
                result.left_out[f] = "no uop confined to any blocking instruction's ports"
            phase_state["done"] += 1
            report()
        result.finished = True
        return result
    except Stopped:
        result.reason = "stopped"
        return result
    except KeyboardInterrupt as exc:
        result.reason = "interrupted"
        result.interrupted = exc
        return result
