"""Dependency-aware prediction on hand-computed loops: reductions, scans, chains through
memory and flags, idioms, write-backs, the Gauss-Seidel shape of the OSACA paper, and the
properties the simulation must keep (never below a bound)."""

from dataclasses import replace

import pytest

from pmpredict.asm.kernel import select_kernel
from pmpredict.asm.parse import parse
from pmpredict.model.machine import MachineModel
from pmpredict.predict.predictor import Predictor
from pmpredict.views import summary
from pmpredict.predict.annotate import NOT_IN_MODEL, STACK_SYNC

MEM = "qword_ptr_[((MEM:64))_+_((MIMM:16))]"
F = {
    "addsd": "ADDSD_((REG:RW:V:128)),_((REG:R:V:128))",
    "addsd_m": f"ADDSD_((REG:RW:V:128)),_{MEM}",
    "mulsd": "MULSD_((REG:RW:V:128)),_((REG:R:V:128))",
    "mulsd_m": f"MULSD_((REG:RW:V:128)),_{MEM}",
    "load": f"MOVSD_((REG:W:V:128)),_{MEM}",
    "store": f"MOVSD_{MEM},_((REG:R:V:128))",
    "add_ri": "ADD_((REG:RW:G:64)),_((IMM:8))",
    "add_rr": "ADD_((REG:RW:G:64)),_((REG:R:G:64))",
    "cmp": "CMP_((REG:R:G:64)),_((REG:R:G:64))",
    "cmov": "CMOVL_((REG:RW:G:64)),_((REG:R:G:64))",
    "xor32": "XOR_((REG:RW:G:32)),_((REG:R:G:32))",
    "imul": "IMUL_((REG:RW:G:64)),_((REG:R:G:64))",
}
# ports: 0, 1 (FP and ALU), 2, 3 (loads), 4 (store), 5 (ALU)
FP, LD, ST, ALU = 0b000011, 0b001100, 0b010000, 0b100011
TOY = MachineModel(
    name="toy", isa="x86", ports=("0", "1", "2", "3", "4", "5"),
    uops={F["addsd"]: ((FP, 1),), F["addsd_m"]: ((FP, 1), (LD, 1)), F["mulsd"]: ((FP, 1),),
          F["mulsd_m"]: ((FP, 1), (LD, 1)), F["load"]: ((LD, 1),), F["store"]: ((ST, 1),),
          F["add_ri"]: ((ALU, 1),), F["add_rr"]: ((ALU, 1),), F["cmp"]: ((ALU, 1),),
          F["cmov"]: ((ALU, 1),), F["xor32"]: ((ALU, 1),), F["imul"]: ((0b000010, 1),)},
    latency={F["addsd"]: 4, F["addsd_m"]: 4, F["mulsd"]: 4, F["mulsd_m"]: 4, F["load"]: 5,
             F["store"]: 0, F["add_ri"]: 1, F["add_rr"]: 1, F["cmp"]: 1, F["cmov"]: 1,
             F["xor32"]: 1, F["imul"]: 3},
    operand_latency={F["addsd_m"]: {1: 9}, F["mulsd_m"]: {1: 9}},
    pipeline={"load_latency": 5, "store_forward_latency": 4, "window": 224, "taken_branch": 1})


def predict(body, model=TOY):
    text = "# OSACA-BEGIN\n" + "".join(f"\t{line}\n" for line in body) + "# OSACA-END\n"
    return Predictor(model).predict(select_kernel(parse(text, "att", "k.s")), "att", "k.s")


def test_sum_reduction_is_bound_by_the_accumulator():
    r = predict(["addsd (%rdi,%rax,8), %xmm0", "addq $1, %rax"])
    # the addsd and the add share ports 0, 1 (the add may also use 5): 2 uops on 3 ports
    assert r.bounds.throughput == pytest.approx(2 / 3) and r.bounds.loop_carried == 4.0
    assert r.cycles == 4.0
    assert r.chains[0].resources == ("v0",) and r.chains[0].nodes == (0,)
    assert r.bottleneck == ["0", "1", "5"]


