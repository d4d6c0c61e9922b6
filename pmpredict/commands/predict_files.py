"""`pmpredict predict` over files: what the command does between its flags and its output.

Each file (or standard input) is parsed and its kernels chosen (the selected one, or every
LLVM-MCA region as llvm-mca does); each ISA gets its model (given; else this machine's when it
has been measured and the kernel is of the ISA the harness measures; else the ISA's built-in,
with a hint on how to get this machine's; with --model host, this machine's with the forms of
every kernel collected for host.model measured into it); a Predictor per model
predicts every kernel, in order, over forked workers when asked (batch.render_all); the JSON
of several files is one object per file, with its regions.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from pmpredict.isa import semantics
from pmpredict.errors import InputError
from pmpredict.asm.kernel import all_regions, select_kernel
from pmpredict.asm.parse import parse_file, parse_source
from pmpredict.commands.common import load_model
from pmpredict.formats import prepared
from pmpredict.formats.files import decode_utf8
from pmpredict.formats.model_files import check_same_isa
from pmpredict.host.model import kernel_forms, load_cached
from pmpredict.measure.cpu import HARNESS_ISA, harness_runs_here
from pmpredict.model.machine import HOST_MODEL
from pmpredict import models as builtin_models
from pmpredict.predict.predictor import STAGES, Predictor

STDIN = "-"
# from this many instructions to simulate (over all kernels) on, the simulation runs compiled
# (numba: ~0.6 s to load, then ~20x faster; the Python simulation takes ~0.7 ms an
# instruction; measured: one kernel of 1,000 took 0.76 s in all without it, 1.11 s with it,
# one of 4,000 2.69 s without, 1.09 s with);
# sooner when the report includes the bottlenecks' costs (a simulation each)
COMPILED_FROM = 2000
COMPILED_FROM_WITH_COSTS = 500


@dataclass(frozen=True)
class Source:
    """One input file and the kernels to predict in it."""
    path: str                  # "<stdin>" for standard input
    syntax: str
    isa: str
    kernels: tuple


def read_sources(paths, *, syntax=None, isa=None, lines=None, region=None,
                 stdin=None) -> list[Source]:
    """Parse every file (STDIN: `stdin`, a binary stream, read once) and choose its kernels."""
    if list(paths).count(STDIN) > 1:
        raise InputError("<command line>", "standard input (-) can be read once")
    out = []
    for path in paths:
        if path == STDIN:
            path = "<stdin>"
            program = parse_source(decode_utf8(stdin.read(), path), path, syntax=syntax, isa=isa)
        else:
            program = parse_file(path, syntax=syntax, isa=isa)
        out.append(Source(path, program.syntax, program.isa,
                          tuple(kernels_of(program, lines, region))))
    return out


def kernels_of(program, lines=None, region=None) -> list:
    """The kernels of a file: the selected one, or every LLVM-MCA region (as llvm-mca)."""
    kernel = select_kernel(program, lines=lines, region=region)
    if kernel.how == "llvm-mca-region" and region is None and kernel.others \
            and len(kernel.others) > 1:
        return all_regions(program)
    return [kernel]


def is_host(spec) -> bool:
    """`--model host` names this machine's model (unless a file of that name exists)."""
    return spec == HOST_MODEL and not os.path.exists(spec)


def model_for(spec, isa: str, path: str):
    """The model `spec` (None: the ISA's built-in default) for a kernel of `isa` in `path`."""
    if spec is None:
        spec = semantics.get(isa).default_model
        if builtin_models.builtin_path(spec) is None:
            raise InputError(path, f"no built-in {isa} model {spec!r} is installed; "
                                   "give one with --model FILE")
    model = load_model(spec)
    if model.isa != isa:
        raise InputError(path, f"the kernel is {isa} but model {model.name!r} is {model.isa}; "
                               "choose a matching --model (or --isa)")
    return model


def models_for(sources, spec) -> dict:
    """ISA -> model, for every ISA among the sources (not for this machine's model)."""
    models = {}
    for src in sources:
        if src.isa not in models:
            models[src.isa] = model_for(spec, src.isa, src.path)
    return models


# said with a prediction that used a built-in model where this machine's could be measured
HOST_HINT = ("this machine has no model yet: `--model host` measures one (a minute or two, once; "
             "seconds where a built-in model was measured on this CPU) and predictions use it "
             "by default from then on")


