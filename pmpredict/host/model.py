"""This machine's model, on demand (`pmpredict predict FILE.s --model host`).

Front end (files, a lock, measurements). The model of the CPU this runs on lives in the user's
cache directory, `<cache_dir>/host-<hash of the CPU identity>.json`, and grows with use:

* **first use: bootstrap.** The core forms (measure/forms_core.txt: one or two per kind of
  execution unit) are measured with all pairs and weighted pairs, with their latencies and the
  front end (issue width, macro-fusion, load-op slots, paired stores, stack sync, window, taken
  branch: measure/frontend.py; a model whose front end older probes measured gets it measured
  again on its next use), and
  inferred: the training workflow of `pmpredict infer --measure` (pmpredict/host/workflow.py)
  with the host model's settings. If a built-in model says it was measured on a CPU of this
  very identity (its provenance's `cpu_identity`), its forms seed the model instead, and only
  their latencies and the front end are measured.
* **every later use: extend.** The forms a kernel needs and the model lacks (`form_of` of each
  instruction; branches and system instructions cannot be measured on their own and are
  listed) are measured alone and beside the model's blockers (pmpredict/host/extend.py), fitted with
  every existing form's uops fixed, and their latencies measured. Forms the CPU cannot run
  (SIGILL) are remembered and not tried again. Then the split variants the kernels' loads
  across a line need (isa.forms.split_variant: which loads split, only a model with the
  kernels' forms can say), the same way, and the pairs each kernel uses.

Two processes never write the model at once: an exclusive lock (`fcntl.flock` on
`host-<hash>.lock`) is held while the model is read, measured and written, and every write is
atomic (a temporary file renamed over the old one), so a reader sees the old model or the
new one, never half of one. A process that finds the lock taken says so and waits; it then
measures only what the other one did not.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from pmpredict.errors import InputError
from pmpredict.isa import semantics
from pmpredict.isa.forms import is_split_variant, parse_form
from pmpredict.isa.keys import render_key
from pmpredict.formats.jsonio import rounded
from pmpredict.formats.model_files import load_model, save_model
from pmpredict.measure.cpu import HARNESS_ISA, cpu_identity, cpu_name
from pmpredict.model.machine import PER_FORM_FIELDS
from pmpredict.models import builtin_names
from pmpredict.userdirs import cache_dir as user_cache_dir

# the bootstrap's inference settings (its ports: the workflow's HOST_PORTS; its final volume
# weight: host/extend.py's FINAL_VOLUME_WEIGHT, the same as every extension's fit)
SEED = 0
MODEL_NAME = "host"


@dataclass
class HostUpdate:
    """What `host_model` did to the model, for the report (a text line and a JSON object)."""
    path: str
    cpu: str
    forms: int = 0                               # forms the model has now
    created: str | None = None                   # "bootstrap" / "seeded from <built-in>"
    bootstrap_seconds: float | None = None
    bootstrap_experiments: int = 0
    measured: list = field(default_factory=list)  # forms added now
    experiments: int = 0                         # experiments measured for them
    seconds: float = 0.0                         # measuring and fitting them
    failed: dict = field(default_factory=dict)   # form -> why it could not be measured
    left_out: list = field(default_factory=list)  # (line, text, why) of the kernel
    waited: float = 0.0                          # seconds spent waiting for another process
    # known forms fitted again: the model predicted a pair of forms a kernel uses wrongly
    refitted: list = field(default_factory=list)
    # seconds measuring every latency again (the model's were measured with older chains)
    latencies_again: float | None = None
    budget: float | None = None                  # --measure-budget, seconds (None: none)
    # what the budget left unmeasured: form -> what it lacks, and pairs of forms
    unmeasured_forms: dict = field(default_factory=dict)
    unmeasured_pairs: list = field(default_factory=list)

    def to_json(self) -> dict:
        return {"path": self.path, "cpu": self.cpu, "forms": self.forms,
                "created": self.created, "bootstrap_seconds": rounded(self.bootstrap_seconds, 2),
                "bootstrap_experiments": self.bootstrap_experiments,
                "measured": list(self.measured), "experiments": self.experiments,
                "seconds": rounded(self.seconds, 2), "failed": dict(self.failed),
                "left_out": [{"line": line, "text": text, "reason": why}
                             for line, text, why in self.left_out],
                "waited_seconds": rounded(self.waited, 2), "refitted": list(self.refitted),
                "latencies_measured_again_seconds": rounded(self.latencies_again, 2),
                "budget_seconds": self.budget,
                "unmeasured": {"forms": dict(self.unmeasured_forms),
                               "pairs": [list(p) for p in self.unmeasured_pairs]}}

    def line(self) -> str:
        parts = []
        if self.created == "bootstrap":
            parts.append(f"built this machine's model from {self.bootstrap_experiments} core "
                         f"experiments in {self.bootstrap_seconds:.1f} s")
        elif self.created:
            parts.append(f"{self.created}, latencies and front end measured in "
                         f"{self.bootstrap_seconds:.1f} s")
        if self.latencies_again is not None:
            parts.append(f"latencies measured again with today's chains in "
                         f"{self.latencies_again:.1f} s")
        if self.measured:
            parts.append(f"measured {len(self.measured)} new form(s) ({self.experiments} "
                         f"experiments) in {self.seconds:.1f} s")
        elif not self.created:
            parts.append("every measurable form already known")
        if self.refitted:
            parts.append(f"{len(self.refitted)} form(s) fitted again to how the kernels' forms "
                         "run together")
        if self.failed:
            parts.append(f"{len(self.failed)} form(s) unusable here ("
                         + "; ".join(f"{_short(f)}: {why}" for f, why in self.failed.items()) + ")")
        if self.left_out:
            kinds = sorted({why.split(":")[0] for _, _, why in self.left_out})
            parts.append(f"left out {len(self.left_out)} instruction(s) that cannot be measured "
                         f"on their own ({', '.join(kinds)})")
        if self.unmeasured_forms or self.unmeasured_pairs:
            parts.append(f"the measuring budget ({self.budget:g} s) ran out: "
                         f"{len(self.unmeasured_forms)} form(s) measured in part, "
                         f"{len(self.unmeasured_pairs)} pair(s) of forms not measured together "
                         f"(the next run measures them; --measure-budget)")
        if self.waited >= 1:
            parts.append(f"waited {self.waited:.0f} s for another pmpredict measuring it")
        return f"host model ({self.cpu}, {self.forms} forms): " + "; ".join(parts)


def _short(form: str) -> str:
    # deferred: the matcher loads lark, and only a form that failed is shortened
    from pmpredict.asm.match import form_pattern
    try:
        return render_key(*form_pattern(parse_form(form)))
    except ValueError:
        return form


# --- where the model lives -------------------------------------------------------------------

def model_path(cache_dir: str | None = None) -> str:
    """Where this machine's model lives (its CPU identity decides the name)."""
    tag = hashlib.sha256(cpu_identity().encode()).hexdigest()[:12]
    return os.path.join(cache_dir or user_cache_dir(), f"host-{tag}.json")


