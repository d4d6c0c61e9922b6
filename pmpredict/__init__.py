"""pmpredict: port-mapping inference (PMEvo) and basic-block throughput prediction."""

__version__ = "0.1.0"
