"""Which kernel of a cubin a command works on: the one the user named, once, or none.

A kernel can be named two ways on one command line: `--kernel` and the launch spec's
`name`. Each may be a symbol, a C++ signature or a unique part of one (reorder.binary.names).
The rules, the same for every command:

- both given: they must name the same kernel, else one line says they do not (a spec for
  `rms_norm_f32<32>` must never time `rms_norm_f32<1024>` of the same cubin);
- one given: that kernel, refused when the cubin has no such kernel, whatever the other says;
- neither: the cubin's only kernel; a cubin with several is refused with their names
  (choosing the first would work on a kernel the user may never have meant).

A name that is not the kernel's exact symbol (a part of it, a signature) is accepted only
when it matches one kernel; for --kernel the choice says the full name, so the user sees
what was taken.
"""

from __future__ import annotations

from dataclasses import dataclass

from reorder.base.errors import InputError
from reorder.binary.cubin import Cubin, Kernel
from reorder.binary.names import MAX_LISTED, demangle


@dataclass(frozen=True, slots=True)
class KernelChoice:
    """The chosen kernel and, when the user did not write its exact symbol, the line saying
    which kernel the name was taken to mean ('' otherwise)."""

    kernel: Kernel
    note: str = ""

    @property
    def name(self) -> str:
        return self.kernel.name


def readable(symbol: str) -> str:
    """'signature [symbol]' for a mangled name, the name itself otherwise."""
    plain = demangle((symbol,))[0]
    return f"{plain} [{symbol}]" if plain != symbol else symbol


def listed(kernels: tuple[Kernel, ...]) -> str:
    """The kernels' readable names, at most MAX_LISTED of them."""
    names = [readable(k.name) for k in kernels[:MAX_LISTED]]
    return "; ".join(names) + (f" and {len(kernels) - MAX_LISTED} more" if len(kernels) > MAX_LISTED else "")


def _named(cubin: Cubin, name: str, who: str) -> Kernel:
    """The kernel `name` resolves to; the error names who gave the name."""
    try:
        return cubin.kernel(name)
    except InputError as exc:
        raise InputError(f"{who}: {exc}") from None


def choose_kernel(
    cubin: Cubin, given: str | None, spec_name: str | None = None, spec_where: str = "", where: str = ""
) -> KernelChoice:
    """The kernel `--kernel` (`given`) and the spec's name (`spec_name`, from `spec_where`)
    agree on (module docstring); InputError saying why when there is none. `where` names the
    input as the user gave it (a PTX file, when `cubin` is what ptxas made of it)."""
    where = where or cubin.path or "cubin"
    spec_who = f"{spec_where or 'the launch spec'} (kernel {spec_name!r})"
    from_spec = _named(cubin, spec_name, spec_who) if spec_name else None
    from_flag = _named(cubin, given, f"--kernel {given!r}") if given else None
    if from_spec and from_flag and from_spec.name != from_flag.name:
        raise InputError(
            f"--kernel {given!r} names {readable(from_flag.name)} but {spec_who} names "
            f"{readable(from_spec.name)} in {where}; leave --kernel out or make the two agree"
        )
    chosen = from_flag or from_spec
    if chosen is None:
        entries = tuple(k for k in cubin.kernels if k.is_entry) or tuple(cubin.kernels)
        if not entries:
            raise InputError(f"{where}: no kernels in this cubin")
        if len(entries) > 1:
            raise InputError(
                f"{where} holds {len(entries)} kernels ({listed(entries)}); name one with --kernel or a --launch spec"
            )
        return KernelChoice(entries[0])
    # a spec names its kernel by signature as a matter of course; a --kernel typed as a part
    # of a name is what may have caught another kernel than meant, so that one is said
    note = f"kernel {given!r} is {readable(chosen.name)}" if from_flag and given != chosen.name else ""
    return KernelChoice(chosen, note)
