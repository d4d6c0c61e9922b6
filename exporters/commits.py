"""A model as pmpredict's engine runs it, for an export: its measured store commits as ports.

Where a model's pipeline gives `store_commits` (measured on the host: how many stores commit a
cycle whatever their forms), the engine gives every store a uop on that many commit ports of
its own, after the model's (the model's store-commit rule, predict.store_commits). An
exported file has no pipeline facts of that kind, so the export carries them as what they are
to the engine: ports (named as the rule names them, `store`...) and one more uop on them in
every store form. A form stores when an instance of it does (the ISA's semantics of its
example instance: a push stores, as its instruction does, though no operand names the
memory). Store pairing (the rule's PairedWithinBlock, where the model's paired_stores says
stores pair) has no counterpart in either format and is not exported.
"""

from __future__ import annotations

from dataclasses import replace

from pmpredict.asm.parse import parse_source
from pmpredict.isa import semantics
from pmpredict.isa.examples import example_instance
from pmpredict.isa.forms import parse_form
from pmpredict.predict.annotate import machine_facts
from pmpredict.predict.store_commits import store_commit_rule


def with_commit_ports(model):
    """`model` with its store-commit ports and every store form's uop on them, and without the
    store_commits fact they stand for; the model itself where it gives no store_commits."""
    names = store_commit_rule(machine_facts(model, loop=True)).commit_ports()
    if not names:
        return model
    mask = ((1 << len(names)) - 1) << len(model.ports)
    isa = semantics.get(model.isa)
    uops = {form: tuple(u) + ((mask, 1),) if _stores(form, isa) else u
            for form, u in model.uops.items()}
    # the fact is in the ports now: a file read back must not add the ports again
    return replace(model, ports=tuple(model.ports) + names, uops=uops,
                   pipeline={k: v for k, v in model.pipeline.items() if k != "store_commits"},
                   pipeline_source={k: v for k, v in model.pipeline_source.items()
                                    if k != "store_commits"})


def _stores(form: str, isa) -> bool:
    """Whether an instance of the form writes memory (False for a form no instance can be
    made of: an imported foreign name)."""
    try:
        text = example_instance(parse_form(form, isa.name))
    except ValueError:
        return False
    syntax = isa.example_syntax or isa.default_syntax
    instructions = parse_source(text + "\n", "<form>", syntax=syntax,
                                isa=isa.name).instructions
    return bool(instructions) and isa.instruction(instructions[0], syntax).stores
