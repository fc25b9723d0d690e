"""Registration of the commands that live beside their features.

Each entry is ``register(subparsers, common_parent)``; modules are imported here so a missing feature
is an import error at start-up, never a silent absence.
"""

from . import cli_search, cli_tools

REGISTER: list = [cli_search.register, cli_tools.register]
