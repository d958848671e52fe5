"""``cvo completion bash|zsh|fish``: the shell completion script, as ``kubectl completion`` prints it.

The script comes from argcomplete (a maintained library that completes argparse parsers in all three
shells): the shell calls ``cvo`` back with ``_ARGCOMPLETE`` set, and :func:`cvo.cli.main.main` answers
from the same parser the command line uses, so completion never disagrees with ``--help``.
"""

from __future__ import annotations

import argparse
import sys

from cvo.cli.common import EXIT_OK

SHELLS = ("bash", "zsh", "fish")
HELP = "print the shell completion script for bash, zsh or fish"
DESCRIPTION = ("Print the script that lets your shell complete cvo's commands, flags and their values (bash, zsh "
               "or fish), as 'kubectl completion' does. The shell asks cvo itself, so completions always match "
               "--help.")
EPILOG = """\
Examples:
  # Complete cvo in this bash shell (add the line to ~/.bashrc to keep it)
  source <(cvo completion bash)

  # zsh: install the completion function where zsh looks for it
  cvo completion zsh > "${fpath[1]}/_cvo"

  # fish
  cvo completion fish > ~/.config/fish/completions/cvo.fish
"""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("completion", help=HELP, description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # from its own module: argcomplete's __init__ re-exports it without __all__ (mypy: not exported)
    from argcomplete.shell_integration import shellcode

    sys.stdout.write(shellcode(["cvo"], shell=args.shell))
    return EXIT_OK
