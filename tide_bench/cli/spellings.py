"""lm-eval's option spellings accepted everywhere: ``--model_args`` for ``--model-args``.

Users type options from lm-eval's documentation. Rather than list every underscore form as a
second name of every option (which doubles ``--help``), the command line is rewritten before
click parses it: ``--x_y`` becomes ``--x-y`` when the command has ``--x-y`` and not ``--x_y``,
and the few lm-eval names that differ in more than punctuation map to ours.
"""

from __future__ import annotations

import click

# lm-eval's name -> ours, where more than "_" vs "-" differs.
RENAMED = {
    "--output_path": "--output-dir",
    "--apply_chat_template": "--chat-template",
}


def _option_names(command: click.Command) -> set[str]:
    names: set[str] = set()
    for param in command.params:
        if isinstance(param, click.Option):
            names.update(param.opts)
            names.update(param.secondary_opts)
    return names


def normalize(command: click.Command, args: list[str]) -> list[str]:
    """``args`` with lm-eval spellings replaced by the command's own option names."""
    known = _option_names(command)
    out: list[str] = []
    for arg in args:
        if arg == "--":
            out.extend(args[len(out) :])
            break
        if not arg.startswith("--"):
            out.append(arg)
            continue
        name, sep, value = arg.partition("=")
        if name not in known:
            candidate = RENAMED.get(name) or name.replace("_", "-")
            if candidate in known:
                name = candidate
        out.append(name + sep + value)
    return out


class SpellingGroup(click.Group):
    """A group whose subcommands (and sub-groups) accept lm-eval's spellings."""

    def resolve_command(self, ctx: click.Context, args: list[str]):  # type: ignore[no-untyped-def]
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None and not isinstance(command, click.Group):
            rest = normalize(command, rest)
        return name, command, rest
