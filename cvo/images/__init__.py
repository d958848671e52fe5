"""Release images: pull specs, registries, OCI layouts, layers, and building and reading release images.

A release reaches a real cluster as an image (``spec.desiredUpdate.image``); this package turns a pull
spec into the two payload directories the rest of cvo reads, and builds such images from a directory.
``reference.py`` parses pull specs (``REGISTRY/REPO[:TAG][@sha256:…]``, ``oci:DIR[:TAG]``), ``digest.py``
checks bytes against their digest while they stream, ``repository.py`` is the one interface to where
manifests and blobs live (a registry, an OCI image layout), ``media.py`` names the media types,
``errors.py`` holds the one error kind (``str()`` names the image and what is wrong).  ``manifest.py``
parses manifests, indexes and configs; ``registry.py`` (with ``auth.py``, ``options.py``) and ``layout.py``
are the two repositories; ``extract.py`` applies layers safely; ``pull.py`` (with ``cache.py``) turns a pull
spec into a cached tree; ``build.py`` is ``cvo release new``; ``info.py`` is ``cvo release info``.
May import: ``cvo.payload`` (input limits, release metadata, filters) only.
"""
