"""Explainable inference with a uop counter (infer/counters.py, Ritter ch. 6): the thesis'
example, random machines, the justifications, the host counter's refusal, the CLI."""

from __future__ import annotations

import json
import os
from itertools import permutations

import pytest

from pmpredict.cli import main
from pmpredict.formats.model_files import load_model, save_model
from pmpredict.infer.counters import CountersSettings, blocking_count, run_counters
from pmpredict.infer.oracles import ModelOracle
from pmpredict.infer.synthetic import agreement, all_experiments, random_machine
from pmpredict.infer.uop_counters import (PMU_DIR, CounterUnavailable, HostUopCounter,
                                          ModelUopCounter)
from pmpredict.model.machine import MachineModel


def example_6_2() -> MachineModel:
    """Figure 6.1 (a): mul on p2, ld on p3, add on p1/p2; fma = 1x[p2] + 2x[p1, p2]."""
    return MachineModel("fig61", "x86", ("p1", "p2", "p3"),
                        {"mul": ((0b010, 1),), "ld": ((0b100, 1),), "add": ((0b011, 1),),
                         "fma": ((0b010, 1), (0b011, 2))})


def same_up_to_port_names(a: dict, b: dict, n_ports: int) -> bool:
    def renamed(uops, perm):
        return tuple(sorted((sum(1 << perm[k] for k in range(n_ports) if m >> k & 1), c)
                            for m, c in uops))
    return any(all(renamed(a[f], perm) == tuple(sorted(b[f])) for f in a) and set(a) == set(b)
               for perm in permutations(range(n_ports)))


def run(truth, **kw):
    return run_counters(ModelOracle(truth), ModelUopCounter(truth), list(truth.uops),
                        CountersSettings(len(truth.ports), **kw), ports=("A", "B", "C", "D")
                        [:len(truth.ports)] if len(truth.ports) <= 4 else truth.ports)


def test_example_6_2_exactly():
    truth = example_6_2()
    result = run(truth)
    assert result.finished and not result.left_out
    assert same_up_to_port_names(truth.uops, result.uops, 3)
    # fma's decomposition rests on its experiments beside mul, ld and add (k = 10 each)
    fma = result.justifications["fma"]
    exps = [j["experiment"] for j in fma if j["experiment"]]
    assert {"fma": 1} in exps
    assert {"fma": 1, "mul": 10} in exps and {"add": 10, "fma": 1} in exps
    beside_add = next(j for j in fma if j["experiment"] == {"add": 10, "fma": 1})
    assert beside_add["measured"]["cycles"] == 6.5
    assert beside_add["measured"]["without"] == {"experiment": {"add": 10}, "cycles": 5.0}
    assert "2 uop(s) on" in beside_add["establishes"]
    assert set(result.blocking) == {"mul", "ld", "add"}


def test_blocking_count_is_uops_infos_term():
    assert blocking_count(2, 1.5, 3) == 10          # max(4, 6, 10)
    assert blocking_count(4, 7.0, 3) == 56          # 2 * 4 * 7
    assert blocking_count(4, 100.0, 1) == 100       # capped


def test_equivalent_blocking_instructions_are_merged():
    truth = MachineModel("t", "x86", ("0", "1", "2"),
                         {"a1": ((0b011, 1),), "a2": ((0b011, 1),), "b": ((0b110, 1),),
                          "c": ((0b100, 1),), "x": ((0b011, 1), (0b100, 1))})
    result = run(truth)
    assert result.blocking["a1"]["members"] == ["a1", "a2"]
    assert "b" in result.blocking
    assert result.uops["a1"] == result.uops["a2"]
    assert any("additive" in j["establishes"] for j in result.justifications["a2"])
    assert same_up_to_port_names(truth.uops, result.uops, 3)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_machines_are_recovered_up_to_equivalence(seed):
    truth = random_machine(seed, 4, 6, 2)
    result = run(truth, seed=seed)
    assert result.finished and not result.left_out, result.notes
    model = MachineModel("m", "x86", truth.ports, result.uops)
    assert agreement(truth, model, all_experiments(list(truth.uops), 4)) == 1.0
    # every form is justified by experiments, the singleton first
    for form in truth.uops:
        assert result.justifications[form][0]["experiment"] == {form: 1}


def test_a_uop_without_a_blocking_instruction_is_noted():
    truth = MachineModel("t", "x86", ("0", "1"), {"a": ((0b01, 1),), "x": ((0b01, 1), (0b10, 1))})
    result = run(truth)
    assert any("x: the counter reads 2 uops" in n for n in result.notes)


def test_the_host_counter_refuses_without_a_pmu():
    if os.path.isdir(PMU_DIR):
        pytest.skip("this machine exposes a PMU")
    with pytest.raises(CounterUnavailable) as exc:
        HostUopCounter()
    message = str(exc.value)
    assert "\n" not in message and PMU_DIR in message


def test_cli_counters_on_this_host_is_one_line_and_status_2(tmp_path, capsys):
    if os.path.isdir(PMU_DIR):
        pytest.skip("this machine exposes a PMU")
    forms = tmp_path / "forms.txt"
    forms.write_text("ADD_((REG:RW:G:64)),_((REG:R:G:64))\n")
    code = main(["infer", "--measure", "--method", "counters", "--forms", str(forms),
                 "-o", str(tmp_path / "m.json"), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "event_source/devices/cpu" in err


def test_cli_explain_and_json(tmp_path, capsys):
    path = tmp_path / "fig61.json"
    save_model(example_6_2(), str(path))
    out = tmp_path / "m.json"
    assert main(["infer", "--oracle", str(path), "--method", "counters", "-o", str(out),
                 "--explain", "-q"]) == 0
    text = capsys.readouterr().out
    assert "fma: 1x[" in text
    assert "{fma: 1, mul: 10}: 11.0 cycles (alone {mul: 10}: 10.0)" in text
    assert "cannot evade" in text
    model = load_model(str(out))
    assert same_up_to_port_names(example_6_2().uops, model.uops, 3)
    assert model.provenance["justifications"]["fma"][0]["experiment"] == {"fma": 1}
    assert model.provenance["experiments"]
    assert main(["infer", "--oracle", str(path), "--method", "counters", "-o", str(out),
                 "--json", "-q"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["method"] == "counters" and report["complete"]
    assert set(report["justifications"]) == set(example_6_2().uops)