def test_two_accumulators_halve_nothing_two_additions_in_series_double():
    # independent accumulators: still one addsd latency per iteration
    assert predict(["addsd (%rdi,%rax,8), %xmm0", "addsd 8(%rdi,%rax,8), %xmm1",
                    "addq $2, %rax"]).cycles == 4.0
    # the SSE2 dot product shape: two additions into xmm0 per iteration
    r = predict(["movsd (%rdi,%rax,8), %xmm1", "mulsd (%rsi,%rax,8), %xmm1", "addsd %xmm1, %xmm0",
                 "movsd 8(%rdi,%rax,8), %xmm2", "mulsd 8(%rsi,%rax,8), %xmm2", "addsd %xmm2, %xmm0",
                 "addq $2, %rax"])
    assert r.bounds.loop_carried == 8.0 and r.cycles == 8.0
    assert [r.rows[i].line for i in r.chains[0].nodes] == [4, 7]


def test_prefix_sum_scan():
    # s += a[i]; b[i] = s: one addsd latency per element
    r = predict(["addsd (%rdi,%rax,8), %xmm0", "movsd %xmm0, (%rsi,%rax,8)", "addq $1, %rax"])
    assert r.cycles == 4.0


def test_chain_through_memory_costs_store_forwarding():
    # x = *p; x += y; *p = x with p fixed: load <- store forwarding (4) + addsd (4) + store (0)
    r = predict(["movsd (%rsp), %xmm0", "addsd %xmm1, %xmm0", "movsd %xmm0, (%rsp)"])
    assert set(r.chains[0].resources) == {"v0", "mem"}
    assert r.bounds.loop_carried == 8.0 and r.cycles == 8.0


def test_no_chain_through_memory_when_the_pointer_moves():
    r = predict(["movsd (%rdi), %xmm0", "addsd %xmm1, %xmm0", "movsd %xmm0, (%rdi)",
                 "addq $8, %rdi"])
    assert "mem" not in {x for c in r.chains for x in c.resources}
    assert r.cycles == pytest.approx(max(r.bounds.throughput, 1.0))


def test_flags_carry_a_dependency():
    # rax -> cmp -> flags -> cmovl -> rax: 2 cycles per iteration
    r = predict(["cmpq %rdx, %rax", "cmovlq %rdx, %rax"])
    assert r.bounds.loop_carried == 2.0 and r.cycles == 2.0
    assert "rax" in r.chains[0].resources and {"SF", "OF"} & set(r.chains[0].resources)


def test_zero_idiom_breaks_the_chain():
    # without the xor, imul rax, rbx would carry 3 cycles through rax
    assert predict(["imulq %rbx, %rax"]).cycles == 3.0
    r = predict(["xorl %eax, %eax", "imulq %rbx, %rax"])
    assert r.bounds.loop_carried == 0.0
    assert r.rows[0].annotated.idiom == "zero" and r.rows[0].latency == 0.0
    assert r.cycles == 1.0                    # imul alone on port 1


def test_gauss_seidel_shape_of_the_osaca_paper():
    # a[j] = (a[j-1] + a[j+1] + up[j] + down[j]) * 0.25 with a[j-1] kept in xmm0:
    # the chain is three additions and a multiplication per element (4 + 4 + 4 + 4)
    r = predict(["addsd 8(%rdi,%rax,8), %xmm0",      # a[j-1] + a[j+1]
                 "addsd (%rsi,%rax,8), %xmm0",       # + up[j]
                 "addsd (%rdx,%rax,8), %xmm0",       # + down[j]
                 "mulsd %xmm1, %xmm0",               # * 0.25
                 "movsd %xmm0, (%rdi,%rax,8)",       # a[j] = ..., and it is a[j-1] next time
                 "addq $1, %rax"])
    assert r.bounds.loop_carried == 16.0 and r.cycles == 16.0
    assert sorted(r.chains[0].nodes) == [0, 1, 2, 3]


