"""Memory, atomic and warp steps of a dependency chain, drawn from their whole product.

A load's opcode is its width, signedness, cache policy and state space (LDG.E.U16,
LDG.E.64.CONSTANT, LDG.E.EF.128, LDS.U8, LD.E ...), and the operand slot ptxas reads
the address from is fixed by it; the register feeding the address comes from IMAD.WIDE,
IMAD.WIDE.U32, LEA.HI.X, IADD3.X, MOV ... depending on the index's type and shape. The
verifier reuses a compiler distance only for the exact pair, so these are drawn as a
product (element type x access flavour x index shape) rather than listed by hand. Each
function returns the step's C statement and the chain type it leaves (None: the value
passes on unchanged), or None where it does not apply to the chain's current type.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

# element C type -> (chain type of the loaded value, how to get it from a loaded `{x}`)
ELEMENTS: dict[str, tuple[str, str]] = {
    "signed char": ("i32", "(int){x}"),
    "unsigned char": ("i32", "(int){x}"),
    "short": ("i32", "(int){x}"),
    "unsigned short": ("i32", "(int){x}"),
    "int": ("i32", "{x}"),
    "unsigned": ("i32", "(int){x}"),
    "float": ("f32", "{x}"),
    "double": ("f64", "{x}"),
    "long long": ("i64", "{x}"),
    "unsigned long long": ("i64", "(long long){x}"),
    "__half": ("h", "{x}"),
    "__half2": ("h2", "{x}"),
    "float2": ("f32", "{x}.y"),
    "float4": ("f32", "{x}.w"),
    "int2": ("i32", "{x}.x"),
    "int4": ("i32", "{x}.z"),
    "double2": ("f64", "{x}.y"),
    "longlong2": ("i64", "{x}.x"),
    "uchar4": ("i32", "(int){x}.y"),
    "short2": ("i32", "(int){x}.x"),
    "uint2": ("i32", "(int){x}.y"),
    "ushort4": ("i32", "(int){x}.w"),
}
SCALARS = (
    "signed char",
    "unsigned char",
    "short",
    "unsigned short",
    "int",
    "unsigned",
    "float",
    "double",
    "long long",
    "unsigned long long",
)
VECTORS = {
    "float2": "make_float2({v}, {v})",
    "float4": "make_float4({v}, {v}, {v}, {v})",
    "int2": "make_int2({v}, {v})",
    "int4": "make_int4({v}, {v}, {v}, {v})",
    "double2": "make_double2({v}, {v})",
    "longlong2": "make_longlong2({v}, {v})",
    "uchar4": "make_uchar4({v}, {v}, {v}, {v})",
    "short2": "make_short2({v}, {v})",
    "uint2": "make_uint2({v}, {v})",
    "ushort4": "make_ushort4({v}, {v}, {v}, {v})",
}
VECTOR_SCALAR = {
    "float2": "float",
    "float4": "float",
    "int2": "int",
    "int4": "int",
    "double2": "double",
    "longlong2": "long long",
    "uchar4": "unsigned char",
    "short2": "short",
    "uint2": "unsigned",
    "ushort4": "unsigned short",
}
CACHE_LOADS = ("__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv")
CACHE_STORES = ("__stwb", "__stcg", "__stcs", "__stwt")
SCALAR_OF = {
    "i32": "{a}",
    "i64": "{a}",
    "f32": "{a}",
    "f64": "{a}",
    "h": "__half2float({a})",
    "h2": "__low2float({a})",
    "bool": "(int){a}",
}


INT_SHAPES = (
    "{a}",
    "(unsigned){a}",
    "{a} + k",
    "{a} * {c}",
    "({a} >> {c}) + i",
    "{a} & 0x{m:x}",
    "(long long){a} * sl",
    "{a} + (int)blockIdx.x",
    "(unsigned)({a} & 0xffff) * {c}u",
)
LONG_SHAPES = ("{a}", "{a} & 0xffff", "(unsigned){a}", "{a} + sl", "({a} >> {c}) + i")
TO_INDEX = {
    "f32": "(int){a}",
    "f64": "(int){a}",
    "h": "__half2int_rz({a})",
    "h2": "__half2int_rz(__low2half({a}))",
    "bool": "(int){a}",
}


def index(rng: random.Random, value: str, kind: str, shape: int) -> str:
    """An index into an array computed from the chain's value (converted to an int where
    it is no integer, so the access stays on the chain), in the `shape`-th of the shapes
    that make different address arithmetic (IMAD.WIDE, IMAD.WIDE.U32, LEA.HI.X, IADD3.X)."""
    shapes = LONG_SHAPES if kind == "i64" else INT_SHAPES
    base = TO_INDEX[kind].format(a=value) if kind in TO_INDEX else value
    return shapes[shape % len(shapes)].format(
        a=f"({base})" if kind in TO_INDEX else base, c=rng.randint(2, 24), m=rng.randrange(1, 1 << 16)
    )


def element_value(element: str, value: str, kind: str) -> str:
    """The chain's value as an `element` to store."""
    if element == "__half":
        return value if kind == "h" else f"__float2half((float)({SCALAR_OF[kind].format(a=value)}))"
    if element == "__half2":
        return value if kind == "h2" else f"__float2half2_rn((float)({SCALAR_OF[kind].format(a=value)}))"
    scalar = f"({VECTOR_SCALAR.get(element, element)})({SCALAR_OF[kind].format(a=value)})"
    return VECTORS[element].format(v=scalar) if element in VECTORS else scalar


