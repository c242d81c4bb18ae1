"""`reorder host-timeline`: probe --host-clock events of several GPUs on one host axis
(the work is reorder.cli.hostclock's)."""

from __future__ import annotations

from reorder.cli.registry import command


@command("host-timeline", "draw probe --host-clock events CSVs (one per GPU) on one host axis; count proven orders")
def _host_timeline():
    from reorder.cli import hostclock

    return hostclock.run_timeline, hostclock.add_timeline_arguments
