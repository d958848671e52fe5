"""The ``cvo`` command line: argument parsing, the backend from the flags, and printing — nothing else.

Every command parses its flags once into options (one dataclass per concern: the cluster, the payload
selection, the output, the command's own) and is a thin call into the packages below (plan, gates, runner, scenario, operators); exit codes
are 0 ok, 1 failed or blocked, 2 bad input, 130/143 interrupted.
May import: anything in cvo.
"""