def test_load_op_register_chain_uses_the_register_latency():
    # addsd (mem), xmm0: 9 cycles from the address, 4 from xmm0: the chain costs 4
    r = predict(["addsd (%rdi), %xmm0"])
    assert r.rows[0].latency == 9.0 and r.cycles == 4.0


def test_window_and_width_appear_when_the_model_has_them():
    wide = replace(TOY, **{"r_max": 1.0})
    r = predict(["addq $1, %rax", "addq $1, %rbx", "addq $1, %rcx"], wide)
    assert r.bounds.front_end == 3.0 and r.cycles == 3.0 and r.bottleneck == ["frontend"]


def test_unknown_instruction_is_reported_with_its_assumption():
    r = predict(["addsd %xmm1, %xmm0", "frobq %rax"])
    assert not r.complete and r.rows[1].form is None
    assert any(a.what == NOT_IN_MODEL for a in r.rows[1].annotated.assumed)
    assert r.cycles == 4.0


def test_stack_engine_makes_push_and_pop_chains_free():
    # push and pop move rsp in the front end's stack engine: no chain through rsp; the store
    # and the load still forward through [rsp] (push then pop of the same slot)
    r = predict(["pushq %rbx", "popq %rcx", "addq $1, %rax"])
    assert [c.resources for c in r.chains] == [("rax",)]
    # a string instruction's pointer update is not the stack engine's: a chain through rdi
    r = predict(["stosq", "addq $1, %rax"])
    assert ("rdi",) in [c.resources for c in r.chains]
    # (a post-indexed AArch64 load costs address_update_latency too: test_asm_osaca_forms)


def test_an_explicit_use_of_rsp_after_pushes_waits_for_the_stack_sync():
    """The stack engine's offset is applied by a sync uop before rsp is named explicitly
    (1 cycle, charged to the last push): push; push; sub rsp: sync + sub = 2 a loop (Zen 4
    measures 1.99); push; mov rbp, rsp; and rsp; add rsp: sync + and + add = 3 (3.4)."""
    stack = {"PUSH_((REG:R:G:64))": ((ST, 1),), "SUB_((REG:RW:G:64)),_((IMM:8))": ((ALU, 1),),
             "AND_((REG:RW:G:64)),_((IMM:8))": ((ALU, 1),),
             "MOV_((REG:W:G:64)),_((REG:R:G:64))": ((ALU, 1),)}
    model = replace(TOY, **{"uops": {**TOY.uops, **stack}})
    r = predict(["pushq %rbp", "pushq %rbx", "subq $8, %rsp"], model)
    assert r.bounds.loop_carried == 2.0 and ("rsp",) in [c.resources for c in r.chains]
    assert [any(x.what == STACK_SYNC for x in row.annotated.assumed) for row in r.rows] == \
        [False, True, False]
    r = predict(["pushq %rbp", "movq %rsp, %rbp", "andq $-32, %rsp", "addq $16, %rsp"], model)
    assert r.bounds.loop_carried == 3.0
    # pushes and pops alone never name rsp: no sync, no chain through it
    r = predict(["pushq %rbx", "popq %rcx", "addq $1, %rax"], model)
    assert [c.resources for c in r.chains] == [("rax",)]


def test_where_reads_do_not_wait_for_the_stack_sync_only_writes_sync():
    """stack_sync_reads 0 (Zen 4: `push rbp; mov rbp, rsp` 0.49 cycles, the push alone 0.50;
    `push rbp; mov rbp, rsp; push r12; sub rsp, 8` 2.19): a read of rsp leaves the offset
    to the next write; where the model does not say, a read waits, said to be assumed."""
    stack = {"PUSH_((REG:R:G:64))": ((ST, 1),), "SUB_((REG:RW:G:64)),_((IMM:8))": ((ALU, 1),),
             "MOV_((REG:W:G:64)),_((REG:R:G:64))": ((ALU, 1),),
             "LEA_((REG:W:G:64)),__[((MEM:64))_+_((MIMM:16))]": ((ALU, 1),)}
    waits = replace(TOY, **{"uops": {**TOY.uops, **stack},
                            "pipeline": {"stack_sync_latency": 1.0}})
    free = replace(waits, **{"pipeline": {"stack_sync_latency": 1.0, "stack_sync_reads": 0}})
    prologue = ["pushq %rbp", "movq %rsp, %rbp"]
    assert predict(prologue, waits).bounds.loop_carried == 1.0
    assert predict(prologue, waits).assumed_facts["stack_sync_reads"] == 1
    r = predict(prologue, free)
    assert "rsp" not in {x for c in r.chains for x in c.resources}
    assert "stack_sync_reads" not in r.assumed_facts
    assert predict(["popq %rbx", "leaq 8(%rsp), %rax"], free).bounds.loop_carried == 0.0
    # the write after the read still syncs: sync + sub, not two syncs
    longer = prologue + ["pushq %r12", "subq $8, %rsp"]
    assert predict(longer, free).bounds.loop_carried == 2.0
    assert predict(longer, waits).bounds.loop_carried == 3.0


