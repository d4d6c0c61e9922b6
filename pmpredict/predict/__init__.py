"""Prediction engines and their driver: a kernel and a model in, one Report out.

predictor.py   the stages: match -> annotate -> bounds -> simulate -> costs
throughput.py  the exact throughput bound of many experiments at once (numba)
port_bound.py  the same optimum for one kernel, with a port schedule (its max flow in C:
               _portflow.c; plain Python where that is not built)
deps.py        the dependence graph, loop-carried chains (maximum cycle ratio), critical path
               (the chains and path in C: _chains.c; plain Python where that is not built)
simulation.py  the out-of-order simulation (simulation_arrays.py its arrays, _jit compiled)
criticality.py Fields' costs: slack, cost, interaction cost
"""
