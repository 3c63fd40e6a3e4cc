"""MkDocs hook: the CLI reference, one page per fsmeter command, written from the CLI itself.

At every `mkdocs build` (`make docs`) this walks the command tree typer hands to click
(`fsmeter.cli.app`, every subcommand registered; typer carries its own copy of click, so
the walk goes by attributes, not by click's classes) and writes, for each command, its usage line, its
help text, its subcommands and a table of its arguments and options with their type and default.
Nothing is copied by hand, so the pages cannot drift from `fsmeter ... --help`.

The pages are generated into the site only (`cli/...`), never into docs/; mkdocs.yml names
`cli/index.md` under "CLI reference" and this hook puts every command page under it in the nav.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator

SECTION = "CLI reference"


def _root():
    import fsmeter.cli  # a docs tool: the one kind of code that may import the CLI
    import typer

    return typer.main.get_command(fsmeter.cli.app)


def _is_group(cmd) -> bool:
    return isinstance(getattr(cmd, "commands", None), dict)


def _walk(cmd, path: list) -> Iterator[tuple]:
    yield path, cmd
    if _is_group(cmd):
        for name in sorted(cmd.commands):
            sub = cmd.commands[name]
            if not sub.hidden:
                yield from _walk(sub, path + [name])


def _uri(path: list) -> str:
    return "cli/index.md" if len(path) == 1 else "cli/" + "-".join(path) + ".md"


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _is_option(p) -> bool:
    return p.param_type_name == "option"


def _type(p, ctx) -> str:
    if _is_option(p) and p.is_flag:
        return "flag"
    return _cell(p.display_type(ctx).strip("<>")).replace("\\|", "or")


def _default(p, ctx) -> str:
    d = p.get_default(ctx)
    if d is None or d == () or d == [] or (_is_option(p) and p.is_flag and not d):
        return ""
    if _is_option(p) and p.is_flag:
        return "on"
    return f"`{d}`"


def _page(path: list, cmd) -> str:
    name = " ".join(path)
    ctx = cmd.context_class(cmd, info_name=name)
    out = [f"# `{name}`", ""]
    out += ["```", cmd.get_usage(ctx).removeprefix("Usage: "), "```", ""]
    help_text = inspect.cleandoc(cmd.help or cmd.short_help or "")
    if help_text:
        out += [help_text.replace("\b\n", ""), ""]
    if _is_group(cmd):
        subs = [(n, c) for n, c in sorted(cmd.commands.items()) if not c.hidden]
        if subs:
            out += ["## Commands", "", "| command | what it does |", "|---|---|"]
            for n, c in subs:
                rel = _uri(path + [n]).split("/", 1)[1]
                out.append(
                    f"| [`{name} {n}`]({rel}) | {_cell(inspect.cleandoc(c.help or c.short_help or '').split(chr(10) * 2)[0])} |"
                )
            out.append("")
    args = [p for p in cmd.params if p.param_type_name == "argument"]
    opts = [p for p in cmd.params if _is_option(p) and not p.hidden]
    if args:
        out += ["## Arguments", "", "| argument | type | required | meaning |", "|---|---|---|---|"]
        for p in args:
            arg = (p.metavar or p.name or "").upper()
            out.append(f"| `{arg}` | {_type(p, ctx)} | {'yes' if p.required else 'no'} | {_cell(p.help or '')} |")
        out.append("")
    if opts:
        out += ["## Options", "", "| option | type | default | meaning |", "|---|---|---|---|"]
        for p in opts:
            names = ", ".join(f"`{o}`" for o in [*p.opts, *p.secondary_opts])
            out.append(f"| {names} | {_type(p, ctx)} | {_default(p, ctx)} | {_cell(p.help or '')} |")
        out.append("")
    out += ["", f"*Generated from `{name} --help` when the documentation is built.*", ""]
    return "\n".join(out)


def pages() -> dict:
    """src uri -> (command line, Markdown) for every command, the root first."""
    return {_uri(path): (" ".join(path), _page(path, cmd)) for path, cmd in _walk(_root(), ["fsmeter"])}


_PAGES: dict = {}


def on_config(config, **kwargs):
    _PAGES.clear()
    _PAGES.update(pages())
    entries = [uri if uri == "cli/index.md" else {title: uri} for uri, (title, _) in _PAGES.items()]
    for i, item in enumerate(config.nav or []):
        if isinstance(item, dict) and SECTION in item:
            config.nav[i] = {SECTION: entries}
    return config


def on_files(files, config, **kwargs):
    from mkdocs.structure.files import File

    for uri, (_, text) in _PAGES.items():
        files.append(File.generated(config, uri, content=text))
    return files