def test_addresses_are_followed_through_pointer_bumps():
    # a[i] = a[i-1] + x with a moving pointer: the load reads what the previous iteration
    # stored 8 bytes back: store forwarding (4) + addsd (4) per iteration
    r = predict(["movsd -8(%rdi), %xmm0", "addsd %xmm1, %xmm0", "movsd %xmm0, (%rdi)",
                 "addq $8, %rdi"])
    assert r.bounds.loop_carried == 8.0 and "mem" in r.chains[0].resources
    # a[i] = a[i] + x: a different element every iteration, no chain through memory
    r = predict(["movsd (%rdi), %xmm0", "addsd %xmm1, %xmm0", "movsd %xmm0, (%rdi)",
                 "addq $8, %rdi"])
    assert "mem" not in {x for c in r.chains for x in c.resources}
    # within one iteration, through the bump: the store at [rdi] is the load at [rdi - 8]
    r = predict(["movsd %xmm0, (%rdi)", "addq $8, %rdi", "movsd -8(%rdi), %xmm1"])
    mem = [e for e in r.graph.edges if e.resource == "mem"]
    assert [(e.src, e.dst, e.distance) for e in mem] == [(0, 2, 0)]


def test_addresses_are_followed_through_copies_of_a_register():
    """mov r64, r64 and lea r64, [r + d] set a register to another one plus a constant: an
    access through the copy names the other's bytes (Zen 3: `movq %r13, 448(%r15); leaq
    464(%r15), %rdi; movq %r13, -8(%rdi)`, two stores into one 32-byte block, 1.00 cycles
    measured; predicted 2.00 while rdi counted as a value of its own)."""
    # within one iteration: the store at [rdi] is the load at [rsi - 8], rsi = rdi + 8
    r = predict(["movsd %xmm0, (%rdi)", "leaq 8(%rdi), %rsi", "movsd -8(%rsi), %xmm1"])
    mem = [e for e in r.graph.edges if e.resource == "mem"]
    assert [(e.src, e.dst, e.distance) for e in mem] == [(0, 2, 0)]
    # across iterations: rdi is rbx, which the loop never writes, so the load through rdi
    # reads what the iteration before stored through rbx: forwarding 4 + addsd 4
    chain = ["movsd (%rdi), %xmm0", "addsd %xmm1, %xmm0", "movsd %xmm0, (%rbx)"]
    r = predict(["movq %rbx, %rdi"] + chain, INVARIANT)
    assert r.bounds.loop_carried == 8.0 and "mem" in r.chains[0].resources
    # the copy set at the end of the loop holds at the start of the next iteration
    r = predict(chain + ["movq %rbx, %rdi"], INVARIANT)
    assert r.bounds.loop_carried == 8.0
    # a copy of a register the loop moves points somewhere new every iteration
    r = predict(["movq %rbx, %rdi"] + chain + ["addq $8, %rbx"], INVARIANT)
    assert "mem" not in {x for c in r.chains for x in c.resources}
    # nor is a 32-bit move a copy of the address (it clears the upper half)
    r = predict(["movl %ebx, %edi"] + chain, INVARIANT)
    assert "mem" not in {x for c in r.chains for x in c.resources}