def flavours(element: str, store: bool = False) -> tuple[str, ...]:
    """How an element can be accessed: restrict-qualified (loads only), plain, with a cache
    hint, in shared memory, through a generic pointer, volatile (scalars only)."""
    return (
        (() if store else ("restrict",))
        + ("plain", "cache", "shared", "generic")
        + (("volatile",) if element in SCALARS else ())
    )


@dataclass
class Deck:
    """Combinations dealt in a shuffled order, reshuffled when all are dealt: each comes up
    before any comes up twice. Uniform draws from a product this large (a thousand load
    kinds) leave many combinations out of a run, and the verifier learns nothing it did
    not see; mutable, and owned by one generation run (`Draw`)."""

    cards: tuple
    rng: random.Random
    pile: list = field(default_factory=list)

    def deal(self):
        if not self.pile:
            self.pile = list(self.cards)
            self.rng.shuffle(self.pile)
        return self.pile.pop()


NATURAL = {
    "i32": ("int", "unsigned", "short", "signed char", "unsigned char"),
    "f32": ("float", "float2", "float4"),
    "f64": ("double", "double2"),
    "i64": ("long long", "unsigned long long"),
    "h": ("__half",),
    "h2": ("__half2",),
    "bool": ("unsigned char", "int"),
}
ATOMIC_TYPES = {
    "int": ("i32", ("Add", "Sub", "Exch", "Min", "Max", "And", "Or", "Xor", "CAS")),
    "unsigned": ("i32", ("Add", "Inc", "Dec", "Max", "Min", "CAS", "Exch")),
    "unsigned long long": ("i64", ("Add", "Exch", "Min", "Max", "And", "Or", "Xor", "CAS")),
    "float": ("f32", ("Add", "Exch")),
    "double": ("f64", ("Add",)),
    "__half2": ("h2", ("Add",)),
    "__half": ("h", ("Add",)),
}
SHAPES = range(len(INT_SHAPES))
LOAD_CARDS = tuple((e, f, s) for e in ELEMENTS for f in flavours(e) for s in SHAPES)
STORE_CARDS = tuple((e, f, s) for e in ELEMENTS for f in flavours(e, store=True) for s in (*SHAPES, None))
ATOMIC_CARDS = tuple(
    (e, op, shared, used, s)
    for e, (_, ops) in ATOMIC_TYPES.items()
    for op in ops
    for shared in (False, True)
    for used in (False, True)
    for s in SHAPES
)


@dataclass(frozen=True)
class Draw:
    """Where a generation run draws from: its random source and its decks of memory accesses."""

    rng: random.Random
    loads: Deck
    stores: Deck
    atomics: Deck
    shuffles: dict[str, Deck]

    @classmethod
    def seeded(cls, rng: random.Random) -> Draw:
        shuffles = {k: Deck(tuple(c for c in SHUFFLE_CARDS if c[0] == k), rng) for k in SHUFFLE_KINDS}
        return cls(rng, Deck(LOAD_CARDS, rng), Deck(STORE_CARDS, rng), Deck(ATOMIC_CARDS, rng), shuffles)


