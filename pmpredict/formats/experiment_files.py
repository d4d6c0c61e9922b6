"""Experiment sets: multisets of forms with (optionally) measured cycles.

Native JSON::

    {"format": "pmpredict-experiments", "version": 1, "isa": "x86",
     "forms": [...all forms the set may use...],
     "experiments": [{"forms": {"FORM": 2, "OTHER": 1}, "cycles": 1.5}, ...]}

``cycles`` is the measured reciprocal throughput of one instance of the whole
multiset (null when not measured yet; a failed measurement has "error").
The PMEvo artifact's ``ExperimentList`` files load too.
"""

from __future__ import annotations

import os
from dataclasses import replace

from pmpredict.isa import semantics
from pmpredict.errors import InputError
from pmpredict.formats.jsonio import JsonDocument, read_json, write_json
from pmpredict.isa.osaca_forms import is_foreign
from pmpredict.model.experiments import FORMAT_NAME, FORMAT_VERSION, Experiment, ExperimentSet
from pmpredict.model.validate import (MAX_COUNT, MAX_CYCLES, count_problem, cycles_problem,
                                      name_problem, number_problem)

def save_experiments(experiments: ExperimentSet, path) -> None:
    """Write an experiment set as native JSON (atomically)."""
    write_json(path, experiments.to_json())


def _cycles(doc: JsonDocument, value, where: str):
    """Measured cycles: a number in the validated range, or None (not measured)."""
    if value is None:
        return None
    why = cycles_problem(value)
    if why:
        raise doc.error(f"{where}: cycles {why} (or null: not measured)")
    return float(value)


def _list(doc: JsonDocument, value, what: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise doc.error(f"'{what}' must be a list, not {value!r}"[:200], what)
    return value


def _other_results(doc: JsonDocument, results, where: str) -> dict:
    """Other tools' predictions of a PMEvo experiment: {"cycles_<id>": cycles}."""
    other = {}
    for o in _list(doc, results, "other_results"):
        if not isinstance(o, dict) or "id" not in o:
            continue
        if not isinstance(o["id"], str) or name_problem(o["id"]):
            raise doc.error(f"{where}: other_results id must be a name, not {o['id']!r}", "id")
        cycles = o.get("cycles")
        if cycles is not None and number_problem(cycles, 0.0, MAX_CYCLES):
            raise doc.error(f"{where}: other_results {o['id']!r} cycles "
                            f"{number_problem(cycles, 0.0, MAX_CYCLES)}", o["id"])
        other[f"cycles_{o['id'].lower()}"] = cycles
    return other


def _from_pmevo(doc: JsonDocument) -> ExperimentSet:
    arch = doc.data.get("arch")
    if not isinstance(arch, dict) or not isinstance(arch.get("insns"), list):
        raise doc.error("ExperimentList without an 'arch' object with 'insns'", "arch")
    insns = doc.name_list(arch["insns"], "'arch.insns'")
    known = set(insns)
    exps = []
    for i, e in enumerate(_list(doc, doc.data.get("exps"), "exps")):
        iseq = e.get("iseq") if isinstance(e, dict) else None
        if not isinstance(iseq, list) or not iseq:
            raise doc.error(f"experiment {i}: needs a non-empty 'iseq' list", "exps")
        for f in iseq:
            if not isinstance(f, str) or f not in known:
                raise doc.error(f"experiment {i}: form {f!r} is not in the architecture's 'insns'",
                                f if isinstance(f, str) else "iseq")
        if len(iseq) > MAX_COUNT:
            raise doc.error(f"experiment {i}: more than {MAX_COUNT} instructions", "iseq")
        result = e.get("result")
        if result is not None and not isinstance(result, dict):
            raise doc.error(f"experiment {i}: 'result' must be an object {{\"cycles\": c}}, "
                            f"not {result!r}"[:200], "result")
        cycles = _cycles(doc, (result or {}).get("cycles"), f"experiment {i}")
        other = _other_results(doc, e.get("other_results"), f"experiment {i}")
        exps.append(Experiment.of(iseq, cycles, other))
    ports = arch.get("ports")
    return ExperimentSet(tuple(insns), tuple(exps), semantics.isa_of_forms(insns),
                         os.path.basename(doc.path),
                         len(ports) if isinstance(ports, list) and ports else None)


def _from_native(doc: JsonDocument) -> ExperimentSet:
    data = doc.data
    if data.get("version") != FORMAT_VERSION:
        raise doc.error(f"unsupported experiment format version {data.get('version')!r}", "version")
    forms = doc.name_list(data.get("forms"), "'forms'")
    known = set(forms)
    isa = data.get("isa") or semantics.isa_of_forms(forms)
    if not isinstance(isa, str) or isa not in semantics.ISAS:
        raise doc.error(f"'isa' must be {' or '.join(repr(i) for i in semantics.ISAS)}, not {isa!r}",
                        "isa")
    stranger = next((f for f in forms if not is_foreign(f) and not semantics.get(isa).owns_form(f)),
                    None)
    if stranger is not None:
        raise doc.error(f"form {stranger!r} is not spelled as a form of the file's isa {isa!r}",
                        stranger)
    exps = []
    for i, e in enumerate(_list(doc, data.get("experiments"), "experiments")):
        if not isinstance(e, dict) or not isinstance(e.get("forms"), dict) or not e["forms"]:
            raise doc.error(f"experiment {i}: needs a non-empty 'forms' object {{form: count}}",
                            "experiments")
        for f, n in e["forms"].items():
            if f not in known:
                raise doc.error(f"experiment {i}: form {f!r} is not in 'forms'", f)
            why = count_problem(n)
            if why:
                raise doc.error(f"experiment {i}: count of {f!r} {why}", f)
        other = {k: v for k, v in e.items() if k not in ("forms", "cycles")}
        exps.append(Experiment.of(e["forms"], _cycles(doc, e.get("cycles"), f"experiment {i}"),
                                  other))
    return ExperimentSet(tuple(forms), tuple(exps), isa, os.path.basename(doc.path))


def load_experiments(path) -> ExperimentSet:
    doc = read_json(path)
    if not isinstance(doc.data, dict):
        raise InputError(doc.path, "expected a JSON object (an experiment list)", 1, 1)
    if doc.data.get("kind") == "ExperimentList":
        return _from_pmevo(doc)
    if doc.data.get("format") == FORMAT_NAME:
        return _from_native(doc)
    raise InputError(doc.path, f"not an experiment file: expected \"format\": \"{FORMAT_NAME}\" "
                               "or a PMEvo \"kind\": \"ExperimentList\"", 1, 1)


def load_many(paths) -> ExperimentSet:
    """The experiments of several files as one set; `ports` is the count the PMEvo files
    among them declare, if they agree."""
    sets = [load_experiments(p) for p in paths]
    out = sets[0]
    for s in sets[1:]:
        out = out.concat(s)
    declared = {s.ports for s in sets if s.ports is not None}
    return replace(out, ports=declared.pop() if len(declared) == 1 else None)
