"""Stores that commit in pairs (deps.paired_stores, model pipeline `paired_stores`): a core that
commits two consecutive stores into one aligned 32-byte block at once (Zen 4: 0.5 cycles per
store for [rbp + 8], [rbp + 16]; 1 for [rbp + 24], [rbp + 32], in two blocks; measured by the
front-end probes) against one that commits a store a cycle. Expected cycles are hand-computed:
one store port, a store a cycle."""

from __future__ import annotations

from dataclasses import replace

import pytest

from test_frontend import skylake_like_timings

from pmpredict.asm.kernel import select_kernel
from pmpredict.asm.parse import parse
from pmpredict.measure.probes import read_frontend
from pmpredict.model.machine import MachineModel
from pmpredict.predict.predictor import Predictor
from pmpredict.views import render_text, to_json
from pmpredict.views.summary import assumptions
from pmpredict.predict.annotate import STACK_SYNC

STORE = "MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"
STORE128 = "VMOVDQU_xmmword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:V:128))"
STORE32 = "MOV_dword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:32))"
LEA = "LEA_((REG:W:G:64)),__[((MEM:64))+((IMM:8))]"
SETNE = "SETNE_byte_ptr_[((MEM:64))_+_((MIMM:16))]"
SETE = "SETE_byte_ptr_[((MEM:64))_+_((MIMM:16))]"
STORE8 = "MOV_byte_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:8))"
ONE_PORT = MachineModel(name="one-store-port", isa="x86", ports=("S", "A"),
                        uops={STORE: ((0b01, 1),), STORE32: ((0b01, 1),), STORE128: ((0b01, 1),),
                              LEA: ((0b10, 1),), SETNE: ((0b01, 1),), SETE: ((0b01, 1),),
                              STORE8: ((0b01, 1),)},
                        pipeline={"paired_stores": 1})
UNPAIRED = replace(ONE_PORT, **{"pipeline": {"paired_stores": 0}})


def cycles(body: str, model=ONE_PORT):
    text = "# OSACA-BEGIN\n" + body + "# OSACA-END\n"
    report = Predictor(model).predict(select_kernel(parse(text, "att", "k.s")), "att", "k.s")
    return report.cycles, report


@pytest.mark.parametrize("body, expected", [
    # one store to one address: it pairs with itself an iteration later, every other iteration
    ("movq %rax, 8(%rbp)\n", 0.5),
    ("movq %rax, 8(%rbp)\nmovq %rbx, 16(%rbp)\n", 1.0),            # one block: a pair
    ("movq %rax, 16(%rbp)\nmovq %rbx, 8(%rbp)\n", 1.0),            # in either order
    ("movq %rax, 24(%rbp)\nmovq %rbx, 32(%rbp)\n", 2.0),           # two blocks of one line
    ("movq %rax, 8(%rbp)\nmovq %rbx, 200(%rbp)\n", 2.0),           # two lines
    ("movq %rax, (%rbp)\nmovq %rbx, 8(%rbp)\nmovq %rcx, 16(%rbp)\nmovq %rdx, 24(%rbp)\n", 2.0),
    ("movq %rax, 8(%rbp)\nmovq %rbx, 72(%rbp)\nmovq %rcx, 136(%rbp)\nmovq %rdx, 200(%rbp)\n",
     4.0),
    # three into one block: pairs across iterations, 1.5 a loop
    ("movq %rax, -96(%rbp)\nmovq %rbx, -72(%rbp)\nmovq %rcx, -80(%rbp)\n", 1.5),
    # two bases: their blocks are unrelated
    ("movq %rax, 8(%rbp)\nmovq %rbx, 16(%rdi)\n", 2.0),
    # unless one is the other plus a constant: [r15 + 448] and [r15 + 456] share a block,
    # [r15 + 448] and [r15 + 504] do not (Zen 3 measured the first 1.00 cycles)
    ("movq %r13, 448(%r15)\nleaq 464(%r15), %rdi\nmovq %r13, -8(%rdi)\n", 1.0),
    ("movq %r13, 448(%r15)\nleaq 512(%r15), %rdi\nmovq %r13, -8(%rdi)\n", 2.0),
    # a pointer moving 12 bytes a step stays in its block most of the time: the third store
    # pairs with the next iteration's first (the lea keeps the pointer's chain off the ports)
    ("movl %eax, (%rdi)\nmovl %ebx, 4(%rdi)\nmovl %ecx, 8(%rdi)\nleaq 12(%rdi), %rdi\n", 1.5),
])
def test_stores_into_one_block_pair_up(body, expected):
    assert cycles(body)[0] == pytest.approx(expected)
    stores = body.count("mov")
    assert cycles(body, UNPAIRED)[0] == pytest.approx(stores)      # a store a cycle


