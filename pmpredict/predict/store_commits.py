"""How a core commits stores: a strategy chosen from the model's measured facts, not branches
in the dependence graph or the predictor.

Engine layer: plain data in, plain data out, no I/O.

Two facts of a model's pipeline (model/facts.py) say how its stores leave for the cache:
  * store_commits: how many stores commit a cycle whatever their forms, on commit ports of
    their own past the model's (commit_ports; annotate.py gives every store of a known form
    its uop there);
  * paired_stores: whether two consecutive stores into one aligned block commit at once, and
    then paired_store_bytes (the block), paired_store_width (the widest store that pairs),
    paired_store_vector (whether a vector register's data pairs), paired_store_leftover
    (whether the stores a run of same-block stores leaves over share commits),
    paired_store_forwarded (whether a store a load reads back pairs), paired_store_flags
    (whether a store of a condition, setcc to memory, pairs), paired_store_mixed (the widest
    vector register's store that pairs with a store of another kind where two do not).
`store_commit_rule(facts)` reads them and returns the rule the engines ask (StoreCommitRule):
CommitsAlone where stores do not pair, PairedWithinBlock where they do. The rule's `commit`
gives the instructions with their paired stores' uops, and the facts its decisions used, in
order, for the caller to record where the model does not give them (FactReader.value).
A paired store is told by Annotated.paired (EVERY, EVEN, ODD); uop_mass and uop_cycles read
that for the port bound and the simulation.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pmpredict.predict.annotate import Annotated, MachineFacts
from pmpredict.predict.deps import Node, SymbolicAddresses, forwarded_stores
from pmpredict.predict.line_splits import crosses
from pmpredict.predict.simulation_arrays import SKIP_EVEN, SKIP_ODD

EVERY, EVEN, ODD = 3, 1, 2        # iterations on which a store is the second of a pair (bits)


def commit_ports(model) -> tuple[str, ...]:
    """The ports a model's measured store commits stand for (pipeline store_commits: every
    store of a known form takes a uop there, besides its form's; a store that pairs with the
    one before it runs its address uops only, as it commits with that one): named after the
    model's own ports, `store` (or store1, store2...); none where the model does not say."""
    return _commit_port_names(int((model.pipeline or {}).get("store_commits") or 0))


def _commit_port_names(n: int) -> tuple[str, ...]:
    return ("store",) if n == 1 else tuple(f"store{k + 1}" for k in range(n))


@dataclass(frozen=True)
class Committed:
    """What a rule made of a kernel's stores: the instructions as they run (a paired store's
    uops replaced), and the facts the rule's decisions used, in the order it met them (the
    caller records each the model does not give: FactReader.value)."""
    annotated: list[Annotated]
    used: tuple[str, ...] = ()


class StoreCommitRule:
    """How a core commits stores: the interface the engines ask (store_commit_rule chooses).

    `commits`: stores committed a cycle on commit ports of their own (the pipeline's
    store_commits; 0: none), `commit_mask` their port mask in the engine's ports."""
    commits: int = 0
    commit_mask: int = 0

    def commit_ports(self) -> tuple[str, ...]:
        """The names of the commit ports (commit_ports), after the model's own."""
        return _commit_port_names(self.commits)

    def commit(self, annotated: list[Annotated], nodes: list[Node], node_rows: list[int],
               address: tuple[tuple[int, int], ...]) -> Committed:
        """The instructions with their stores committed as the core does; `nodes` the
        dependence graph's nodes, `node_rows` each node's instruction, `address` the uops of
        an address generation (the model's plain load's)."""
        raise NotImplementedError


@dataclass(frozen=True)
class CommitsAlone(StoreCommitRule):
    """Every store commits by itself (paired_stores 0, or not given): the instructions as they
    are, no fact used."""
    commits: int = 0
    commit_mask: int = 0

    def commit(self, annotated, nodes, node_rows, address) -> Committed:
        return Committed(annotated)


