"""Command-line entry point: one module per subcommand, each exposing ``register(app)``.

Subcommand modules are discovered, so adding a command is adding a file. A command line
loads only the module of the subcommand it names.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import typer
import typer.core
import typer.main

from fsmeter import interrupt
from fsmeter.errors import UserError

#: The exceptions of the click typer runs on: its own copy (typer._click) in newer typers, click itself before.
_CLICK = getattr(typer.core, "_click", None) or importlib.import_module("click")
_CLICK = _CLICK.exceptions
#: `fsmeter` or a command group given alone: click shows its help (newer clicks raise this for it).
_NO_ARGS_IS_HELP = getattr(_CLICK, "NoArgsIsHelpError", ())


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
        _run(_build(_modules_for(args)), args)
    except _CLICK.ClickException as exc:
        if isinstance(exc, _NO_ARGS_IS_HELP):
            exc.show()  # `fsmeter` or a command group alone: its help, as asked
        else:
            print(f"fsmeter: error: {usage_line(exc)}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except typer.Abort:
        print("fsmeter: interrupted", file=sys.stderr)
        sys.exit(interrupt.exit_status() if interrupt.received() else 130)
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


def _run(app: typer.Typer, args: list) -> None:
    """What typer's standalone main does (parse, invoke, exit with the command's code; Ctrl-C is exit
    130, a closed pipe exit 1), except that click's usage errors propagate, to be printed as one line
    like every other error instead of typer's boxed usage text."""
    command = typer.main.get_command(app)
    try:
        with command.make_context("fsmeter", args) as ctx:
            command.invoke(ctx)
        sys.exit(0)  # as typer's own main: a command that returns ends the process with status 0
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except EOFError:
        raise typer.Abort() from None
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.stdout = None  # nothing more can reach the reader, nor should Python try at exit
        sys.exit(1)


def usage_line(exc: Exception) -> str:
    """A usage error (unknown option, missing argument, a value of the wrong type) as one line: the
    command, click's message with its whitespace folded, and where to read the usage."""
    message = " ".join(exc.format_message().split()).rstrip(".")
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return message
    return f"{ctx.command_path}: {message}: see `{ctx.command_path} --help`"
