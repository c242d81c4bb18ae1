"""Loop kernels: reductions and streams, the shapes ptxas unrolls and software-pipelines.

Unrolled loops are where ptxas packs hardest: many loads in flight, address registers
copied and bumped (MOV/IADD3.X into an LDG's address), and a reduction's ALU operation
reading a register that the next load overwrites a cycle or two later (write-after-read
pairs such as FMNMX -> LDG.E.CONSTANT). Chains (`legality.calibration.chains`) seldom make
these; here each kernel is one loop drawn from element type x access flavour x index type
x start x stride x reduction x unrolling, with an optional second array (a dot product),
a warp reduction after it and a plain or atomic store of the result.
"""

from __future__ import annotations

import random

from legality.calibration.chains import PROLOGUE, SIGNATURE
from legality.calibration.memory import CACHE_LOADS, ELEMENTS, REDUCE, WHOLE, ZERO

STARTS = ("lane", "i", "row * n + lane", "0", "(int)threadIdx.x", "i * k")
STRIDES = ("32", "(int)blockDim.x", "1", "k", "(int)(blockDim.x * gridDim.x)")
BOUNDS = {"int": ("n", "k * n", "n - 1"), "long long": ("sl", "(long long)n * k"), "unsigned": ("(unsigned)n",)}
PRAGMAS = (
    "",
    "#pragma unroll 4\n    ",
    "#pragma unroll 8\n    ",
    "#pragma unroll 2\n    ",
    "#pragma unroll 1\n    ",
    "#pragma unroll 16\n    ",
)
WARP_REDUCE = {"f32": ("fmaxf", "+"), "i32": ("max", "+"), "f64": ("fmax", "+"), "i64": ("max", "+")}
RESULT = {
    "f32": ("gf", "float"),
    "i32": ("gi", "int"),
    "f64": ("gd", "double"),
    "i64": ("gl", "long long"),
    "h": ("gh", "__half"),
    "h2": ("gh", "__half2"),
}


def access(rng: random.Random, element: str, var: str) -> str:
    """One element at index `var` of a read-only, plain or cache-hinted array."""
    flavour = rng.choice(("restrict", "restrict", "plain", "cache"))
    if flavour == "restrict":
        x = f"((const {element}*)cv)[{var}]"
    elif flavour == "plain":
        x = f"(({element}*)gv)[{var}]"
    else:
        x = f"{rng.choice(CACHE_LOADS)}((const {element}*)cv + {var})"
    get = WHOLE[element] if element in WHOLE and rng.random() < 0.6 else ELEMENTS[element][1]
    return get.format(x=x)


def warp_reduce(rng: random.Random, kind: str) -> list[str]:
    """A butterfly or tree reduction of `acc` across the warp, where the type has one."""
    if kind not in WARP_REDUCE or rng.random() < 0.4:
        return []
    func, op = WARP_REDUCE[kind]
    mode = rng.choice(("__shfl_xor_sync", "__shfl_down_sync", "__shfl_up_sync"))
    combines = [f"acc = {func}(acc, {{x}});", f"acc = acc {op} {{x}};"]
    if kind in ("f32", "f64"):  # a merge computed by an FMA, shuffled at once (Welford-style statistics)
        combines.append("acc = fmaf({x}, s, acc);" if kind == "f32" else "acc = fma({x}, sd, acc);")
    combine = rng.choice(combines)
    return [f"for (int o = 16; o > 0; o >>= 1) {combine.format(x=f'{mode}(FULL, acc, o)')}"]


def result_store(rng: random.Random, kind: str) -> str:
    """The reduction's result stored by one lane, by every thread, or added atomically."""
    array, ctype = RESULT[kind]
    target = f"(({ctype}*){array})"
    if kind in ("f32", "f64", "i32") and rng.random() < 0.3:
        return f"if (lane == 0) atomicAdd({target} + row, acc);"
    return rng.choice((f"if (lane == 0) {target}[row] = acc;", f"{target}[i] = acc;"))


