"""The --device / --destroy-data-on / --force options shared by `compare` and `campaign run`.

A real block device is formatted only when the user names it twice; it is checked here,
before anything starts, so a refusal costs nothing and names the reason.
"""

from __future__ import annotations

import typer

from fsmeter.errors import UserError

DEVICE_HELP = "format this real block device (DESTROYS its data; needs --destroy-data-on naming it again)"
CONFIRM_HELP = "repeat the --device path to confirm its data may be destroyed"
FORCE_HELP = "also format a device carrying a filesystem or partition table (never a mounted one)"


def device_options():
    """(device, destroy_data_on, force) typer options, for a command's signature."""
    return (
        typer.Option(None, "--device", help=DEVICE_HELP),
        typer.Option(None, "--destroy-data-on", help=CONFIRM_HELP),
        typer.Option(False, "--force", help=FORCE_HELP),
    )


def device_target(device: str | None, destroy_data_on: str | None, force: bool) -> dict | None:
    """The campaign [target] for the device options, after every safety check; None without --device."""
    if device is None:
        if destroy_data_on is not None:
            raise UserError("--destroy-data-on needs --device naming the same device")
        if force:
            raise UserError("--force applies to --device only: name the device with --device and --destroy-data-on")
        return None
    if destroy_data_on is None:
        raise UserError(
            f"--device {device} would be formatted, destroying its data: confirm with --destroy-data-on {device}"
        )
    from fsmeter.provision.targets.device import check_device

    check_device(device, destroy_data_on, force)
    return {"kind": "device", "device": device, "destroy_data_on": destroy_data_on, "force": force}