@dataclass(frozen=True)
class PairedWithinBlock(StoreCommitRule):
    """Two consecutive stores into one aligned block of `block_bytes` commit at once
    (paired_stores 1, the block paired_store_bytes): the second runs only its address
    generation on the iterations it pairs (paired_stores). `max_width`: the widest store that
    pairs, bytes (paired_store_width; None: any); `vector`: whether two stores of a vector
    register's data pair (paired_store_vector); `mixed`: where they do not, the widest that
    pairs with a store of another kind, bytes (paired_store_mixed); `leftover`: whether the
    stores a run leaves over share commits (paired_store_leftover)."""
    block_bytes: int
    max_width: int | None = None
    vector: bool = True
    leftover: bool = False
    commits: int = 0
    commit_mask: int = 0
    forwarded: bool = True
    flags: bool = True
    mixed: int = 0

    def pairs(self, nodes: list[Node], alone: frozenset = frozenset()
              ) -> tuple[dict[int, int], bool]:
        """paired_stores with this rule's facts: where the commit is a port of its own,
        pushes pair as other stores do; the stores in `alone` commit alone; two stores of a
        condition do not pair with each other where paired_store_flags says so."""
        apart = frozenset() if self.flags else frozenset(
            (i, k) for i, node in enumerate(nodes) for k, ref in enumerate(node.memory)
            if ref.flags_data)
        return paired_stores(nodes, self.block_bytes, self.max_width, self.vector,
                             bool(self.commit_mask), self.leftover, alone, apart, self.mixed)

    def commit(self, annotated, nodes, node_rows, address) -> Committed:
        # a store a load reads back commits alone where paired_store_forwarded is 0
        read_back = forwarded_stores(nodes)
        alone = read_back if not self.forwarded else frozenset()
        annotated, left_over = _pair_stores(annotated, self.pairs(nodes, alone), node_rows,
                                            address, self.commit_mask)
        # each said where it decides: a store a run leaves over, one wider than 8 bytes,
        # one of a vector register's data, one a load reads back
        used = []
        if left_over:
            used.append("paired_store_leftover")
        if read_back:
            used.append("paired_store_forwarded")
        if any(ref.store and ref.width and ref.width > 64 for n in nodes for ref in n.memory):
            used.append("paired_store_width")
        kinds = {ref.vector for n in nodes for ref in n.memory if ref.store}
        if True in kinds:
            used.append("paired_store_vector")
            if not self.vector and False in kinds:
                used.append("paired_store_mixed")
        if any(ref.flags_data for n in nodes for ref in n.memory):
            used.append("paired_store_flags")
        return Committed(annotated, tuple(used))


def store_commit_rule(facts: MachineFacts) -> StoreCommitRule:
    """The rule of the model's measured facts (annotate.MachineFacts: the model's value, else
    the assumed one): PairedWithinBlock where the pipeline's paired_stores says stores pair,
    else CommitsAlone; either with the store commits (store_commits) and their port mask."""
    commits = facts.store_commits
    if not facts.value("paired_stores"):
        return CommitsAlone(commits, facts.commit_mask)
    return PairedWithinBlock(int(facts.value("paired_store_bytes")),
                             int(facts.value("paired_store_width")),
                             bool(facts.value("paired_store_vector")),
                             bool(facts.value("paired_store_leftover")),
                             commits, facts.commit_mask,
                             bool(facts.value("paired_store_forwarded")),
                             bool(facts.value("paired_store_flags")),
                             int(facts.value("paired_store_mixed")))


def _pair_stores(annotated: list[Annotated], paired: tuple[dict[int, int], bool],
                 node_rows: list[int], address, commit: int = 0) -> tuple[list, bool]:
    """Plain stores committed with the store before them (`paired`: paired_stores' answer)
    run only their address generation (`address`: the plain load's uops) on the iterations
    they pair: every iteration (their uops replaced), or every other one (Annotated.paired). A
    store that also loads keeps its uops; where the commit is a port of its own (`commit`: its
    mask, the pipeline's store_commits), one that loads from elsewhere (push m64) shares its
    commit (measured on Zen 4: three `push m64` 2.06 cycles, as three `push r64`), while a
    read-modify-write of one place (add [m], r) keeps it. Also returned: whether the kernel
    has stores a run leaves over (paired_stores: the pipeline's paired_store_leftover
    matters)."""
    out = list(annotated)
    pairs, left_over = paired
    for k, when in pairs.items():
        a = out[node_rows[k]]
        if not a.uops:
            continue
        uops = address
        if a.semantics.loads:
            if not commit or any(m.load and m.store for m in a.semantics.memory):
                continue
            uops = tuple(u for u in a.uops if u[0] != commit)
        out[node_rows[k]] = replace(a, uops=uops) if when == EVERY else \
            replace(a, paired=when, paired_uops=uops)
    return out, left_over


