"""What every command module shares: how one subcommand is declared (help, description, example)."""

from __future__ import annotations

import argparse


def add_command(sub, parents: list, name: str, help: str, example: str, func) -> argparse.ArgumentParser:
    """One subcommand: its help doubles as its description, and its epilog shows the example."""
    p = sub.add_parser(name, help=help, description=help, parents=parents,
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog="example:\n  " + example)
    p.set_defaults(func=func)
    return p
