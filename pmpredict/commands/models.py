"""`pmpredict models`: list the built-in models and this machine's, or show one model and its
forms."""

from __future__ import annotations

from dataclasses import dataclass

from pmpredict.errors import InputError
from pmpredict.commands.common import emit, load_model
from pmpredict.models import builtin_names


@dataclass(frozen=True)
class ModelListing:
    models: tuple                 # (name, MachineModel, kinds.PortKinds) triples
    forms: bool = False           # list the forms of the (one) model
    host: dict | None = None      # this machine's model at a glance (host.model.describe)


def register(sub):
    p = sub.add_parser("models", help="list the built-in machine models, or one model's forms",
                       description="Without M: the built-in models (name, ISA, ports, forms, "
                                   "uop volume, where they come from) and what the uops on each "
                                   "port do (share of the port's uop mass), and this machine's "
                                   "model (--model host). With M (a built-in "
                                   "name or a model file): that model; with --forms, every form "
                                   "and its uops.")
    p.add_argument("model", nargs="?", metavar="M", help="a built-in name or a model file")
    p.add_argument("--forms", action="store_true", help="list the forms of M and their uops")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args):
    # deferred: the views load lark (~0.1 s), kinds the predict package; --help imports this
    from pmpredict.predict.kinds import port_kinds
    from pmpredict.views import models as view

    if args.forms and args.model is None:
        raise InputError("<command line>", "--forms lists the forms of one model: give M")
    names = [args.model] if args.model is not None else builtin_names()
    entries = []
    for name in names:
        model = load_model(name)
        entries.append((name, model, port_kinds(model)))
    host = None
    if args.model is None:
        # deferred: host.model (~9 ms), only for the listing without M; --help imports this
        from pmpredict.host.model import describe
        host = describe()
    emit(view, ModelListing(tuple(entries), args.forms, host), args.json)
    return 0