def load(draw: Draw, value: str, kind: str) -> tuple[str | None, str] | None:
    """The next load of the deck, its address computed from the chain's value."""
    element, flavour, shape = draw.loads.deal()
    dst, get = ELEMENTS[element]
    idx = index(draw.rng, value, kind, shape)
    if flavour == "restrict":
        x = f"((const {element}*)cv)[{idx}]"
    elif flavour == "plain":
        x = f"(({element}*)gv)[{idx}]"
    elif flavour == "cache":
        x = f"{draw.rng.choice(CACHE_LOADS)}((const {element}*)cv + ({idx}))"
    elif flavour == "shared":
        x = f"(({element}*)smraw)[({idx}) & 63]"
    elif flavour == "generic":
        x = f"((i & 1) ? ({element}*)smraw : ({element}*)gv)[({idx}) & 63]"
    else:
        x = f"((volatile {element}*)gv)[{idx}]"
    return dst, get.format(x=x)


def store(draw: Draw, value: str, kind: str) -> tuple[str | None, str] | None:
    """The next store of the deck: the chain's value as the element (so the producer of the
    data is the chain's last operation), at an index from the value or (shape None) the thread."""
    element, flavour, shape = draw.stores.deal()
    if draw.rng.random() < 0.5:  # the value stored as what it is, at an address ready long before:
        element = draw.rng.choice(NATURAL[kind])  # the store waits for its data alone
        flavour, shape = draw.rng.choice(flavours(element, store=True)), None
    data = element_value(element, value, kind)
    idx = "i" if shape is None else index(draw.rng, value, kind, shape)
    if flavour == "plain":
        return None, f"(({element}*)gv)[{idx}] = {data};"
    if flavour == "cache":
        return None, f"{draw.rng.choice(CACHE_STORES)}(({element}*)gv + ({idx}), {data});"
    if flavour == "shared":
        return None, f"(({element}*)smraw)[({idx}) & 63] = {data}; __syncthreads();"
    if flavour == "generic":
        return None, f"((i & 2) ? ({element}*)smraw : ({element}*)gv)[({idx}) & 63] = {data};"
    return None, f"((volatile {element}*)gv)[{idx}] = {data};"


def atomic(draw: Draw, value: str, kind: str) -> tuple[str | None, str] | None:
    """The next atomic of the deck, on global or shared memory, at any scope, its result
    used or not (RED; ATOMS.POPC.INC for a shared counter), the address from the chain."""
    element, op, shared, used, shape = draw.atomics.deal()
    dst = ATOMIC_TYPES[element][0]
    scoped = op not in ("Inc", "Dec") and element not in ("__half", "__half2") and not shared
    scope = draw.rng.choice(("", "", "_block", "_system")) if scoped else ""
    idx = index(draw.rng, value, kind, shape)
    where = f"({element}*)smraw + (({idx}) & 63)" if shared else f"({element}*)gv + ({idx})"
    constant = element not in ("__half", "__half2") and draw.rng.random() < 0.3
    data = f"({element})1" if constant else element_value(element, value, kind)
    call = f"atomicCAS{scope}({where}, {data}, ({element})1)" if op == "CAS" else f"atomic{op}{scope}({where}, {data})"
    if not used:
        return None, f"{call};"
    return dst, ELEMENTS[element][1].format(x=call)


SHUFFLE_MODES = ("__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync")
SHUFFLE_LANES = ("1", "2", "16", "k", "(int)(threadIdx.x + 1) & 31", "(i >> 3) & 31")
SHUFFLE_KINDS = ("i32", "f32", "f64", "i64", "h", "h2")
SHUFFLE_CARDS = tuple(
    (kind, mode, lane, width)
    for kind in SHUFFLE_KINDS
    for mode in SHUFFLE_MODES
    for lane in SHUFFLE_LANES
    for width in ("", ", 16")
)


def shuffle(draw: Draw, value: str, kind: str) -> tuple[str | None, str] | None:
    """A warp shuffle of the chain's value: the next mode, lane and width of the deck for
    the value's type."""
    if kind not in SHUFFLE_KINDS:
        return None
    _, mode, lane, width = draw.shuffles[kind].deal()
    return kind, f"{mode}(FULL, {value}, {lane}{width})"


def vote(draw: Draw, value: str, kind: str) -> tuple[str | None, str] | None:
    """Votes, matches and warp reductions of an int chain value."""
    if kind != "i32":
        return None
    return "i32", draw.rng.choice(
        (
            "(int)__ballot_sync(FULL, {a} > k)",
            "__any_sync(FULL, {a} & 1)",
            "__all_sync(FULL, {a} < n)",
            "(int)__match_any_sync(FULL, {a})",
            "[&] {{ int p; unsigned m = __match_all_sync(FULL, {a}, &p); return (int)m + p; }}()",
            "__reduce_add_sync(FULL, {a})",
            "__reduce_min_sync(FULL, {a})",
            "__reduce_max_sync(FULL, {a})",
            "(int)__reduce_and_sync(FULL, (unsigned){a})",
            "(int)__reduce_or_sync(FULL, (unsigned){a})",
            "(int)__reduce_xor_sync(FULL, (unsigned){a})",
            "(int)__activemask() & {a}",
            "__popc(__ballot_sync(__activemask(), {a} != 0))",
        )
    ).format(a=value)


