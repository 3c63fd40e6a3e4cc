"""Command-line entry point: one module per subcommand, each exposing ``register(app)``.

Subcommand modules are discovered, so adding a command is adding a file. A command line
loads only the module of the subcommand it names.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import typer

from fsmeter import interrupt
from fsmeter.errors import UserError


def _new_app() -> typer.Typer:
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
        # is registered; otherwise typer runs that command directly and parses its name as an argument.
        pass

    return app


def _command_modules() -> list:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def _build(modules: list) -> typer.Typer:
    app = _new_app()
    for name in modules:
        register = getattr(importlib.import_module(f"{__name__}.{name}"), "register", None)
        if register is not None:
            register(app)
    return app


def _modules_for(args: list) -> list:
    """The modules a command line needs: the one its subcommand names (`compare-runs` is
    compare_runs.py), so that `fsmeter run` does not load campaigns, reports and provisioning it
    never uses; every one for help, options first, or a name that is not a module's."""
    mods = _command_modules()
    if args and not args[0].startswith("-"):
        name = args[0].replace("-", "_")
        if name in mods:
            return [name]
    return mods


_full_app = None


def __getattr__(name: str):
    # `fsmeter.cli.app`: every subcommand registered, built on first use (tests, docs tools).
    global _full_app
    if name == "app":
        if _full_app is None:
            _full_app = _build(_command_modules())
        return _full_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def die(message: str, exit_code: int = 2) -> typer.Exit:
    """Print one line on stderr and return the Exit to raise."""
    print(f"fsmeter: error: {message}", file=sys.stderr)
    return typer.Exit(exit_code)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry: user errors become one line and an exit code, never a traceback."""
    # Not list(...): once every command module is imported (fsmeter.cli.app), the `list` command's
    # module is an attribute of this package and shadows the builtin here.
    args = [*(sys.argv[1:] if argv is None else argv)]
    # SIGTERM and SIGHUP stop a command the way Ctrl-C does (fsmeter.interrupt).
    interrupt.install()
    try:
        _build(_modules_for(args))(args=args, prog_name="fsmeter", standalone_mode=True)
    except UserError as exc:
        print(f"fsmeter: error: {exc.message}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt as exc:
        print("fsmeter: interrupted", file=sys.stderr)
        sys.exit(interrupt.exit_status(exc))
    except SystemExit as exc:
        # Commands (and typer, for an interrupt they leave) exit 130 when stopped: report the
        # signal that did stop them, 143 for SIGTERM, 129 for SIGHUP.
        if exc.code == 130 and interrupt.received():
            sys.exit(interrupt.exit_status())
        raise
