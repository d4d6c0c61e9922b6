"""One online inference as `pmpredict infer --method cegis|counters` runs it (the counterpart
of job.py for the methods that choose their own experiments).

* settings: CegisSettings / CountersSettings from the flags given (None: not given) over the
  defaults, or the checkpoint's on resume (a given value that differs is refused);
* the checkpoint (infer/checkpoint.py's file, written atomically after every measurement
  and when the run ends): the settings, the oracle, the forms and the measurement log, i.e.
  every experiment measured so far with its cycles (and uops). Resuming re-solves: the log
  answers every question it can, only the rest is measured;
* the result: a MachineModel whose provenance lists the experiments that justify it (and,
  for counters, every form's justifications).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields

from pmpredict import __version__
from pmpredict.errors import InputError
from pmpredict.model.machine import MachineModel, abstract_port_names

from pmpredict.infer.cegis import CegisSettings, mapping_uops, run_cegis
from pmpredict.infer.checkpoint import load_checkpoint, save_checkpoint
from pmpredict.infer.counters import CountersSettings, run_counters
from pmpredict.infer.oracles import MeasurementLog, OnlineRunStopped, OracleError, canonical

ONLINE_METHODS = ("cegis", "counters")
# the CPI tolerance when the oracle is exact (a model without noise) and otherwise (4.5: 0.02
# tells four ports from five)
EXACT_EPSILON = 0.0
NOISY_EPSILON = 0.02
DEFAULT_MAX_UOPS = 1


def settings_class(method: str):
    return CegisSettings if method == "cegis" else CountersSettings


def flag(key: str) -> str:
    return {"n_ports": "--ports"}.get(key, "--" + key.replace("_", "-"))


def online_settings(method: str, requested: dict, *, exact_oracle: bool,
                    default_ports: int | None, resumed: dict | None = None,
                    resume_path: str | None = None, where: str = "<command line>"):
    """The settings of a run: `requested` (field -> value, None: not given) over the defaults,
    or the checkpoint's (a different value given is an error)."""
    cls = settings_class(method)
    names = {f.name for f in fields(cls)}
    given = {k: v for k, v in requested.items() if v is not None and k in names}
    if resumed is not None:
        saved = cls.from_json(resumed["config"]["settings"])
        for key, value in given.items():
            if getattr(saved, key) != value:
                raise InputError(resume_path, f"{flag(key)} {value} differs from this "
                                              f"checkpoint's {getattr(saved, key)}: resume with "
                                              "the options of the interrupted run, or give none")
        return saved
    given.setdefault("n_ports", default_ports)
    if not given.get("n_ports"):
        raise InputError(where, "the number of ports is unknown: pass --ports N")
    given.setdefault("epsilon", EXACT_EPSILON if exact_oracle else NOISY_EPSILON)
    try:
        return cls(**given)
    except (TypeError, ValueError) as exc:
        raise InputError(where, str(exc)) from None


def load_online_resume(path: str, method: str, forms, oracle) -> dict:
    """The checkpoint at `path`, refused if it is another method's, forms' or oracle's."""
    resumed = load_checkpoint(path)
    config = resumed.get("config") or {}
    if config.get("method") != method:
        other = config.get("method") or (config.get("infer") or {}).get("method") or "?"
        raise InputError(path, f"this checkpoint belongs to a --method {other} run, not "
                               f"--method {method}")
    if resumed["forms"] != list(forms):
        raise InputError(path, "this checkpoint belongs to a run on different forms")
    if config.get("oracle") != oracle.describe():
        raise InputError(path, f"this checkpoint's measurements come from another oracle "
                               f"({config.get('oracle')})")
    return resumed


@dataclass
class OnlineOutcome:
    method: str
    model: MachineModel | None        # None: nothing explains the measurements, or stopped early
    finished: bool
    reason: str | None                # None | "unsat" | "stopped" | "interrupted"
    experiments: int                  # measured experiments the result rests on
    elapsed: float                    # seconds over every session of the run
    interrupted: BaseException | None = None
    justifications: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    left_out: dict = field(default_factory=dict)
    details: dict = field(default_factory=dict)