# Zen 4 (AMD EPYC, family 25 model 17), `pmpredict measure` of 8-byte stores through rbp (a
# cache line's start in the harness), cycles a loop, 2026-11-27: a loop's stores commit at
# max(the stores that start a 32-byte block, half of all), counted cyclically
ZEN4_STORE_READINGS = [
    ((8, 16), 1.00), ((16, 24), 1.00), ((24, 32), 2.00), ((16, 32), 2.00), ((16, 48), 2.00),
    ((0, 32), 2.00), ((8, 40), 2.00), ((24, 40), 2.00), ((32, 64), 2.00), ((56, 64), 2.00),
    ((0, 56), 2.00), ((32, 40, 48), 1.50), ((32, 40, 48, 56), 2.00), ((0, 16, 32, 48), 2.00),
    ((16, 32, 40, 48), 2.00), ((32, 40, 48, 16), 2.00), ((16, 32, 40), 2.00),
    ((16, 32, 40, 48, 56), 2.50), ((16, 56, 24, 32), 4.00), ((16, 56, 24), 2.00),
    ((16, 56, 24, 32, 40, 48), 4.00), ((16, 24, 32, 40, 48, 56), 3.00),
    ((-496, -456, -488, -480, -472, -464), 4.00), ((-496, -480, -472, -464), 2.00),
]


ZEN4_STORES = replace(ONE_PORT, pipeline={"paired_stores": 1, "paired_store_leftover": 1})


def stores_at(offsets) -> str:
    registers = ("rax", "rbx", "rcx", "rdx", "rsi", "rdi")
    return "".join(f"movq %{r}, {d}(%rbp)\n" for r, d in zip(registers, offsets))


@pytest.mark.parametrize("offsets, measured", ZEN4_STORE_READINGS)
def test_stores_commit_as_zen4_measured(offsets, measured):
    assert cycles(stores_at(offsets), ZEN4_STORES)[0] == pytest.approx(measured)


def test_where_the_model_does_not_say_left_over_stores_commit_alone_as_assumed():
    """Without paired_store_leftover each run pairs on its own (a core the probe has not
    seen), and the report says so where the kernel has a store a run leaves over."""
    left_over = stores_at((16, 32, 40, 48))
    got, report = cycles(left_over)
    assert got == pytest.approx(3.0) and report.assumed_facts["paired_store_leftover"] == 0
    got, report = cycles(stores_at((16, 32, 40)))           # nothing left over: nothing said
    assert got == pytest.approx(2.0) and "paired_store_leftover" not in report.assumed_facts
    assert "paired_store_leftover" not in cycles(left_over, ZEN4_STORES)[1].assumed_facts


@pytest.mark.parametrize("block, shared, expected", [(32, True, 1), (32, False, 0),
                                                      (64, True, 1), (64, False, 0)])
def test_whether_left_over_stores_share_is_read_from_the_probes(block, shared, expected):
    front = read_frontend(skylake_like_timings(paired_within=block, leftover_shared=shared))
    assert front.pipeline["paired_store_leftover"] == expected
    assert "paired_store_leftover" not in read_frontend(skylake_like_timings()).pipeline


def test_a_paired_store_is_shown_without_its_uops_and_halves_the_port_bound():
    got, report = cycles("movq %rax, 8(%rbp)\nmovq %rbx, 16(%rbp)\nmovq %rcx, 24(%rbp)\n")
    assert got == pytest.approx(1.5)
    assert report.bounds.throughput == pytest.approx(1.5)
    assert [r.annotated.paired for r in report.rows] == [2, 1, 2]  # odd, even, odd iterations
    got, report = cycles("movq %rax, 8(%rbp)\nmovq %rbx, 16(%rbp)\n")
    assert [r.annotated.uops for r in report.rows] == [((0b01, 1),), ()]


