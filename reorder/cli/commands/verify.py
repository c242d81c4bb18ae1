"""`reorder verify`: prove or reject a schedule (the work is reorder.cli.verify's)."""

from __future__ import annotations

from reorder.cli.options import kernel_name
from reorder.cli.registry import command


@command("verify", "prove or reject a schedule: exit 0 legal, 1 with a report of violations or what cannot be judged")
def _verify():
    from reorder.cli import verify as verify_command

    return verify_command.run, lambda p: verify_command.add_arguments(p, kernel_name)