def default_models(sources) -> tuple[dict, str | None]:
    """ISA -> model when no --model is given: this machine's model for the ISA the harness
    measures, once it has been measured (`--model host`), else the ISA's built-in; and the hint
    that says how to get this machine's where a built-in stood in for it (None otherwise)."""
    here = harness_runs_here() and any(src.isa == HARNESS_ISA for src in sources)
    host = load_cached() if here else None
    models = {}
    for src in sources:
        if src.isa not in models:
            models[src.isa] = host if host is not None and src.isa == host.isa else \
                model_for(None, src.isa, src.path)
    return models, HOST_HINT if here and host is None else None


def host_forms(sources) -> tuple[list[str], list, list[list[str]]]:
    """(the forms every kernel needs, [(line, text, why)] of instructions that cannot be
    measured, the forms of each kernel) for this machine's model; an ISA the harness cannot
    measure is refused."""
    # deferred: pmpredict.measure loads numpy and the harness, only for --model host
    from pmpredict.measure.instantiate import HARNESS_ISA

    forms, left_out, kernels = [], [], []
    for src in sources:
        if src.isa != HARNESS_ISA:
            raise InputError(src.path, f"the kernel is {src.isa}; this machine's model "
                                       f"(--model host) is measured for {HARNESS_ISA} only")
        for k in src.kernels:
            more, left = kernel_forms(k.instructions, src.syntax, src.isa)
            seen = set(forms)
            forms += [f for f in more if f not in seen]
            left_out += left
            kernels.append(more)
    return forms, left_out, kernels


# the stages that say which loads split (no bounds, no simulation)
ANNOTATION_STAGES = tuple(s for s in STAGES if s.name in ("matched", "annotated"))


def split_variants(model, sources) -> list[list[str]]:
    """The split variants (isa.forms.split_variant) of each kernel's forms whose load crosses
    a line on every iteration, as the predictor finds them with `model`: one list per kernel,
    in host_forms' order."""
    predictor = Predictor(model, criticality=False, stages=ANNOTATION_STAGES, derived=())
    out = []
    for src in sources:
        for k in src.kernels:
            annotated = predictor.predict(k, src.syntax, src.path).stage("annotated")
            out.append(list(annotated.split_variants) if annotated is not None else [])
    return out


def with_fallback(spec: str, model):
    """`model` with the forms it lacks taken from the model `spec` (--fallback)."""
    # deferred: the alignment loads numpy and scipy, only for --fallback
    from pmpredict.predict.fallback import with_fallback as merged

    other = load_model(spec)
    check_same_isa(model, other.isa, spec, "the fallback is")
    try:
        return merged(model, other)
    except ValueError as exc:
        raise InputError(spec, str(exc)) from None


def predictors(models: dict, *, instructions: int, costs: bool, exact: bool = False,
               fallback: str | None = None) -> dict:
    """ISA -> Predictor; compiled simulation from enough instructions (over all kernels) to
    pay for its loading."""
    compiled = instructions >= (COMPILED_FROM_WITH_COSTS if costs else COMPILED_FROM)
    made = {isa: Predictor(model, allow_approx=not exact, compiled=compiled,
                           fallback=with_fallback(fallback, model) if fallback else None)
            for isa, model in models.items()}
    for predictor in made.values():
        keep_prepared(predictor)
    return made


def keep_prepared(predictor) -> None:
    """Keep the predictor's model, read from a file, ready for the next run (formats.prepared)
    with what every prediction derives from it."""
    if "source" in predictor.model.derived and "kept" not in predictor.model.derived:
        predictor.port_kinds()
        prepared.keep(predictor.model)


def items(sources) -> list[tuple]:
    """(source, kernel, first) for every kernel to predict, in order."""
    return [(src, kernel, not n and not k) for n, src in enumerate(sources)
            for k, kernel in enumerate(src.kernels)]


def light_item(item: tuple) -> tuple:
    """An item without its file's other kernels: what a cluster worker needs to render it."""
    src, kernel, first = item
    return replace(src, kernels=()), kernel, first


def per_file_json(sources, records: list, host: dict | None = None, hint: str | None = None):
    """The --json output: one object per file (the first kernel's, with every region's as
    `regions` where there are several, `host` when this machine's model was measured into, and
    `hint` when a built-in stood in for a model of this machine); the object itself for one
    file."""
    out, at = [], 0
    for src in sources:
        obj = records[at]
        if len(src.kernels) > 1:                 # as llvm-mca: the first, then every region
            obj = dict(obj, regions=records[at:at + len(src.kernels)])
        if host is not None:
            obj = dict(obj, host=host)
        if hint is not None and src.isa == HARNESS_ISA:
            obj = dict(obj, hint=hint)
        out.append(obj)
        at += len(src.kernels)
    return out[0] if len(out) == 1 else out