# Zen 4's shape: three address ports that loads use (A, B, C), the store's own uop on one of
# them (as the host model infers it). A paired store still generates its address: on its
# paired iterations it takes one of the load ports instead of its own uop.
LOAD = "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
THREE = MachineModel(name="three-address-ports", isa="x86", ports=("A", "B", "C"),
                     uops={LOAD: ((0b111, 1),), STORE: ((0b100, 1),)},
                     pipeline={"paired_stores": 1})


@pytest.mark.parametrize("body, expected", [
    ("movq %rax, 24(%rbx)\n", 0.5),                                     # measured 0.500
    ("movq 16(%rbx), %rdi\nmovq %rax, 24(%rbx)\n", 2 / 3),              # measured 0.667
    ("movq 16(%rbx), %rdi\nmovq 48(%rbx), %rsi\nmovq %rax, 24(%rbx)\n", 1.0),   # 1.000
])
def test_a_paired_store_still_takes_an_address_port(body, expected):
    """One store per iteration pairs every other iteration: half a uop on its own port, half a
    uop on the three address ports beside the loads: (loads + 1) / 3 cycles, at least 0.5."""
    got, report = cycles(body, THREE)
    assert got == pytest.approx(expected) and report.bounds.throughput == pytest.approx(expected)
    assert report.rows[-1].annotated.paired_uops == ((0b111, 1),)


def test_the_block_size_is_the_models_pipeline_fact():
    """paired_store_bytes (default 32, model/defaults.py): with 64-byte blocks (two stores to
    one cache line retire together, as measured on Raptor Cove) [rbp + 24] and [rbp + 32]
    pair; [rbp + 8] and [rbp + 200] still do not."""
    line = replace(ONE_PORT, **{"pipeline": {"paired_stores": 1, "paired_store_bytes": 64}})
    assert cycles("movq %rax, 24(%rbp)\nmovq %rbx, 32(%rbp)\n")[0] == pytest.approx(2.0)
    assert cycles("movq %rax, 24(%rbp)\nmovq %rbx, 32(%rbp)\n", line)[0] == pytest.approx(1.0)
    assert cycles("movq %rax, 8(%rbp)\nmovq %rbx, 200(%rbp)\n", line)[0] == pytest.approx(2.0)


def test_the_stack_sync_is_assumed_unless_the_model_gives_it():
    body = "pushq %rax\nsubq $8, %rsp\naddq $16, %rsp\n"
    _, assumed = cycles(body, UNPAIRED)
    notes = [n.text for r in assumed.rows for n in r.annotated.assumed]
    assert "stack sync: 1 cycle on rsp" in notes
    slow = replace(UNPAIRED, **{"pipeline": {"stack_sync_latency": 3}})
    _, given = cycles(body, slow)
    assert not [n for r in given.rows for n in r.annotated.assumed if n.what == STACK_SYNC]
    sync = [r for r in given.rows if r.annotated.update is not None][0].annotated.update
    base = [r for r in assumed.rows if r.annotated.update is not None][0].annotated.update
    assert sync.latency == pytest.approx(base.latency + 2)


def test_the_measured_reach_of_pairing_is_the_engines_block():
    """The front-end probes read a core pairing two stores to one line (as measured on
    Raptor Cove) as a 64-byte block: the model then pairs [rbp + 24] and [rbp + 32]."""
    for within, expected in ((0, 2.0), (32, 2.0), (64, 1.0)):
        front = read_frontend(skylake_like_timings(paired_within=within))
        model = replace(ONE_PORT, **{"pipeline": front.pipeline})
        assert cycles("movq %rax, 24(%rbp)\nmovq %rbx, 32(%rbp)\n", model)[0] == \
            pytest.approx(expected)


