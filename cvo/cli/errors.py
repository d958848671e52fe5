"""The command line's two errors, apart so that any CLI module can raise them without importing the rest."""

from __future__ import annotations


class UsageError(Exception):
    """A one-line problem with the command line or its input; exits 2."""


class CommandFailed(Exception):
    """The command could not do its work for a reason outside its input (no cluster, a busy one); exits 1."""


class Refused(UsageError):
    """A request refused in oc's words (``oc adm upgrade``'s ``Reason:``/``Message:`` blocks): one ``error:``
    line, its message's later lines under it as they are, as kubectl's ``CheckErr`` prints them; exits 2."""

    whole = True