def _now() -> str:
    # deferred: datetime (~2 ms) only when a model is measured, not for every prediction
    from datetime import datetime
    return datetime.now().isoformat(timespec="seconds")


def load_cached(cache_dir: str | None = None):
    """This machine's model if it has been measured, else None; InputError naming the file
    if it is damaged (the user can delete it: it is measured again)."""
    path = model_path(cache_dir)
    return _read(path) if os.path.exists(path) else None


DAMAGED = "this machine's model is damaged ({}); delete the file and it is measured again"


def _read(path: str):
    """The model at `path`, checked: an x86 model whose provenance holds the host facts."""
    try:
        model = load_model(path)
    except InputError as exc:
        raise InputError(exc.path, DAMAGED.format(exc.message), exc.line, exc.column) from None
    why = _facts_problem(model.provenance.get("host"))
    if model.isa != HARNESS_ISA:
        why = f"an {model.isa} model, not {HARNESS_ISA}"
    if why:
        raise InputError(path, DAMAGED.format(why))
    return model


def _facts_problem(facts) -> str | None:
    """What is wrong with the provenance's host facts, or None (the keys this module reads)."""
    if not isinstance(facts, dict):
        return "provenance.host is not an object"
    left_out = facts.get("left_out", {})
    if not isinstance(left_out, dict) or not all(isinstance(v, str) for v in left_out.values()):
        return "provenance.host.left_out is not an object of form: reason"
    extensions = facts.get("extensions", [])
    if not isinstance(extensions, list) or not all(
            isinstance(e, dict) and isinstance(e.get("date"), str) for e in extensions):
        return "provenance.host.extensions is not a list of objects with a date"
    bootstrap = facts.get("bootstrap")
    if not isinstance(bootstrap, dict) or not isinstance(bootstrap.get("how"), str) \
            or not isinstance(bootstrap.get("seconds"), (int, float)):
        return "provenance.host.bootstrap is not an object with how and seconds"
    if not isinstance(facts.get("created"), str):
        return "provenance.host.created is not a date"
    return None