@pytest.mark.parametrize("push_add, sync", [(2.0, 1.0), (3.0, 2.0), (1.0, 0.0)])
def test_the_measured_stack_sync_predicts_its_probe(push_add, sync):
    """The probe push; add rsp, 8 (the sync + the add) read as stack_sync_latency: the engine
    predicts the probe back, and says nothing is assumed about the sync."""
    front = read_frontend({**skylake_like_timings(), "stack: push, add rsp": push_add})
    assert front.pipeline["stack_sync_latency"] == sync
    push = "PUSH_((REG:R:G:64))"
    add = "ADD_((REG:RW:G:64)),_((IMM:8))"
    model = MachineModel(name="stack", isa="x86", ports=("S", "A"),
                         uops={push: ((0b01, 1),), add: ((0b10, 1),)},
                         latency={push: 1.0, add: 1.0},
                         pipeline={"stack_sync_latency": front.pipeline["stack_sync_latency"]})
    got, report = cycles("pushq %r8\naddq $8, %rsp\n", model)
    assert got == pytest.approx(max(1.0, push_add))
    assert not [n for r in report.rows for n in r.annotated.assumed if n.what == STACK_SYNC]
    # the same two in the other order, a block without a branch of its own: it repeats all
    # the same, and the push of one pass syncs before the add of the next (Zen 4: `addq $8,
    # %rsp ; popq %rbx` measured 2.00 a loop, predicted 1.00 before)
    assert cycles("addq $8, %rsp\npushq %r8\n", model)[0] == pytest.approx(max(1.0, push_add))


def test_only_stores_up_to_the_measured_width_pair():
    """Zen 4: two 8-byte stores to one 32-byte block commit together (0.50 cycles each), two
    16-byte ones do not (1.00 each: `vmovdqu %xmm1, 512(%rbx) ; vmovdqu %xmm1, 528(%rbx)`
    measured 2.00 a loop, predicted 1.00 before the width was a fact)."""
    wide = "vmovdqu %xmm1, 512(%rbx)\nvmovdqu %xmm1, 528(%rbx)\n"
    narrow = replace(ONE_PORT, **{"pipeline": {"paired_stores": 1, "paired_store_width": 8}})
    sixteen = replace(ONE_PORT, **{"pipeline": {"paired_stores": 1, "paired_store_width": 16}})
    assert cycles(wide, narrow)[0] == pytest.approx(2.0)
    assert cycles(wide, sixteen)[0] == pytest.approx(1.0)
    assert cycles("movq %rax, 8(%rbp)\nmovq %rbx, 16(%rbp)\n", narrow)[0] == pytest.approx(1.0)
    # a model without the fact: 8 bytes, assumed, and said so where a wider store is paired
    got, report = cycles(wide)
    assert got == pytest.approx(2.0) and report.assumed_facts["paired_store_width"] == 8
    assert "paired_store_width" not in cycles("movq %rax, 8(%rbp)\n")[1].assumed_facts


@pytest.mark.parametrize("width", [8, 16, 32])
def test_the_widest_pairing_store_is_read_from_the_probes(width):
    front = read_frontend(skylake_like_timings(paired_within=64, paired_width=width))
    assert front.pipeline["paired_store_width"] == width
    model = replace(ONE_PORT, **{"pipeline": front.pipeline})
    wide = "vmovdqu %xmm1, 512(%rbx)\nvmovdqu %xmm1, 528(%rbx)\n"
    assert cycles(wide, model)[0] == pytest.approx(1.0 if width >= 16 else 2.0)


def test_pushes_keep_their_uops():
    """A push form is measured as a run of pushes to adjacent addresses, which pair on a
    pairing core: its uops carry the pairing already, so the engine does not pair pushes
    again (on Zen 4 a block of pushes, 0.57 cycles a push measured, was predicted 0.25), while
    a plain store beside them still pairs with its neighbour."""
    push = "PUSH_((REG:R:G:64))"
    model = replace(ONE_PORT, **{"uops": {**ONE_PORT.uops, push: ((0b01, 1),)}})
    assert cycles("pushq %rax\npushq %rbx\n", model)[0] == pytest.approx(2.0)
    assert cycles("pushq %rax\n", model)[0] == pytest.approx(1.0)
    assert cycles("movq %rax, 8(%rbp)\nmovq %rbx, 16(%rbp)\npushq %rcx\n", model)[0] == \
        pytest.approx(2.0)                                # the movs a pair, the push its own


