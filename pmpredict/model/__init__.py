"""The data layer: machine models, instruction forms, value rules. Types and pure functions, no I/O.

machine.py      MachineModel: forms -> uops (port sets, counts), latencies, pipeline facts
experiments.py  Experiment, ExperimentSet: multisets of forms with measured cycles
validate.py     what a number or a name read from a file or the command line may be
"""