def test_push_then_pop_forwards_through_the_stack():
    # push rbx; pop rbx: rbx goes through memory (the stack engine moves rsp for free)
    r = predict(["pushq %rbx", "popq %rbx", "addq $1, %rax"])
    chain = next(c for c in r.chains if "rbx" in c.resources)
    assert "mem" in chain.resources and chain.ratio == TOY.pipeline["store_forward_latency"]


LEA = "LEA_((REG:W:G:64)),__[((MEM:64))+((IMM:8))]"
LEA3 = "LEA_((REG:W:G:64)),__[((MEM:64))+2*((DIV:64))+((IMM:8))]"


def test_a_lea_chain_takes_the_lea_latency_through_base_and_index():
    """lea computes its result from its address registers: a chain through them takes lea's
    latency (it carried none, as if lea were a store's address: `leaq 1(%rax), %rax`
    predicted at the port bound, 0.25, where every core takes a cycle a link); a load's
    address still has the load's latency, a store's none."""
    model = replace(TOY, **{"uops": {**TOY.uops, LEA: ((ALU, 1),),
                                                     LEA3: ((0b000001, 1),)},
                            "latency": {**TOY.latency, LEA: 1, LEA3: 2}})
    assert model.uops.keys() >= {LEA, LEA3}
    base = predict(["leaq 1(%rax), %rax"], model)
    assert base.bounds.loop_carried == 1.0 and base.cycles == 1.0
    index = predict(["leaq 1(%rbx,%rax,2), %rax"], model)
    assert index.bounds.loop_carried == 2.0 and index.cycles == 2.0
    # through memory: load 5 + lea 1 + store data 0, forwarded in 4 (the toy's): 5 + 1 + ...
    loop = predict(["movq (%rsi), %rdi", "leaq -1(%rdi), %rax", "movq %rax, (%rsi)"],
                   replace(model, **{"uops": {
                       **model.uops, "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]":
                       ((LD, 1),), "MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))":
                       ((ST, 1),)}}))
    assert loop.bounds.loop_carried == 4.0 + 1.0


def test_vector_data_forwards_at_the_vector_latency_whatever_its_width():
    """A vector register's data forwards at store_forward_latency_vector though only 64 or 32
    bits wide (`movsd`: Zen 4 measures store; load; vaddss at 12 cycles = 9 + 3, general-purpose
    data 0); that latency is measured into a plain vector load's value, so only a load-op's
    operation comes after it (the load's own latency is not added again)."""
    vector = replace(TOY, **{"pipeline": {**TOY.pipeline,
                                                          "store_forward_latency_vector": 9}})
    r = predict(["movsd (%rsp), %xmm0", "addsd %xmm1, %xmm0", "movsd %xmm0, (%rsp)"], vector)
    assert r.bounds.loop_carried == 9.0 + 4.0
    # the load-op: its memory operand's latency 9 (load 5 + addsd 4); after forwarding, 4
    r = predict(["addsd (%rsp), %xmm0", "movsd %xmm0, (%rsp)"], vector)
    assert r.bounds.loop_carried == 9.0 + 4.0
    # general-purpose data keeps its own (plain) forwarding
    gpr = predict(["movq (%rsp), %rax", "addq $1, %rax", "movq %rax, (%rsp)"], vector)
    assert gpr.bounds.loop_carried == 4.0 + 1.0


LOAD64 = f"MOV_((REG:W:G:64)),_{MEM}"
INVARIANT = replace(TOY, **{"uops": {**TOY.uops, LOAD64: ((LD, 1),)},
                            "latency": {**TOY.latency, LOAD64: 5}})