@pytest.mark.parametrize("vector", [True, False])
def test_vector_register_stores_pair_only_where_the_probe_says(vector):
    """Zen 4 pairs general-purpose and immediate stores into one 32-byte block, not stores of a
    vector register whatever their width (`vmovss %xmm0, 8(%rbx) ; vmovss %xmm1, 16(%rbx)`
    measured 2.00 a loop, predicted 1.00 before the fact): read from its probe, and without it
    assumed to pair as before, said where a vector store is paired."""
    front = read_frontend(skylake_like_timings(paired_within=32, paired_vector=vector))
    assert front.pipeline["paired_store_vector"] == int(vector)
    uops = {**ONE_PORT.uops, "VMOVSD_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:V:128))":
            ((0b01, 1),)}
    model = replace(ONE_PORT, **{"uops": uops, "pipeline": front.pipeline})
    floats = "vmovsd %xmm0, 8(%rbx)\nvmovsd %xmm1, 16(%rbx)\n"
    assert cycles(floats, model)[0] == pytest.approx(1.0 if vector else 2.0)
    assert cycles("movq %rax, 8(%rbp)\nmovq %rbx, 16(%rbp)\n", model)[0] == pytest.approx(1.0)
    got, report = cycles(floats, replace(ONE_PORT, **{"uops": uops}))
    assert got == pytest.approx(1.0) and report.assumed_facts["paired_store_vector"] == 1
    assert "paired_store_vector" not in cycles("movq %rax, 8(%rbp)\n")[1].assumed_facts


# Stores of different forms commit one a cycle (pipeline store_commits, measured by a probe
# of four stores of different forms in lines of their own: Zen 4 4.00 cycles), though an
# inferred mapping may put them on different ports (each form alone runs one a cycle): Zen 4
# ran `movq $0, 40(%rsp); movq $0, 32(%rsp); movq %rax, 16(%rsp); movl $0, 24(%rsp);
# movl $-1, (%rsp)` at 3.00 cycles, predicted 2.00 from the forms' ports alone.
IMM_STORE = "MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((IMM:8))"
PUSH = "PUSH_((REG:R:G:64))"
TWO_STORE_PORTS = MachineModel(name="two-store-ports", isa="x86", ports=("S", "T", "A"),
                               uops={STORE: ((0b001, 1),), IMM_STORE: ((0b010, 1),),
                                     PUSH: ((0b011, 1),), LOAD: ((0b100, 1),)},
                               pipeline={"paired_stores": 0})


def commits(n: int, paired: int = 0) -> MachineModel:
    return replace(TWO_STORE_PORTS, **{"pipeline": {"paired_stores": paired, "store_commits": n}})


@pytest.mark.parametrize("body, alone, one, two", [
    # two forms on two ports, lines apart: the ports allow one cycle, the commit two
    ("movq %rax, 8(%rbp)\nmovq $0, 200(%rbp)\n", 1.0, 2.0, 1.0),
    ("movq %rax, 8(%rbp)\nmovq $0, 200(%rbp)\nmovq %rbx, 392(%rbp)\nmovq $1, 584(%rbp)\n",
     2.0, 4.0, 2.0),
    ("movq %rax, 8(%rbp)\n", 1.0, 1.0, 1.0),                         # one form: its port
])
def test_stores_commit_as_many_a_cycle_as_measured(body, alone, one, two):
    assert cycles(body, TWO_STORE_PORTS)[0] == pytest.approx(alone)
    assert cycles(body, commits(1))[0] == pytest.approx(one)
    assert cycles(body, commits(2))[0] == pytest.approx(two)


def test_a_paired_store_commits_with_the_one_before_it():
    body = "movq %rax, 8(%rbp)\nmovq $0, 16(%rbp)\nmovq %rbx, 200(%rbp)\nmovq $1, 208(%rbp)\n"
    assert cycles(body, commits(1))[0] == pytest.approx(4.0)        # no pairing: 4 commits
    assert cycles(body, commits(1, paired=1))[0] == pytest.approx(2.0)   # two pairs


