"""Command-line entry point: one module per subcommand, each exposing ``register(app)``.

Subcommand modules are discovered, so adding a command is adding a file.
"""
from __future__ import annotations

import importlib
import pkgutil
import sys

import typer

from fsmeter.errors import UserError

app = typer.Typer(
    name="fsmeter",
    help="Filesystem benchmarking lab: provision filesystems, run classic workloads, "
    "repeat trials until the confidence interval is tight, store and report every sample.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    # A callback keeps `fsmeter` a command group even while only one subcommand
    # exists; otherwise typer runs that command directly and parses its name as an argument.
    pass


def _register_all() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(app)


_register_all()


def die(message: str, exit_code: int = 2) -> "typer.Exit":
    """Print one line on stderr and return the Exit to raise."""
    print(f"fsmeter: error: {message}", file=sys.stderr)
    return typer.Exit(exit_code)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry: user errors become one line and an exit code, never a traceback."""
    try:
        app(args=argv, standalone_mode=True)
    except UserError as exc:
        print(f"fsmeter: error: {exc.message}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("fsmeter: interrupted", file=sys.stderr)
        sys.exit(130)