def uop_mass(a: Annotated) -> list[tuple[int, float]]:
    """(port mask, uops per iteration) of an instruction: a store paired every other iteration
    runs half its own uops and half its address's."""
    if not a.paired:
        return list(a.uops)
    return [(mask, count / 2) for mask, count in a.uops + a.paired_uops]


def uop_cycles(a: Annotated) -> tuple[int, ...]:
    """The simulation's port masks of an instruction, one per uop cycle; a store paired every
    other iteration skips its own uops on those iterations and its address's on the others."""
    if not a.paired:
        return tuple(mask for mask, count in a.uops for _ in range(count))
    on = (SKIP_EVEN if a.paired & EVEN else 0) | (SKIP_ODD if a.paired & ODD else 0)
    off = (SKIP_EVEN | SKIP_ODD) & ~on
    return tuple(mask | on for mask, count in a.uops for _ in range(count)) + \
        tuple(mask | off for mask, count in a.paired_uops for _ in range(count))


def paired_stores(nodes: list[Node], block_bytes: int, max_width: int | None = None,
                  vector: bool = True, implicit: bool = False, leftover: bool = False,
                  alone: frozenset = frozenset(), apart: frozenset = frozenset(),
                  mixed: int = 0) -> tuple[dict[int, int], bool]:
    """Stores that commit together with the store before them, on a core that commits two
    consecutive stores into one aligned block of `block_bytes` at once (the pipeline's
    paired_store_bytes; measured on Zen 4: 0.5 cycles per store for two stores at [rbp + 8],
    [rbp + 16], 1 for [rbp + 24], [rbp + 32], whose 32-byte blocks differ): node -> the
    iterations on which it is the second of a pair.

    Stores are taken in program order, across iterations; two consecutive ones share a block
    when their addresses have the same symbolic base and their offsets fall into the same
    block counted from it (the base taken as aligned, as stack frames and allocations
    usually are); across iterations, a pointer that moves by half a block or less is taken as
    staying in it. In each run of same-block stores, the 2nd, 4th... pair up (EVERY
    iteration). A run that spans the whole loop pairs across iterations: with an even number
    of stores as before, with an odd number each store is the second of a pair every other
    iteration (EVEN or ODD: iteration parity, the first iteration being even). Where
    `leftover` (the pipeline's paired_store_leftover), the 3rd, 5th... of the runs share
    commits as far as half of all stores need beyond the stores that start a block: the
    loop's commits are max(block starts, stores / 2) (measured on Zen 4, tests/
    test_paired_stores.py: [b + 16], [b + 32], [b + 40], [b + 48] 2.00 cycles). Also returned:
    whether the kernel has such stores (the fact matters to it).

    Only stores of at most `max_width` bytes pair (None: any width; the pipeline's
    paired_store_width; measured on Zen 4: 8-byte stores pair, 16- and 32-byte ones do not); a
    wider store ends a run. So does a store no operand names (push, call): a push form is
    measured as a run of pushes to adjacent addresses, which pair on a pairing core, so its
    uops already carry the pairing (measured on Zen 4: push r64 0.57 cycles in a block of its
    own, its form 0.5; paired again, 0.25); unless `implicit`: where the stores' commit is a
    port of its own (the pipeline's store_commits), pushes pair as other stores do. Two stores
    of a vector register's data pair only where `vector` (the pipeline's paired_store_vector;
    measured on Zen 4: they do not, whatever their width); where they do not, one of at most
    `mixed` bytes pairs with a store of another kind (paired_store_mixed, 0: none; measured on
    Zen 4: 16, `vmovsd [m], xmm3; mov [m + 8], r11` 1.00 cycles a loop and so with a 16-byte
    `vmovdqu`, two `vmovsd` 2.00, a 32-byte store and a register's 2.00). The stores of
    `alone` ((node, access): on Zen 4 the stores a load of the loop reads back,
    forwarded_stores) do not pair and end a run: two such stores into one block 2.00 cycles a
    copy, where pairing says 1.00.
    Nor does a store whose bytes pass its block's end (its base taken as aligned). No two
    stores of `apart` pair with each other (on Zen 4 stores of a condition, setcc to memory:
    `setne [m]; sete [m + 8]` 2.00 cycles, `mov [m], r14; setne [m + 8]` 1.00 as a pair;
    one setne to one place 1.00, not paired with itself)."""
    addresses = SymbolicAddresses(nodes)
    stores = [(i, k) for i, node in enumerate(nodes) for k, ref in enumerate(node.memory)
              if ref.store]
    m = len(stores)
    if m == 0:
        return {}, False

    def at(j: int):
        i, k = stores[j]
        return addresses.where[i][k]

    def same_block(a, b) -> bool:
        return a[0] == b[0] and a[1] // block_bytes == b[1] // block_bytes

    def within_block(j: int) -> bool:
        # a store across a block's end writes two blocks: it shares a commit with no other
        # (measured on Zen 4: `mov dword ptr [rbx + 445], r8d` alone 2.00 cycles, a line
        # split, where pairing with itself would say 1.00)
        i, k = stores[j]
        width = nodes[i].memory[k].width
        return width is None or not crosses(at(j)[1], width // 8, block_bytes)

    # the last store of the previous iteration, in this iteration's terms; when its pointer
    # has moved since, the two share a block most of the time if it moved by half one or less
    last = addresses.previous_iteration(*at(m - 1))
    first = at(0)
    wrap = last is not None and last[0] == first[0] and (
        same_block(first, last) if last[1] == at(m - 1)[1]
        else abs(first[1] - last[1]) <= block_bytes // 2)
    def narrow(j: int) -> bool:
        i, k = stores[j]
        if (i, k) in alone or not within_block(j):
            return False
        if nodes[i].memory[k].implicit and not implicit:
            return False                     # its measured uops hold the pairing already
        width = nodes[i].memory[k].width
        if nodes[i].memory[k].vector and not vector:
            return mixed > 0 and (width is None or width <= 8 * mixed)
        return max_width is None or width is None or width <= 8 * max_width

    def both_apart(j: int, before: int) -> bool:
        # two stores of a condition where paired_store_flags is 0, two of vector registers
        # where paired_store_vector is 0
        if stores[j] in apart and stores[before] in apart:
            return True
        return not vector and all(nodes[stores[x][0]].memory[stores[x][1]].vector
                                  for x in (j, before))

    same = [wrap and narrow(0) and narrow(m - 1) and not both_apart(0, m - 1)] + [
        same_block(at(j), at(j - 1)) and narrow(j) and narrow(j - 1) and not both_apart(j, j - 1)
        for j in range(1, m)]
    out: dict[int, int] = {}
    if all(same):
        for j, (i, _) in enumerate(stores):
            when = EVERY if m % 2 == 0 and j % 2 else 0 if m % 2 == 0 else (EVEN if j % 2 else ODD)
            if when:
                out[i] = out.get(i, 0) | when
        return out, False
    start = same.index(False)
    position = 0
    left = []                 # the 3rd, 5th... of a run: no store before it to pair with
    for step in range(m):
        j = (start + step) % m
        position = position + 1 if same[j] else 0
        if position % 2:
            out[stores[j][0]] = EVERY
        elif position:
            left.append(stores[j][0])
    # where the stores a run leaves over share commits (paired_store_leftover: a loop's stores
    # commit at max(the stores that start a block, half of all) cycles; measured on Zen 4:
    # [b + 16], [b + 32], [b + 40], [b + 48] 2.00, the runs alone would say 3;
    # tests/test_paired_stores.py has the readings), of their cost the half-cycles that half
    # of all stores need beyond the block starts remain
    halves = max(0, m - 2 * same.count(False))
    if not leftover or halves >= 2 * len(left):
        return out, halves < 2 * len(left)
    whole = max(0, halves - len(left))             # left-over stores that still commit alone
    for t, i in enumerate(left):
        if t < whole:
            continue
        if t - whole < halves - 2 * whole:
            out[i] = out.get(i, 0) | (EVEN if (t - whole) % 2 else ODD)
        else:
            out[i] = out.get(i, 0) | EVERY
    return out, True