def test_pushes_pair_where_stores_commit_on_their_own_ports():
    """Where the commit is a port of its own, a push's form no longer needs to carry the
    pairing: consecutive pushes pair as other stores do (Zen 4: pushq $imm alone 0.50 cycles
    a loop, six pushes in a row 3.00)."""
    model = commits(1, paired=1)
    assert cycles("pushq %rax\n", model)[0] == pytest.approx(0.5)
    assert cycles("pushq %rax\npushq %rbx\npushq %rcx\npushq %rdx\n", model)[0] == \
        pytest.approx(2.0)
    # without the measured commits, as before: the push form's uops hold the pairing
    unmeasured = replace(TWO_STORE_PORTS, pipeline={"paired_stores": 1})
    assert cycles("pushq %rax\npushq %rbx\n", unmeasured)[0] == pytest.approx(1.0)


PUSH_MEMORY = "PUSH_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
ADD_TO_MEMORY = "ADD_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"


def test_a_push_from_memory_shares_its_commit_and_keeps_its_load():
    """push m64 loads from one place and stores to another: paired, it commits with the
    store before it and still loads (Zen 4: three `push m64` after `add $24, %rsp` 2.06 cycles
    a loop, like three `push r64`; 3.00 predicted when it kept its commit). A read-modify-write
    of one place keeps its commit."""
    # two load ports (A, B): four pushes load in 2 cycles; their commits take 4 unpaired
    model = MachineModel(name="two-load-ports", isa="x86", ports=("A", "B"),
                         uops={PUSH_MEMORY: ((0b11, 1),), ADD_TO_MEMORY: ((0b11, 1),)},
                         pipeline={"paired_stores": 1, "store_commits": 1})
    pushes = "pushq 72(%rbp)\npushq 64(%rbp)\npushq 56(%rbp)\npushq 48(%rbp)\n"
    got, report = cycles(pushes, model)
    assert [r.pressure.get("store", 0.0) for r in report.rows] == [1.0, 0.0, 1.0, 0.0]
    assert all(r.pressure["A"] + r.pressure["B"] == 1.0 for r in report.rows)   # all load
    assert got == pytest.approx(2.0)
    unpaired = replace(model, pipeline={"paired_stores": 0, "store_commits": 1})
    assert cycles(pushes, unpaired)[0] == pytest.approx(4.0)
    adds = "addq %rax, 8(%rbp)\naddq %rbx, 16(%rbp)\n"
    assert [r.pressure.get("store") for r in cycles(adds, model)[1].rows] == [1.0, 1.0]


def test_the_commit_is_shown_as_a_port_of_its_own():
    got, report = cycles("movq %rax, 8(%rbp)\nmovq $0, 200(%rbp)\n", commits(1))
    assert report.ports == ("S", "T", "A", "store")
    assert report.bottleneck == ["store"] and report.bottleneck_kinds == ["stores"]
    assert [r.pressure.get("store") for r in report.rows] == [1.0, 1.0]
    assert [r.uops for r in report.rows] == [[(["S"], 1), (["store"], 1)],
                                             [(["T"], 1), (["store"], 1)]]
    text = render_text(report)
    assert "Model:      two-store-ports (3 ports + store: a store committed a cycle)" in text
    assert "Bottleneck: ports store (stores)" in text
    assert to_json(report)["ports"] == ["S", "T", "A", "store"]


def test_a_pointer_the_loop_sets_to_an_unchanging_value_stores_to_one_place():
    """`movq %rbx, (%rax); movq %rbx, %rax`: from the second iteration on rax is rbx, which
    the loop never writes, so every iteration stores to one place and each store pairs with
    the one an iteration before (Zen 4: 0.50 cycles a loop measured; 1.00 predicted while rax
    counted as a new value every iteration)."""
    mov = "MOV_((REG:W:G:64)),_((REG:R:G:64))"
    add = "ADD_((REG:RW:G:64)),_((REG:R:G:64))"
    model = replace(ONE_PORT, **{"ports": ("S", "A", "B", "C"),
                            "uops": {**ONE_PORT.uops, mov: ((0b1110, 1),), add: ((0b1110, 1),)}})
    assert cycles("movq %rbx, (%rax)\nmovq %rbx, %rax\n", model)[0] == pytest.approx(0.5)
    # rax taking a new value every iteration: a new place every time, no pairing across
    assert cycles("movq %rbx, (%rax)\nmovq %rcx, %rax\naddq %rdx, %rcx\n", model)[0] == \
        pytest.approx(1.0)


