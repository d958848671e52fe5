"""What a sweep of a release would change, object by object, before it runs (``cvo diff``).

Holds the field pairing under cvo's merge rules (:mod:`cvo.diff.fields`: only the fields the manifest sets,
as :func:`cvo.runner.apply.merge` compares them), the decision per task (:mod:`cvo.diff.compute`: added,
changed, replaced, deleted, in sweep order, by the rules of :func:`cvo.runner.apply.apply_task`), where the
live side comes from (:mod:`cvo.diff.sources`: a cluster, saved objects, or another release) and the output
(:mod:`cvo.diff.render`: unified diffs, counts per kind and run level, the JSON/YAML document).
May import: ``cvo.runner`` (the apply and merge rules) and everything it may import (``cvo.payload``,
``cvo.cluster``'s interface, ``cvo.plan``, ``cvo.gates``); never a backend (the CLI picks one).
"""
