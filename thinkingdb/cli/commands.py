"""What every command module shares: how one subcommand is declared (help, description, example), and
the help formatter."""

from __future__ import annotations

import argparse
import os
import sys


def terminal_columns() -> int:
    """The width ``shutil.get_terminal_size()`` gives: ``$COLUMNS``, else the terminal's, else 80.

    >>> import shutil; terminal_columns() == shutil.get_terminal_size().columns
    True
    """
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's formatter (descriptions and epilogs kept as written), its width found without
    importing ``shutil``: argparse makes a formatter for every option a parser gets, and ``shutil``
    (with ``bz2`` and ``lzma``) cost a cold ``thinkingdb query`` ~1.5 ms although it prints no help."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, terminal_columns() - 2 if width is None else width)


def add_command(sub, parents: list, name: str, help: str, example: str, func) -> argparse.ArgumentParser:
    """One subcommand: its help doubles as its description, and its epilog shows the example."""
    p = sub.add_parser(name, help=help, description=help, parents=parents,
                       formatter_class=HelpFormatter, epilog="example:\n  " + example)
    p.set_defaults(func=func)
    return p
