"""The release payload, as pure data: reading a release directory into manifests and the task graph.

Holds the loader (byte-wise file order, Go templates, YAML/JSON documents, the parse cache), the
manifest and release models, inclusion filters (profile, capabilities, feature sets), the happens-before
task graph (run levels, parallel components, Jobs as barriers), semver and condition helpers.
May import: nothing of cvo but ``cvo.log`` and ``cvo.clock`` — no cluster, no runner.
"""