def run_online(method: str, oracle, forms, settings, *, checkpoint_path: str,
               counter=None, resumed: dict | None = None, should_stop=None, progress=None,
               name: str = "inferred", command: str = "", isa: str = "x86",
               inputs=()) -> OnlineOutcome:
    """Run (or continue) a cegis or counters inference, checkpointing as it measures."""
    started = time.monotonic()
    previous = float(resumed["snapshot"].get("elapsed", 0.0)) if resumed else 0.0
    log = MeasurementLog(resumed["snapshot"]["log"] if resumed else ())
    state = dict(resumed["snapshot"].get("state", {})) if resumed else {}
    config = {"method": method, "settings": settings.to_json(), "oracle": oracle.describe()}
    forms = list(forms)

    def elapsed():
        return previous + time.monotonic() - started

    def checkpoint(new_state=None):
        if new_state:
            state.update(new_state)
        save_checkpoint(checkpoint_path, {"log": log.to_json(), "state": state,
                                          "elapsed": elapsed()}, config, forms, list(inputs))

    left_out = {}
    try:
        # forms that cannot be measured alone are left out (a host without the instruction)
        singles = log.measure(oracle, [((f, 1),) for f in forms])
    except OracleError as exc:
        raise InputError("<oracle>", str(exc)) from None
    except OnlineRunStopped:
        checkpoint()
        return OnlineOutcome(method, None, False, "stopped", len(log), elapsed())
    except KeyboardInterrupt as exc:
        checkpoint()
        return OnlineOutcome(method, None, False, "interrupted", len(log), elapsed(), exc)
    errors = getattr(oracle, "errors", {})
    usable = []
    for f, c in zip(forms, singles):
        if c is None:
            left_out[f] = errors.get(((f, 1),), "no measurement")
        else:
            usable.append(f)
    if not usable:
        raise InputError("<oracle>", "no form could be measured; the first, "
                                     f"{forms[0]}: {left_out[forms[0]]}")
    checkpoint()
    try:
        if method == "cegis":
            res = run_cegis(oracle, usable, settings, log=log, resume=state,
                            should_stop=should_stop, progress=progress, on_step=checkpoint)
            uops = mapping_uops(res.mapping) if res.mapping is not None else None
            used = res.experiments
            extra = {"solver": {"calls": res.solver_calls,
                                "seconds": round(res.solver_seconds, 3),
                                "iterations": res.iterations, "encoding": settings.encoding,
                                "seconds_by_query": res.solver_by_kind},
                     "complete_up_to": res.complete_up_to if res.finished else None,
                     "bound": res.bound}
            justifications, notes = {}, []
            reason, finished, interrupted = res.reason, res.finished, res.interrupted
        else:
            res = run_counters(oracle, counter, usable, settings,
                               ports=abstract_port_names(settings.n_ports), log=log,
                               should_stop=should_stop, progress=progress,
                               on_step=checkpoint)
            uops = res.uops or None
            used = [k for k, r in log.records.items() if r["cycles"] is not None]
            left_out.update(res.left_out)
            names = abstract_port_names(settings.n_ports)
            extra = {"cegis": res.cegis, "peak_ipc": res.peak_ipc, "counter": counter.describe(),
                     "blocking": {r: {"ports": [p for k, p in enumerate(names)
                                                if b["ports"] >> k & 1],
                                      "k": b["k"], "members": b["members"]}
                                  for r, b in res.blocking.items()}}
            justifications = {f: j for f, j in res.justifications.items() if f in res.uops}
            notes = res.notes
            reason, finished, interrupted = res.reason, res.finished, res.interrupted
            if reason == "unsat":
                uops = None
    except OracleError as exc:
        checkpoint()
        raise InputError("<oracle>", str(exc)) from None
    checkpoint()
    total = elapsed()
    model = None
    if uops:
        records = [log.get(e) for e in used if log.get(e) is not None]
        provenance = {
            "description": f"inferred by pmpredict infer ({method}, seed {settings.seed}) "
                           f"from {_oracle_text(oracle.describe())}",
            "tool": f"pmpredict {__version__} infer", "command": command, "method": method,
            "oracle": oracle.describe(), "config": settings.to_json(), "forms": len(uops),
            "elapsed_s": round(total, 1), "complete": bool(finished and reason is None),
            **extra, "left_out": left_out, "notes": notes,
            "experiments": [dict(r) for r in records],
        }
        if justifications:
            provenance["justifications"] = justifications
        model = MachineModel(name=name, isa=isa, ports=abstract_port_names(settings.n_ports),
                             uops={f: uops[f] for f in forms if f in uops},
                             r_max=settings.r_max, provenance=provenance)
    return OnlineOutcome(method, model, finished and reason is None, reason,
                         len(used), total, interrupted, justifications, notes, left_out, extra)


def _oracle_text(d: dict) -> str:
    if d.get("oracle") == "model":
        noise = f", noise {d['noise']}" if d.get("noise") else ""
        return f"the model {d.get('model')}{noise}"
    return f"measurements on {d.get('cpu', 'this host')}"


def used_experiments(model: MachineModel) -> list:
    """The experiments a model inferred by cegis or counters rests on, as canonical tuples."""
    return [canonical(r["forms"]) for r in model.provenance.get("experiments", [])]
