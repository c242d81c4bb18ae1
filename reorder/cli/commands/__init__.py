"""The subcommands of `reorder`, one module each. Importing this package registers them in
reorder.cli.registry, in the order of the imports below, which is the order `reorder --help`
lists them: the commands of one kernel first, the GPU ones next, then the search, the suite,
the probes and the PTX commands (so the import order is kept as written, not sorted)."""

# isort: skip_file
from reorder.cli.commands import disasm  # noqa: F401  (each import registers its command)
from reorder.cli.commands import verify  # noqa: F401
from reorder.cli.commands import diff  # noqa: F401
from reorder.cli.commands import latency_probe  # noqa: F401
from reorder.cli.commands import stalls  # noqa: F401
from reorder.cli.commands import batch_loads  # noqa: F401
from reorder.cli.commands import prefetch  # noqa: F401
from reorder.cli.commands import check  # noqa: F401
from reorder.cli.commands import time  # noqa: F401
from reorder.cli.commands import optimize  # noqa: F401
from reorder.cli.commands import bench  # noqa: F401
from reorder.cli.commands import probe  # noqa: F401
from reorder.cli.commands import timeline  # noqa: F401
from reorder.cli.commands import host_timeline  # noqa: F401
from reorder.cli.commands import ptx_hoist  # noqa: F401
from reorder.cli.commands import ptx_loops  # noqa: F401