# what is done to an element before it is reduced: MUFU, conversions and shuffles write
# registers an ALU operation has just read, as softmax's exponentials do
TRANSFORMS = {
    "f32": (
        "__expf({x} - s)",
        "sqrtf({x})",
        "{x} * {x}",
        "__sinf({x})",
        "rsqrtf({x})",
        "(float)(int)({x})",
        "__shfl_down_sync(FULL, {x}, 1)",
    ),
    "i32": ("__popc({x})", "{x} * {x}", "(int)__brev({x})", "(int)(float)({x})", "__shfl_xor_sync(FULL, {x}, 2)"),
    "f64": ("{x} * {x}", "sqrt({x})", "(double)(float)({x})", "__shfl_xor_sync(FULL, {x}, 4)"),
    "i64": ("{x} * {x}", "(long long)(double)({x})"),
}
LAUNCH_BOUNDS = (
    "",
    "",
    "__launch_bounds__(1024) ",
    "__launch_bounds__(256, 8) ",
    "__launch_bounds__(128, 16) ",
    "__launch_bounds__(1024, 2) ",
)


def element_term(rng: random.Random, element: str, kind: str, at: str = "j") -> str:
    """The value one iteration reduces: an element, maybe times a second array's, maybe transformed."""
    x = access(rng, element, at)
    if rng.random() < 0.3 and kind in TRANSFORMS:
        x = f"({x}) * ({access(rng, element, f'{at} + n')})"
    if rng.random() < 0.35 and kind in TRANSFORMS:
        x = rng.choice(TRANSFORMS[kind]).format(x=x)
    return x


COMBINE = {"h": "acc = __hadd(acc, {x});", "h2": "acc = __hadd2(acc, {x});"}


def accumulations(rng: random.Random, element: str, kind: str) -> tuple[list[str], str, list[str]]:
    """1-4 independent accumulators over strided elements: (their declarations, the loop
    body, folding them into `acc`). More values live at once make ptxas recycle a register
    the cycle after its last reader, as register-bound unrolled loops do."""
    count = rng.choice((1, 1, 2, 4))
    names = ["acc"] + [f"acc{t}" for t in range(1, count)]
    decls = [f"auto {a} = {ZERO[kind]};" for a in names]
    body = " ".join(
        rng.choice(REDUCE[kind]).replace("acc", a).format(x=element_term(rng, element, kind, f"j + {t} * k"))
        for t, a in enumerate(names)
    )
    fold = [COMBINE.get(kind, "acc = acc + {x};").format(x=a) for a in names[1:]]
    return decls, body, fold


def loop_kernel(name: str, rng: random.Random) -> str:
    """One reduction or streaming loop kernel (see the module docstring); tight launch bounds
    on some make ptxas reuse registers at once (the write-after-read pairs)."""
    element = rng.choice(tuple(ELEMENTS))
    kind = ELEMENTS[element][0]
    var = rng.choice(tuple(BOUNDS))
    decls, body, fold = accumulations(rng, element, kind)
    loop = (
        f"{rng.choice(PRAGMAS)}for ({var} j = ({var})({rng.choice(STARTS)}); j < {rng.choice(BOUNDS[var])}; "
        f"j += {rng.choice(STRIDES)}) {{ {body} }}"
    )
    lines = [
        "int i = blockIdx.x * blockDim.x + threadIdx.x;",
        "int lane = threadIdx.x & 31;",
        "int row = i >> 5;",
        *decls,
        loop,
        *fold,
        *warp_reduce(rng, kind),
        result_store(rng, kind),
    ]
    text = "\n    ".join(lines)
    return f'extern "C" __global__ void {rng.choice(LAUNCH_BOUNDS)}{name}({SIGNATURE}) {{\n    {text}\n}}\n'


__all__ = ["PROLOGUE", "loop_kernel"]