# a vector element used whole, so every register a wide load writes is read by the reduction
WHOLE = {
    "float2": "[&] {{ auto t = {x}; return t.x * t.y; }}()",
    "float4": "[&] {{ auto t = {x}; return t.x * s + t.y * t.z + t.w; }}()",
    "double2": "[&] {{ auto t = {x}; return t.x + t.y; }}()",
    "int4": "[&] {{ auto t = {x}; return t.x + t.y + t.z + t.w; }}()",
    "int2": "[&] {{ auto t = {x}; return t.x ^ t.y; }}()",
}
REDUCE = {
    "f32": (
        "acc += {x};",
        "acc = fmaxf(acc, {x});",
        "acc = fminf(acc, {x});",
        "acc = fmaf(acc, s, {x});",
        "acc *= {x};",
    ),
    "i32": ("acc += {x};", "acc = max(acc, {x});", "acc ^= {x};", "acc = {x} > acc ? {x} : acc;"),
    "f64": ("acc += {x};", "acc = fmax(acc, {x});", "acc = fma(acc, sd, {x});"),
    "i64": ("acc += {x};", "acc = max(acc, {x});", "acc ^= {x};"),
    "h": ("acc = __hadd(acc, {x});", "acc = __hmax(acc, {x});"),
    "h2": ("acc = __hadd2(acc, {x});", "acc = __hmax2(acc, {x});", "acc = __hfma2(acc, acc, {x});"),
}
ZERO = {
    "f32": "0.0f",
    "f64": "0.0",
    "i32": "0",
    "i64": "0LL",
    "h": "__float2half(0.0f)",
    "h2": "__float2half2_rn(0.0f)",
}


def walk(draw: Draw, value: str, kind: str) -> tuple[str | None, str] | None:
    """A reduction loop over an array from an index the chain sets: pointer increments,
    loop-carried registers and, unrolled, loads whose destinations reuse registers an
    ALU operation has just read (the write-after-read pairs of row reductions and CSR walks)."""
    if kind not in ("i32", "i64"):
        return None
    element = draw.rng.choice(tuple(ELEMENTS))
    dst, get = ELEMENTS[element]
    ptr = draw.rng.choice(("(const {e}*)cv", "({e}*)gv", "(const {e}*)cv + i"))
    var = draw.rng.choice(("int", "long long", "unsigned"))
    bound = {"int": "n", "long long": "sl", "unsigned": "(unsigned)n"}[var]
    step = draw.rng.choice(("1", "k", "32", "(int)blockDim.x"))
    unroll = draw.rng.choice(("", '_Pragma("unroll 4") ', '_Pragma("unroll 8") ', '_Pragma("unroll 1") '))
    load_ = f"({ptr.format(e=element)})[j]"
    if draw.rng.random() < 0.3:
        load_ = draw.rng.choice(CACHE_LOADS) + f"({ptr.format(e=element)} + j)"
    load_ = (WHOLE[element] if element in WHOLE and draw.rng.random() < 0.6 else get).format(x=load_)
    body = draw.rng.choice(REDUCE[dst]).format(x=load_)
    code = (
        f"[&] {{ auto acc = {ZERO[dst]}; {unroll}for ({var} j = ({var}){value}; j < {bound}; j += {step}) "
        f"{{ {body} }} return acc; }}()"
    )
    return dst, code


def region(draw: Draw, value: str, kind: str) -> tuple[str | None, str] | None:
    """Divergent regions that must reconverge (a loop under a data-dependent branch), one
    after another: BSSY/BSYNC on the same barrier register in sequence."""
    if kind != "i32":
        return None
    one = "if ({a} > {c}) {{ for (int j = 0; j < n; j += {s}) gi[j + {a}] += j; }}"
    count = draw.rng.randint(1, 3)
    parts = [one.format(a=value, c=draw.rng.randint(0, 99), s=draw.rng.choice((1, 2, 4))) for _ in range(count)]
    return None, " ".join(parts)


FAMILIES = (load, store, atomic, shuffle, vote, walk, region)