def test_an_address_computed_afresh_but_the_same_every_iteration_carries_the_chain():
    """A pointer loaded from memory no store of the loop names, or computed from registers the
    loop never writes, is the same every iteration: what the previous iteration stored there
    is what this one loads (Zen 4: `movq 40(%rbx), %r8; ...; movq 80(%r8), %r15; ...; orb $6,
    (%r9)` 6.16 cycles a loop, predicted 2.39 as if every iteration had its own address)."""
    chain = ["movsd (%rdi), %xmm0", "addsd %xmm1, %xmm0", "movsd %xmm0, (%rdi)"]
    for setup in (["movq 40(%rbx), %rdi"],                              # loaded
                  ["movq %rbx, %rdi", "addq %rcx, %rdi"],                # computed
                  ["movq 40(%rbx), %rdi", "addq $8, %rdi"]):             # and bumped
        r = predict(setup + chain, INVARIANT)
        assert "mem" in r.chains[0].resources, setup
        assert r.bounds.loop_carried == 8.0                # forwarding 4 + addsd 4, as above
    # not where the pointer's own memory is stored to, nor where it moves, nor where an input
    # changes every iteration
    for setup in (["movq 40(%rbx), %rdi", "movq %rcx, 40(%rbx)"],
                  ["movq 40(%rbx), %rdi", "addq $8, %rbx"],
                  ["addq %rcx, %rdx", "movq %rdx, %rdi"]):
        r = predict(setup + chain, INVARIANT)
        assert "mem" not in {x for c in r.chains for x in c.resources}, setup


def test_a_load_without_a_latency_takes_the_load_latency():
    """A pure load whose form the model has no latency for (pop: no chain measures it alone)
    takes the machine's load-to-use latency, said in the Assumed line, not an ALU's 1 (Zen 4:
    `leaq -40(%rbp), %rsp; popq %rbx; ...; popq %rbp` 6.50 cycles a loop, predicted 3.00
    with pop at 1 cycle, now 6.00: the chain lea 1 + the load 4, and the port pressure)."""
    pop = "POP_((REG:W:G:64))"
    lea = "LEA_((REG:W:G:64)),__[((MEM:64))+((IMM:8))]"
    model = replace(TOY, **{"uops": {**TOY.uops, pop: ((LD, 1),),
                                                     lea: ((ALU, 1),)},
                            "latency": {**TOY.latency, lea: 1}})
    r = predict(["leaq -8(%rbp), %rsp", "popq %rbp"], model)
    assert r.rows[1].latency == 5.0                          # the toy's load latency
    assert r.bounds.loop_carried == pytest.approx(1 + 5)      # the lea, then the pop's load
    assert "latency 5 assumed (the load latency) (line 3)" in summary.assumptions(r)


ADD_M = "ADD_((REG:RW:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
STORE64 = "MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"
# Zen 4's forwarding: a store renamed into a plain load (0 cycles), 7 into a load-op's load
RENAMING = replace(TOY, **{
    "uops": {**TOY.uops, LOAD64: ((LD, 1),), ADD_M: ((ALU, 1), (LD, 1)), STORE64: ((ST, 1),)},
    "latency": {**TOY.latency, LOAD64: 5, ADD_M: 1, STORE64: 0},
    "operand_latency": {**TOY.operand_latency, ADD_M: {1: 6}},
    "pipeline": {**TOY.pipeline, "store_forward_latency": 0,
                 "store_forward_latency_load_op": 7}})


def test_a_load_op_reads_a_store_at_its_own_forwarding_latency():
    """Zen 4 (`pmpredict measure`): `addq 904(%rbx), %rdi; movq %rdi, 904(%rbx)` 8.05 cycles a
    link, the load-op's load forwarded in 7; `movq 904(%rbx), %r8; addq %r8, %rdi; movq %rdi,
    904(%rbx)` 1.00 (the plain load renamed, 0) and the indexed load-op too (1.00)."""
    r = predict(["addq 904(%rbx), %rdi", "movq %rdi, 904(%rbx)"], RENAMING)
    assert r.bounds.loop_carried == 7.0 + 1.0 and "mem" in r.chains[0].resources
    assert "store_forward_latency_load_op" not in r.assumed_facts
    r = predict(["movq %rdi, 904(%rbx)", "addq 904(%rbx), %rdi"], RENAMING)   # stored first
    assert r.bounds.loop_carried == 8.0
    plain = predict(["movq 904(%rbx), %r8", "addq %r8, %rdi", "movq %rdi, 904(%rbx)"], RENAMING)
    assert plain.bounds.loop_carried == 1.0
    indexed = predict(["addq 904(%rbx,%rcx), %rdi", "movq %rdi, 904(%rbx,%rcx)"], RENAMING)
    assert indexed.bounds.loop_carried == 1.0             # the indexed kind's (plain here)
    assert indexed.assumed_facts["store_forward_latency_indexed"] == 0