@contextmanager
def _locked(path: str, update: HostUpdate, notify=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".lock", "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if notify:
                notify("another pmpredict is measuring this machine's model: waiting for it")
            started = time.monotonic()
            fcntl.flock(fh, fcntl.LOCK_EX)
            update.waited = time.monotonic() - started
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# --- the forms a kernel needs ------------------------------------------------------------------

def kernel_forms(instructions, syntax: str, isa_name: str = "x86"):
    """(forms in order of first use, [(line, text, why)] of instructions left out)."""
    # deferred: pmpredict.measure loads numpy and the harness
    from pmpredict.measure.forms_from import instruction_form
    isa = semantics.get(isa_name)
    forms, left_out = [], []
    for insn in instructions:
        form, why = instruction_form(isa, insn, syntax)
        if form is None:
            left_out.append((insn.line, insn.text.strip() or insn.mnemonic, why))
        elif form not in forms:
            forms.append(form)
    return forms, left_out


# --- building and growing the model ------------------------------------------------------------

@dataclass
class MeasureBudget:
    """Seconds of measuring one call may spend on what its kernels need beyond the model's core
    (the bootstrap is not budgeted: without it nothing can be predicted). None: no limit."""
    seconds: float | None = None
    started: float = field(default_factory=time.monotonic)

    def over(self) -> bool:
        return self.seconds is not None and time.monotonic() - self.started > self.seconds


def host_model(forms=(), *, cache_dir: str | None = None, progress=None, notify=None,
               core=None, seed_builtin: bool = True, kernels=(), budget_s: float | None = None,
               variants=None):
    """(this machine's model with `forms` in it where they can be measured, HostUpdate).

    kernels: the forms of each kernel (lists): every pair of forms one kernel uses together
    is measured once, and the extension forms the model predicts them wrongly with are fitted
    again (host.extend, step 4).
    progress(Progress): measurement progress; notify(text): a note (waiting for the lock).
    core: the bootstrap forms (default measure/forms_core.txt); seed_builtin: start from a built-in
    model measured on this very CPU when there is one. budget_s: seconds the forms and pairs
    the kernels need may take (MeasureBudget); what it leaves unmeasured is recorded in the
    model (provenance.host.unmeasured), said in each prediction that depends on it, and
    measured by the next call with time to spare. variants(model): the split variants each
    kernel's loads need (isa.forms.split_variant; lists, one per kernel), which only a model
    with the kernels' forms can say: measured next, and then with each kernel's other forms."""
    # deferred: pmpredict.measure loads numpy and the harness
    from pmpredict.measure import HostError, default_cache_dir

    cache_dir = cache_dir or default_cache_dir()
    path = model_path(cache_dir)
    update = HostUpdate(path, cpu_name(), budget=budget_s)
    try:
        with _locked(path, update, notify):
            model = _read(path) if os.path.exists(path) else None
            if model is None:
                model = _bootstrap(cache_dir, progress, update, core, seed_builtin)
                save_model(model, path)
            elif _front_end_dated(model):
                model = _measure_front_end(model, cache_dir, progress)
                save_model(model, path)
            if _latencies_dated(model):
                model = _measure_latencies_again(model, cache_dir, progress, update)
                save_model(model, path)
            budget = MeasureBudget(budget_s)
            left = _host_facts(model).get("left_out", {})
            partial = _host_facts(model).get("unmeasured", {}).get("forms", {})
            # forms an earlier call's budget cut short are measured again with the new ones
            # (what they had is in the measurement cache) and fitted again
            new = [f for f in dict.fromkeys(forms)
                   if (f not in model.uops or f in partial) and f not in left]
            if new:
                beside = [f for f in dict.fromkeys(forms) if f in model.uops and f not in new]
                model = _extend(model, new, cache_dir, progress, update, beside, budget)
                save_model(model, path)
            if variants is not None:
                wanted = variants(model)
                kernels = [list(k) + list(v) for k, v in zip(kernels, wanted)] or kernels
                more = [f for f in dict.fromkeys(f for v in wanted for f in v)
                        if (f not in model.uops or f in partial) and f not in left]
                if more:
                    model = _extend(model, more, cache_dir, progress, update, (), budget)
                    save_model(model, path)
            if kernels:
                checked = model
                model = _check_kernel_pairs(model, kernels, cache_dir, progress, update, budget)
                if model is not checked:
                    save_model(model, path)
    except HostError as exc:
        raise InputError("<host>", f"cannot measure this machine's model: {exc}") from None
    update.forms = len(model.uops)
    wanted = set(forms)
    update.failed.update({f: why for f, why in _host_facts(model).get("left_out", {}).items()
                          if f in wanted})
    return model, update


def _host_facts(model) -> dict:
    return model.provenance.get("host", {})


def _bootstrap(cache_dir, progress, update: HostUpdate, core, seed_builtin: bool):
    """This machine's first model: seeded from a built-in measured on this very CPU, or
    trained on the core forms; with the host facts in its provenance."""
    started = time.monotonic()
    seeded = _builtin_for(cpu_identity()) if seed_builtin and seeding_allowed() else None
    if seeded is not None:
        model, experiments = _seed(seeded, cache_dir, progress), 0
        how = f"seeded from the built-in {seeded.name}"
    else:
        model, experiments = _train_core(core, cache_dir, progress)
        how = "bootstrap"
    seconds = time.monotonic() - started
    update.created, update.bootstrap_seconds = how, seconds
    update.bootstrap_experiments = experiments
    facts = {"cpu": update.cpu, "cpu_identity": cpu_identity(),
             "created": _now(),
             "bootstrap": {"how": how, "forms": len(model.uops), "experiments": experiments,
                           "seconds": round(seconds, 1)},
             "extensions": [], "left_out": {},
             "latency_chains": _chains_version()}
    description = (f"this machine's model ({update.cpu}), measured on demand by pmpredict "
                   f"predict --model host: {how}")
    return _with_facts(model, facts, description)


def _with_facts(model, facts: dict, description: str | None = None):
    provenance = {**model.provenance, "host": facts}
    if description:
        provenance["description"] = description
    return replace(model, name=MODEL_NAME, provenance=provenance)


# PMPREDICT_HOST_SEED=off: never seed from a built-in model, so a CPU a built-in was measured on
# takes the path every other core takes (what a new core costs, timed and tested as users meet it)
SEED_ENV = "PMPREDICT_HOST_SEED"


def seeding_allowed() -> bool:
    return os.environ.get(SEED_ENV, "on").strip().lower() not in ("off", "0", "no", "false")


def _builtin_for(identity: str):
    """A built-in model whose provenance names this CPU identity, or None."""
    for name in builtin_names():
        model = load_model(name)
        if model.provenance.get("cpu_identity") == identity:
            return model
    return None


def _seed(builtin, cache_dir, progress):
    """The built-in's mapping with the latencies and the front end measured here (no
    singletons measured, so no floor under the width)."""
    # deferred: pmpredict.measure loads numpy and the harness
    from pmpredict.measure.frontend import measure_frontend
    from pmpredict.measure.latency import measure_latencies
    front = measure_frontend(cache_dir=cache_dir, progress=progress)
    table = measure_latencies(list(builtin.uops), cache_dir=cache_dir, progress=progress)
    return front.apply(table.apply(builtin))


def _front_end_dated(model) -> bool:
    """Whether the model's front end was measured by other probes than today's (which may
    give facts it lacks, or read them otherwise)."""
    # deferred: pmpredict.measure loads numpy and the harness
    from pmpredict.measure.frontend import FRONT_END_VERSION
    front = model.provenance.get("front_end")
    if not isinstance(front, dict):
        return False                    # never measured here: nothing to bring up to date
    return front.get("version") != FRONT_END_VERSION


def _chains_version() -> str:
    # deferred: measure.chains builds the chain tables, only for a host model
    from pmpredict.measure.chains import chains_version
    return chains_version()


def _latencies_dated(model) -> bool:
    """Whether the model's latencies and pipeline facts were measured with other chains than
    today's (or before the chains were recorded): a fact measured by an older reference chain
    and the latencies derived from it would disagree with forms measured since."""
    facts = _host_facts(model)
    return bool(facts) and facts.get("latency_chains") != _chains_version()


def _measure_latencies_again(model, cache_dir, progress, update: HostUpdate):
    """The model with every form's latency and every pipeline fact of the reference chains
    measured by today's chains (their uops kept; chains timed before come from the
    measurement cache)."""
    # deferred: measuring loads numpy and the harness
    from pmpredict.measure.latency import measure_latencies
    started = time.monotonic()
    table = measure_latencies([f for f in model.uops if not is_split_variant(f)],
                              cache_dir=cache_dir, progress=progress)
    update.latencies_again = time.monotonic() - started
    facts = {k: v for k, v in _host_facts(model).items()
             if k not in ("barriers_measured", "pipeline_facts_measured")}  # older markers
    return _with_facts(table.apply(model), {**facts, "latency_chains": _chains_version()})


def _measure_front_end(model, cache_dir, progress):
    """The model with its front end measured again by today's probes (the width floored
    where the first measurement had a floor: the fastest core singleton)."""
    # deferred: pmpredict.measure loads numpy and the harness
    from pmpredict.measure.frontend import measure_frontend
    old = model.provenance.get("front_end")
    floor = old.get("width_floor") if isinstance(old, dict) else None
    floor = floor if isinstance(floor, (int, float)) and floor > 0 else None
    return measure_frontend(cache_dir=cache_dir, progress=progress, floor=floor).apply(model)


def _train_core(core, cache_dir, progress):
    """(the core forms' model: their training set, the front end and the inference of the
    training workflow, with the host model's settings; experiments measured)."""
    # deferred: measuring loads numpy and the harness, inferring numba
    from pmpredict.host.extend import FINAL_VOLUME_WEIGHT
    from pmpredict.host.workflow import NothingRunsHere, TrainingOptions, infer_once, train_here
    from pmpredict.host import warm
    from pmpredict.measure import HostError
    from pmpredict.measure.host_forms import packaged_forms

    # numba compiles the inference (7 s of a fresh install's first model) while the core is
    # measured, in a process that only takes a CPU the harness leaves idle
    compiling = warm.start()

    def infer(measured):
        warm.wait(compiling)
        training = measured.training
        return infer_once(measured, seed=SEED, volume_weight=FINAL_VOLUME_WEIGHT,
                          name=MODEL_NAME, display=progress,
                          provenance={"core_forms": len(training.singletons.forms),
                                      "left_out_of_core": training.left_out})
    try:
        trained = train_here(list(core or packaged_forms("core")),
                             TrainingOptions(cache_dir=cache_dir, progress=progress), infer)
    except NothingRunsHere as exc:
        raise HostError("none of the core forms runs here: "
                        + "; ".join(f"{f}: {why}" for f, why in exc.left_out.items())) from None
    finally:
        warm.stop(compiling)
    return trained.model, trained.measured.experiment_count


def _extend(model, new, cache_dir, progress, update: HostUpdate, beside=(),
            budget: MeasureBudget = MeasureBudget()):
    """The model with the forms `new` measured and fitted (or remembered as unusable);
    `beside`: forms of the model the same kernels use (measured beside the new forms they
    share ports with). Once `budget` is spent, the experiments beside the blockers and of the
    new forms together stop; a form fitted on fewer than all of its experiments is recorded
    as unmeasured in part (provenance.host.unmeasured.forms) and measured again next time."""
    # deferred: measuring loads numpy and the harness, fitting numba
    from pmpredict.host.extend import (OVERLAP_PAIRS, blockers_of, budget_order,
                                       extension_experiments,
                                       fit_new_forms, model_throughput, overlap_experiments)
    from pmpredict.infer.singletons_and_pairs import (singleton_experiments,
                                                      singleton_failures, singleton_throughputs)
    from pmpredict.measure.latency import measure_latencies

    started = time.monotonic()
    model = model.with_uops({f: u for f, u in model.uops.items() if f not in new})

    def measure(name, exps, budgeted=True):
        return _measure_within(name, exps, cache_dir, progress,
                               budget if budgeted else MeasureBudget())

    singles = measure("new forms", singleton_experiments(new), budgeted=False)
    measured = singleton_throughputs(singles)
    usable = [f for f in new if measured.get(f)]
    failed = singleton_failures(singles, new)
    throughput = {**model_throughput(model.uops, model.r_max), **measured}
    blockers = blockers_of(model.uops, throughput)
    both, fit = singles, None
    unmeasured = dict(_host_facts(model).get("unmeasured", {}).get("forms", {}))
    for f in new:
        unmeasured.pop(f, None)
    if usable:
        planned = budget_order(extension_experiments(usable, blockers, throughput), usable,
                               throughput)
        pairs = measure("beside blockers", planned)
        for f in usable:
            mine = [e for e in pairs.experiments if any(g == f for g, _ in e.counts)]
            done = sum(1 for e in mine if e.cycles is not None)
            if done < len(mine):
                unmeasured[f] = f"measured beside {done} of {len(mine)} blockers"
        both = singles.concat(pairs)
        fit = fit_new_forms(model.uops, len(model.ports), both, usable, r_max=model.r_max)
        together = overlap_experiments(fit.uops, throughput, OVERLAP_PAIRS * len(fit.uops),
                                       {f: model.uops[f] for f in beside})
        if together:
            both = both.concat(measure("new forms together", together))
            fit = fit_new_forms(model.uops, len(model.ports), both, usable, r_max=model.r_max,
                                start=fit.uops)
        # a split variant's latency is its form's (the engine reads the form's)
        table = measure_latencies([f for f in fit.uops if not is_split_variant(f)],
                                  cache_dir=cache_dir, progress=progress)
        model = _add_forms(model, fit.uops, table)
    added = dict(fit.uops) if fit else {}
    seconds = time.monotonic() - started
    experiments = sum(1 for e in both.experiments if e.cycles is not None)
    facts = dict(_host_facts(model))
    facts["left_out"] = {**facts.get("left_out", {}), **failed}
    facts["unmeasured"] = {**facts.get("unmeasured", {}), "forms": unmeasured}
    update.unmeasured_forms.update({f: why for f, why in unmeasured.items() if f in new})
    if added:
        facts["extensions"] = list(facts.get("extensions", [])) + [{
            "date": _now(), "forms": list(added),
            "experiments": experiments, "seconds": round(seconds, 1), "blockers": blockers,
            "fit_error": {f: round(e, 4) for f, e in fit.error.items()}}]
    update.measured += list(added)
    update.experiments += experiments
    update.seconds += seconds
    update.failed.update(failed)
    return _with_facts(model, facts)


def _measure_within(name: str, exps, cache_dir, progress, budget: MeasureBudget):
    """The experiments measured (phase `name`) until the budget is spent: what was measured,
    the rest without cycles and with error "not measured"."""
    # deferred: measuring loads numpy and the harness
    from pmpredict.measure import MeasurementStopped, measure_experiment_set
    from pmpredict.model.experiments import ExperimentSet
    forms = tuple(dict.fromkeys(f for e in exps for f, _ in e.counts))
    try:
        return measure_experiment_set(
            ExperimentSet(forms, tuple(exps), HARNESS_ISA, f"host model ({name})"),
            cache_dir=cache_dir, progress=progress, phase=name,
            should_stop=budget.over if budget.seconds is not None else None)
    except MeasurementStopped as stopped:
        return stopped.partial


def _check_kernel_pairs(model, kernels, cache_dir, progress, update: HostUpdate,
                        budget: MeasureBudget = MeasureBudget()):
    """The model with the pairs of forms its kernels use together measured (those not checked
    before), and the extension forms of the pairs it predicts wrongly fitted again, then the
    other forms of the pairs still off (host.extend, step 4); the model itself where there is
    nothing new to check."""
    # deferred: measuring loads numpy and the harness, fitting numba
    from pmpredict.host.extend import (PAIRS_PER_CALL, blockers_of, earlier_pairs,
                                       extension_experiments, kernel_pairs, mispredicted,
                                       model_throughput, pair_digest, partners_to_fit, refit)
    from pmpredict.host.training import measure_training_set
    from pmpredict.measure.host_forms import packaged_forms
    from pmpredict.infer.design import balanced_pair
    from pmpredict.infer.singletons_and_pairs import singleton_experiments
    from pmpredict.model.experiments import ExperimentSet

    facts = dict(_host_facts(model))
    movable = {f for e in facts.get("extensions", []) for f in e.get("forms", ())}
    checked = set(facts.get("pairs_checked", ()))
    pairs = kernel_pairs(kernels, model.uops, movable, checked)[:PAIRS_PER_CALL]
    unmeasured = facts.get("unmeasured", {})
    if not pairs:
        if unmeasured.get("pairs"):
            facts["unmeasured"] = {**unmeasured, "pairs": []}
            return _with_facts(model, facts)
        return model
    started = time.monotonic()

    def measure(name, exps):
        return _measure_within(name, exps, cache_dir, progress, budget)

    throughput = model_throughput(model.uops, model.r_max)
    together = measure("forms the kernels use together",
                       [balanced_pair(a, b, throughput) for a, b in pairs])
    # the pairs the budget left: measured by a later call, said in the meantime
    left = [(a, b) for (a, b), e in zip(pairs, together.experiments) if e.cycles is None
            and not e.other.get("error", "").startswith(("SIGILL", "does not", "cannot"))]
    pairs = [p for p in pairs if p not in set(left)]
    facts["unmeasured"] = {**unmeasured, "pairs": [list(p) for p in left]}
    update.unmeasured_pairs += left
    wrong = mispredicted(model.uops, together.experiments, model.r_max)
    forms = sorted({f for e in wrong for f, _ in e.counts if f in movable})
    moved, experiments = {}, sum(1 for e in together.experiments if e.cycles is not None)

    def fit_again(forms, core=()):
        """The forms fitted again on their singletons, blocker pairs and kernel pairs (now
        and by earlier checks: a fit on this check's alone could undo them), and the core
        training experiments `core` that have them; the model with what moved, and whether
        the budget cut the measuring short."""
        nonlocal model, experiments
        blockers = blockers_of(model.uops, throughput)
        earlier = earlier_pairs(forms, model.uops, checked)
        alone = measure("forms fitted again", singleton_experiments(forms)
                        + extension_experiments(forms, blockers, throughput)
                        + [balanced_pair(a, b, throughput) for a, b in earlier])
        theirs = [e for e in together.experiments if any(f in forms for f, _ in e.counts)]
        theirs += [e for e in core if any(f in forms for f, _ in e.counts)
                   and all(f in model.uops for f, _ in e.counts)]
        measured = alone.concat(ExperimentSet(together.forms, tuple(theirs), HARNESS_ISA,
                                              "kernel pairs"))
        experiments += sum(1 for e in alone.experiments if e.cycles is not None)
        fitted = refit(model.uops, len(model.ports), measured, forms, r_max=model.r_max)
        if fitted:
            model = model.with_uops({**model.uops, **fitted})
            moved.update(fitted)
        return any(e.cycles is None and e.other.get("error") == "not measured"
                   for e in alone.experiments)
    cut = fit_again(forms) if forms else False
    # a pair still off whose own forms could not mend it: its other form (a core form, or
    # one not in the pair's kernel extension) is fitted again too, with the core's training
    # experiments of it (Zen 4: `vmovq r64, xmm` beside `shl r32, imm8` 1.50 cycles a pair,
    # the core form's uops kept it at 1.20 however shl moved). Only in a model bootstrapped
    # here: a seeded one never measured its core (the training set would be measured now,
    # outside the budget), and its core forms are the built-in's
    bootstrapped = facts.get("bootstrap", {}).get("how") == "bootstrap"
    partners = partners_to_fit(mispredicted(model.uops, together.experiments, model.r_max),
                               forms) if bootstrapped else []
    if partners and not cut:
        # a core form keeps what the core's own pairs say of it (from the measurement cache)
        core = measure_training_set(packaged_forms("core"), cache_dir=cache_dir).combined()
        cut = fit_again(partners, core.experiments)
    if forms or partners:
        if cut:
            # the budget cut the refit short: the pairs it was for are checked again (and
            # said to be unmeasured meanwhile) by the next call
            still = [tuple(sorted(f for f, _ in e.counts)) for e in
                     mispredicted(model.uops, together.experiments, model.r_max)]
            still = [p for p in still if len(p) == 2 and p in set(pairs)]
            pairs = [p for p in pairs if p not in set(still)]
            facts["unmeasured"] = {**facts["unmeasured"],
                                   "pairs": facts["unmeasured"]["pairs"] + [list(p) for p in still]}
            update.unmeasured_pairs += still
    facts["pairs_checked"] = sorted(checked | {pair_digest(a, b) for a, b in pairs})
    facts["pair_checks"] = list(facts.get("pair_checks", [])) + [{
        "date": _now(), "pairs": len(pairs), "mispredicted": len(wrong),
        "still_mispredicted": len(mispredicted(model.uops, together.experiments, model.r_max)),
        "refitted": sorted(moved), "seconds": round(time.monotonic() - started, 1)}]
    update.experiments += experiments
    update.seconds += time.monotonic() - started
    update.refitted += sorted(moved)
    return _with_facts(model, facts)


def _add_forms(model, uops: dict, table):
    """The model with more forms: their uops and their measured latencies."""
    fields = {name: dict(getattr(model, name)) for name in PER_FORM_FIELDS}
    for form in uops:
        for name, value in table.model_fields(form).items():
            fields[name][form] = value
    return model.with_uops({**model.uops, **uops}, **fields)


# --- what `pmpredict models` says about it ------------------------------------------------------

def describe(cache_dir: str | None = None) -> dict:
    """This machine's model at a glance: where it is, what it covers, when it was measured."""
    path = model_path(cache_dir)
    out = {"name": MODEL_NAME, "cpu": cpu_name(), "path": path, "measured": os.path.exists(path)}
    if not out["measured"]:
        return out
    try:
        model = _read(path)
    except InputError as exc:
        out["damaged"] = exc.message
        return out
    facts = _host_facts(model)
    extensions = facts.get("extensions", [])
    out.update(isa=model.isa, ports=len(model.ports), forms=len(model.uops),
               with_latency=sum(1 for f in model.uops if f in model.latency),
               r_max=model.r_max, pipeline=dict(model.pipeline),
               created=facts.get("created"),
               last_measured=extensions[-1]["date"] if extensions else facts.get("created"),
               bootstrap=facts.get("bootstrap"), extensions=len(extensions),
               unusable=len(facts.get("left_out", {})))
    front = model.provenance.get("front_end")
    if isinstance(front, dict) and front.get("doubts"):
        out["front_end_doubts"] = list(front["doubts"])
    latencies = model.provenance.get("latencies")
    if isinstance(latencies, dict) and isinstance(latencies.get("doubts"), dict):
        out["fact_doubts"] = [str(v) for v in latencies["doubts"].values()]
    return out