LOAD32 = "MOV_((REG:W:G:32)),_dword_ptr_[((MEM:64))_+_((MIMM:16))]"
# 4-byte loads (each inside an 8-byte store) on three ports of their own: the stores'
# commits decide (the model has no plain 8-byte load: a paired store runs no address uop)
READ_BACK = replace(ONE_PORT, ports=("S", "A", "L0", "L1", "L2"),
                    uops={**ONE_PORT.uops, LOAD32: ((0b11100, 1),)},
                    pipeline={"paired_stores": 1, "paired_store_forwarded": 0})


@pytest.mark.parametrize("body, alone, paired", [
    # Zen 4 (AMD EPYC family 25 model 17, 2026-12-07, `pmpredict measure`, cycles a loop):
    # a load, then a store of the same place (the next iteration's load reads it) 1.00
    ("movl 904(%r12), %edi\nmovq %rax, 904(%r12)\n", 1.0, 0.5),
    # a store read back at once 1.00
    ("movq %rax, 904(%r12)\nmovl 904(%r12), %edi\n", 1.0, 0.5),
    # two such in one 32-byte block 2.00 (pairing says 1.00)
    ("movl 904(%r12), %edi\nmovq %rax, 904(%r12)\nmovl 912(%r12), %esi\nmovq %rbx, 912(%r12)\n",
     2.0, 1.0),
    # one read back, one not, in one block: 2.00 (the other store has no partner left)
    ("movl 904(%r12), %edi\nmovq %rax, 904(%r12)\nmovq %rbx, 912(%r12)\n", 2.0, 1.0),
    # stores no load reads pair as before: 1.00 for two in one block
    ("movq %rax, 904(%r12)\nmovq %rbx, 912(%r12)\nmovl 1032(%r12), %edi\n", 1.0, 1.0),
])
def test_a_store_a_load_reads_back_commits_alone(body, alone, paired):
    assert cycles(body, READ_BACK)[0] == pytest.approx(alone)
    pairs = replace(READ_BACK, pipeline={"paired_stores": 1, "paired_store_forwarded": 1})
    assert cycles(body, pairs)[0] == pytest.approx(paired)


def test_an_unmeasured_read_back_store_is_said_to_pair():
    model = replace(READ_BACK, pipeline={"paired_stores": 1})
    report = cycles("movl 904(%r12), %edi\nmovq %rax, 904(%r12)\n", model)[1]
    assert report.cycles == pytest.approx(0.5)
    assert "a store a load reads back pairs as others do" in \
        " ".join(assumptions(report))
    quiet = cycles("movq %rax, 904(%r12)\nmovl 1032(%r12), %edi\n", model)[1]
    assert "reads back" not in " ".join(assumptions(quiet))


@pytest.mark.parametrize("body, expected", [
    ("movq %rax, 24(%rbp)\n", 0.5),            # inside its 32-byte block: pairs with itself
    ("movq %rax, 28(%rbp)\n", 1.0),            # across the block's end: two blocks, alone
    ("movl %eax, 28(%rbp)\n", 0.5),            # 4 bytes at 28 stay inside
    # across a line too: alone, and its access once more (split_store_extra, assumed 1):
    # Zen 4 (family 25 model 17, `pmpredict anica --blocks memory`, 2026-12-07) measured
    # `mov dword ptr [rbx + 445], r8d` alone 2.00 cycles
    ("movl %eax, 445(%rbp)\n", 2.0),
])
def test_a_store_across_its_block_pairs_with_none(body, expected):
    assert cycles(body)[0] == pytest.approx(expected)


@pytest.mark.parametrize("body, alone, paired", [
    # Zen 4 (AMD EPYC family 25 model 17, 2026-12-07, `pmpredict measure`, cycles a loop):
    # setne to one place 1.00 (a byte register's store there 0.50: paired with itself)
    ("setne 445(%rdi)\n", 1.0, 0.5),
    # two in one block 2.00 (pairing says 1.00)
    ("setne 445(%rdi)\nsete 446(%rdi)\n", 2.0, 1.0),
    # beside a register's store in one block, a pair: 1.00
    ("movq %r14, -464(%rbp)\nsetne -456(%rbp)\n", 1.0, 1.0),
    ("setne -464(%rbp)\nmovq %r14, -456(%rbp)\n", 1.0, 1.0),
    # stores of registers pair as before
    ("movb %al, 445(%rdi)\n", 0.5, 0.5),
])
def test_stores_of_a_condition_do_not_pair_with_each_other(body, alone, paired):
    flags0 = replace(ONE_PORT, pipeline={"paired_stores": 1, "paired_store_flags": 0})
    assert cycles(body, flags0)[0] == pytest.approx(alone)
    flags1 = replace(ONE_PORT, pipeline={"paired_stores": 1, "paired_store_flags": 1})
    assert cycles(body, flags1)[0] == pytest.approx(paired)


