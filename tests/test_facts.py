"""The registry of machine facts (model/facts.py): every table derived from it agrees with it,
every fact names what measures it and that prober says it produces the fact, and the engines'
reader records exactly the assumptions that are said."""

import dataclasses

import pytest

from pmpredict.measure import probes as probes_module
from pmpredict.measure.chains import PIPELINE_REFERENCES, REFERENCES
from pmpredict.measure.probes import READERS, read_frontend, version
from pmpredict.model.defaults import ASSUMED
from pmpredict.model.facts import (BY_KEY, FACTS, FLAG, FORWARDING_KEYS, FUSION_KEYS,
                                   PIPELINE_FLAGS, PIPELINE_KEYS, FactReader, fact_value, wording)
from pmpredict.model.machine import MachineModel
from pmpredict.predict.deps import Forwarding

CHAINS = "chains:"


def test_each_fact_is_declared_once_and_the_tables_derive_from_it():
    assert len(BY_KEY) == len(FACTS)
    assert list(PIPELINE_KEYS) == [f.key for f in FACTS]
    assert PIPELINE_FLAGS == {f.key for f in FACTS if f.kind == FLAG}
    assert all(ASSUMED[f.key] == f.assumed for f in FACTS if f.assumed is not None)
    assert set(FUSION_KEYS.values()) == {f.key for f in FACTS if f.key.startswith("macro_fusion")}
    # each kind of forwarding is a field of the engine's Forwarding
    assert set(FORWARDING_KEYS) <= {f.name for f in dataclasses.fields(Forwarding)}
    for fact in FACTS:
        assert fact.falls_back_to is None or fact.falls_back_to in BY_KEY
        # a fact the engines take where it is absent has a value there: its own or its fallback's
        # ... or, where the rule is off without it, the prediction says so
        assert fact.assumed is not None or fact.falls_back_to or fact.wording or \
            fact.key == "atomic_cycles"


def test_every_measured_fact_names_a_prober_that_declares_it():
    """Front-end facts name the reader group of measure/probes.py that produces them, and each
    reader's keys are facts naming it; latency facts name a chain of measure/chains.py."""
    named = {}
    for fact in FACTS:
        if fact.probe is None:
            continue
        if fact.probe.startswith(CHAINS):
            assert fact.probe[len(CHAINS):] == fact.key and fact.key in PIPELINE_REFERENCES
        else:
            assert fact.key in READERS[fact.probe], fact.key
            named.setdefault(fact.probe, set()).add(fact.key)
    assert {g: set(keys) for g, keys in READERS.items()} == named
    assert set(PIPELINE_REFERENCES) == {f.key for f in FACTS if (f.probe or "").startswith(CHAINS)}
    assert all(key in REFERENCES for key in PIPELINE_REFERENCES)


def test_a_reading_produces_only_declared_keys():
    """Cycles of a core where everything pairs, fuses and shares: every reader gives a fact."""
    cycles = {}
    for probe in probes_module.probes():
        cycles[probe.name] = max(0.25, probe.instructions / 6)
    front = read_frontend(cycles)
    declared = set().union(*READERS.values())
    assert front.pipeline and set(front.pipeline) <= declared


def test_the_probes_version_follows_what_the_probes_are(monkeypatch):
    before = version()
    assert version() == before
    probes = probes_module.probes()
    changed = (dataclasses.replace(probes[0], lines=probes[0].lines + ("nop",)),) + probes[1:]
    monkeypatch.setattr(probes_module, "probes", lambda: changed)
    assert version() != before


def test_the_reader_records_what_is_said_where_the_model_lacks_it():
    reader = FactReader({"store_forward_latency": 7, "paired_stores": 1})
    assert reader.value("store_forward_latency_indexed") == 7     # its fallback, given
    assert reader.value("window") == 192 and reader.value("paired_stores") == 1
    assert reader.value("load_op_slots") == 1          # no wording: the plain rule, not said
    reader.value("window")
    assert reader.assumptions() == (("store_forward_latency_indexed", 7), ("window", 192))
    assert fact_value({}, "indexed_vector_load_op_slots") == 1       # through two fallbacks
    assert fact_value({"indexed_load_op_slots": 2}, "indexed_vector_load_op_slots") == 2


@pytest.mark.parametrize("key, value, words", [
    ("window", 192, "window 192 instructions"),
    ("store_forward_latency_indexed", 5.0, "store forwarding through an indexed address 5"),
    ("macro_fusion_add", 0, "no macro-fusion of add + jcc"),
    ("macro_fusion", 1, "macro-fusion of cmp/test + jcc"),
    ("macro_fusion_or", 1, "macro-fusion of or + jcc"),
])
def test_assumptions_are_worded_from_the_registry(key, value, words):
    assert wording(key, value) == words


def test_a_model_with_a_fact_out_of_range_is_refused():
    """A flag is 0 or 1 wherever it is declared a flag (paired_store_vector among them)."""
    from pmpredict.model.machine import pipeline_problem
    assert pipeline_problem("paired_store_vector", 2) is not None
    assert pipeline_problem("paired_store_vector", 1) is None
    assert MachineModel("m", "x86", ("0",), {}, pipeline={"paired_store_vector": 0})