def test_a_model_without_the_load_op_latency_says_it_assumed_the_plain_one():
    model = replace(RENAMING, pipeline={k: v for k, v in RENAMING.pipeline.items()
                                        if k != "store_forward_latency_load_op"})
    r = predict(["addq 904(%rbx), %rdi", "movq %rdi, 904(%rbx)"], model)
    assert r.bounds.loop_carried == 0.0 + 1.0
    assert r.assumed_facts["store_forward_latency_load_op"] == 0
    assert "store forwarding into a load-op 0" in " ".join(summary.assumptions(r))


STORE32 = "MOV_dword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:32))"
# a store under a wider load: measured on an Intel Xeon (AVX-512 FP16), 2026-12-02: `movl %eax,
# 64(%rbx); movq 64(%rbx), %rax; imulq %rbx, %rax` 19-23 cycles a link, 3.0 with a movq store
PARTIAL = replace(RENAMING, **{
    "uops": {**RENAMING.uops, STORE32: ((ST, 1),)},
    "latency": {**RENAMING.latency, STORE32: 0},
    "pipeline": {**RENAMING.pipeline, "store_forward_latency_partial": 19}})


def test_a_load_partly_over_a_store_waits_at_the_partial_forwarding_latency():
    """A 4-byte store under an 8-byte load (and a load across the stored bytes' end) waits
    `store_forward_latency_partial`; a load inside the store forwards as before."""
    wider = ["movl %edi, 904(%rbx)", "movq 904(%rbx), %rdi"]
    r = predict(wider, PARTIAL)
    assert r.bounds.loop_carried == 19.0 and "mem" in r.chains[0].resources
    assert "store_forward_latency_partial" not in r.assumed_facts
    across = predict(["movq %rdi, 904(%rbx)", "movq 908(%rbx), %rdi"], PARTIAL)
    assert across.bounds.loop_carried == 19.0
    inside = predict(["movq %rdi, 904(%rbx)", "movq 904(%rbx), %rdi"], PARTIAL)
    assert inside.bounds.loop_carried == 0.0 and "partial" not in " ".join(
        summary.assumptions(inside))
    apart = predict(["movl %edi, 904(%rbx)", "movq 908(%rbx), %rdi"], PARTIAL)   # no byte shared
    assert apart.bounds.loop_carried == 0.0


def test_a_load_forwarding_fails_for_waits_for_everything_older_than_the_store():
    """x86 stores commit in order after they retire, and a load that forwarding fails for
    reads the committed bytes: no data links a load to the next iteration's, yet each waits
    for the one before (Zen 4, `pmpredict measure`, 2026-12-07: `movq 904(%r12), %rdi; movl
    $0, 904(%r12)` 19 cycles a loop, either order)."""
    # the 8-byte load reads the 4-byte store of the iteration before
    after = predict(["movq 904(%rbx), %rdi", "movl %eax, 904(%rbx)"], PARTIAL)
    assert after.bounds.loop_carried == 19.0
    before = predict(["movl %eax, 904(%rbx)", "movq 904(%rbx), %rdi"], PARTIAL)
    assert before.bounds.loop_carried == 19.0
    # an older instruction of longer latency, independent of memory, is waited for too
    # (imul: 3 cycles in TOY): load -> imul of rdi -> (commit) -> the next load
    longer = predict(["movq 904(%rbx), %rdi", "imulq %rdi, %rdi", "movl %eax, 904(%rbx)"],
                     PARTIAL)
    assert longer.bounds.loop_carried == 19.0 + TOY.latency[F["imul"]]
    # a store forwarding works for waits for nothing it does not read
    whole = predict(["movq 904(%rbx), %rdi", "movq %rax, 904(%rbx)"], PARTIAL)
    assert whole.bounds.loop_carried == 0.0