def test_an_unmeasured_store_of_a_condition_is_said_to_pair():
    report = cycles("setne 445(%rdi)\n")[1]
    assert report.cycles == pytest.approx(0.5)
    assert "stores of a condition (setcc to memory) pair with each other" in \
        " ".join(assumptions(report))
    quiet = cycles("movb %al, 445(%rdi)\n")[1]
    assert "condition" not in " ".join(assumptions(quiet))


@pytest.mark.parametrize("body, apart, mixed", [
    # Zen 4 (AMD EPYC family 25 model 17, 2026-12-08, `pmpredict measure`, cycles a loop):
    # a vector store and a register's into one block 1.00, in either order and to one place
    # (AnICA campaign 12 #16: `vmovsd [rbx], xmm3; mov [rbx], r11`, predicted 2.00)
    ("vmovsd %xmm3, (%rsi)\nmovq %r11, 8(%rsi)\n", 2.0, 1.0),
    ("movq %r11, (%rsi)\nvmovsd %xmm3, 8(%rsi)\n", 2.0, 1.0),
    ("vmovsd %xmm3, (%rsi)\nmovq %r11, (%rsi)\n", 2.0, 1.0),
    ("vmovdqu %xmm3, (%rsi)\nmovq %r11, 16(%rsi)\n", 2.0, 1.0),     # 16 bytes: 1.00
    ("vmovdqu %ymm3, (%rsi)\nmovq %r11, 8(%rsi)\n", 2.0, 2.0),      # 32 bytes: 2.00
    # two vector stores still commit alone (2.00), and so does one with itself (1.00)
    ("vmovsd %xmm3, (%rsi)\nvmovsd %xmm4, 8(%rsi)\n", 2.0, 2.0),
    ("vmovsd %xmm3, (%rsi)\n", 1.0, 1.0),
    # a register's store between two vector ones pairs with one of them: 2.00; a vector one
    # between two registers' pairs across iterations: 1.50
    ("vmovsd %xmm3, (%rsi)\nmovq %r11, 8(%rsi)\nvmovsd %xmm4, 16(%rsi)\n", 3.0, 2.0),
    ("movq %r11, (%rsi)\nvmovsd %xmm3, 8(%rsi)\nmovq %r12, 16(%rsi)\n", 2.0, 1.5),
    # stores into two blocks pair with none (2.00 measured)
    ("vmovdqu %xmm3, (%rsi)\nmovq %r11, 32(%rsi)\n", 2.0, 2.0),
])
def test_a_vector_store_pairs_with_another_kind_as_wide_as_measured(body, apart, mixed):
    uops = {**ONE_PORT.uops, **{f"{name}_{width}_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:V:{bits}))":
                                ((0b01, 1),) for name, width, bits in (
                                    ("VMOVSD", "qword", 128), ("VMOVDQU", "xmmword", 128),
                                    ("VMOVDQU", "ymmword", 256))}}
    pipeline = {"paired_stores": 1, "paired_store_vector": 0}
    for width, expected in ((0, apart), (16, mixed)):
        model = replace(ONE_PORT, uops=uops, pipeline={**pipeline, "paired_store_mixed": width})
        assert cycles(body, model)[0] == pytest.approx(expected), width
    # unmeasured: they commit alone, as before the fact, and the prediction says so where a
    # vector store meets another kind
    report = cycles(body, replace(ONE_PORT, uops=uops, pipeline=pipeline))[1]
    assert report.cycles == pytest.approx(apart)
    said = "a vector-register store pairs with no other store" in " ".join(assumptions(report))
    assert said == ("movq" in body)
