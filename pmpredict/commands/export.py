"""`pmpredict export`: write a model in one of the formats of exporters/registry.py."""

from __future__ import annotations

import sys

from pmpredict.errors import InputError
from pmpredict.exporters import registry
from pmpredict.exporters.commits import with_commit_ports
from pmpredict.formats.files import check_output
from pmpredict.commands.common import emit, load_model, name_value


def _either(phrases: list[str]) -> str:
    """"a", "a or b", "a, b or c"."""
    return phrases[0] if len(phrases) == 1 else f"{', '.join(phrases[:-1])} or {phrases[-1]}"


def register(sub):
    p = sub.add_parser("export", help="write a model as an OSACA YAML file or LLVM TableGen",
                       description=f"Write a model as "
                                   f"{_either([e.description for e in registry.EXPORTERS])}. "
                                   "Forms a format cannot express are listed in a comment, never "
                                   "guessed; a model the format cannot carry at all is refused "
                                   "before anything is written.")
    p.add_argument("model_arg", nargs="?", metavar="M",
                   help="model file (native JSON, PMEvo Mapping3, OSACA YAML) or built-in name")
    p.add_argument("--model", "-m", metavar="M", help="the model, as a flag (instead of M)")
    p.add_argument("--format", "-f", required=True, choices=registry.names(),
                   help="target format")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="file to write")
    for exporter in registry.EXPORTERS:
        exporter.add_arguments(p)
    p.add_argument("--name", type=name_value,
                   help="model name in the output (default: the model's name)")
    p.add_argument("--json", action="store_true",
                   help="print what was written as JSON on stdout (default: a line on stderr)")
    p.set_defaults(func=run)


def run(args):
    # deferred: the views load lark (~0.1 s); --help imports this
    from pmpredict.views import export as view

    if (args.model_arg is None) == (args.model is None):
        raise InputError("<command line>", "give the model once: as M or as --model M")
    spec = args.model_arg or args.model
    check_output(args.output, "export")
    # the model as the engine runs it: its measured store commits as ports (exporters.commits)
    model = with_commit_ports(load_model(spec))
    if args.name:
        model = model.with_uops(model.uops, name=args.name)
    result = registry.get(args.format).export(model, args.output, args, spec)
    if args.json:
        emit(view, result, True)
    else:
        sys.stderr.write(view.text(result))
    return 0