def test_a_model_without_the_partial_latency_says_it_did_not_count_the_stall():
    model = replace(PARTIAL, pipeline=RENAMING.pipeline)
    r = predict(["movl %edi, 904(%rbx)", "movq 904(%rbx), %rdi"], model)
    assert r.bounds.loop_carried == 0.0
    assert "store_forward_latency_partial" in r.assumed_facts
    assert "a load partly over an earlier store: its forwarding stall not counted" in \
        " ".join(summary.assumptions(r))


ADD_MI = "ADD_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((IMM:8))"
# Zen 3 (EPYC family 25 model 1, 2026-12-03): `add [rbx + 64], 1` back to back 7.5 cycles a
# link, one independent add between links 3.0, two 1.0; through rsp 1.0 back to back (the core
# renames the memory word only from a store far enough back, except through the stack pointer)
RMW_RENAMING = replace(RENAMING, **{
    "uops": {**RENAMING.uops, ADD_MI: ((ALU, 1), (LD, 1), (ST, 1))},
    "latency": {**RENAMING.latency, ADD_MI: 12.5},
    "operand_latency": {**RENAMING.operand_latency, ADD_MI: {0: 12.5}},
    "pipeline": {**RENAMING.pipeline, "rmw_chain_1": 7.5, "rmw_chain_2": 3.0, "rmw_chain_3": 1.0,
                 "rmw_chain_stack": 1.0}})


def test_read_modify_writes_of_one_place_take_the_share_their_distance_measured():
    """A read-modify-write chain through one place costs the form's link (forwarding + its
    operand latency - the load latency: 7.5) scaled by what the probe measured at the links'
    program-order distance: back to back 7.5, one instruction apart 3.0, two or more 1.0, and
    through rsp 1.0 at any distance."""
    assert predict(["addq $1, 64(%rbx)"], RMW_RENAMING).bounds.loop_carried == 7.5
    two = predict(["addq $1, 64(%rbx)", "addq $1, %rcx"], RMW_RENAMING)
    assert two.bounds.loop_carried == pytest.approx(3.0)
    three = predict(["addq $1, 64(%rbx)", "addq $1, %rcx", "addq $1, %rdx"], RMW_RENAMING)
    assert three.bounds.loop_carried == pytest.approx(1.0)
    five = predict(["addq $1, 64(%rbx)"] + [f"addq $1, %r{k}" for k in (8, 9, 10, 11)],
                   RMW_RENAMING)
    assert five.bounds.loop_carried == pytest.approx(1.0)
    assert predict(["addq $1, 64(%rsp)"], RMW_RENAMING).bounds.loop_carried == \
        pytest.approx(1.0)
    # two read-modify-writes of one place in a body: each edge spans the instructions between
    # them (1 one way, 3 the other way round the loop): 7.5 + 1.0
    pair = predict(["addq $1, 64(%rbx)", "addq $1, 64(%rbx)", "addq $1, %rcx", "addq $1, %rdx"],
                   RMW_RENAMING)
    assert pair.bounds.loop_carried == pytest.approx(7.5 + 1.0)
    for r in (two, three, five, pair):
        assert not any(k.startswith("rmw_chain") for k in r.assumed_facts)


def test_a_model_without_the_rmw_chains_says_read_modify_writes_are_never_renamed():
    model = replace(RMW_RENAMING, pipeline=RENAMING.pipeline)
    r = predict(["addq $1, 64(%rbx)", "addq $1, %rcx", "addq $1, %rdx"], model)
    assert r.bounds.loop_carried == 7.5
    said = " ".join(summary.assumptions(r))
    assert "rmw_chain_1" in r.assumed_facts and "renaming not measured" in said
    # a body without a read-modify-write chain says nothing of them
    plain = predict(["movq 904(%rbx), %r8", "addq %r8, %rdi", "movq %rdi, 904(%rbx)"], model)
    assert not any(k.startswith("rmw_chain") for k in plain.assumed_facts)
