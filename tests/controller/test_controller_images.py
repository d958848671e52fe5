"""``cvo run`` with release images: it installs its own image, pulls ``spec.desiredUpdate.image``, verifies it
against the running release's key (history ``verified``), refuses an unsigned one (``ReleaseAccepted=False``,
the cluster keeps its release) until the update is forced — in-process on the virtual clock, with real OCI
images, a real GnuPG key and signatures."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from cvo.clock import run_virtual
from cvo.cluster.api import cv_ref
from cvo.images.build import build_release
from cvo.images.pull import PullOptions
from cvo.runner.releases import Catalogue, Releases, default_loader
from cvo.runner.retrieve import Retriever
from cvo.verify.sign import sign
from tests.controller.test_controller_loop import completed, until
from tests.support.controller_harness import Harness, condition, new_cluster, set_desired
from tests.support.helpers import PAYLOADS
from tests.support.signing import make_key, trusting_release


def test_the_controller_pulls_verifies_refuses_and_is_forced(tmp_path: Path) -> None:
    key = make_key(tmp_path / "gnupg", "release key <k@test.invalid>")
    store = tmp_path / "signatures"
    options = PullOptions(cache_dir=tmp_path / "cache")
    images = {}
    for version in ("4.16.0", "4.16.3", "4.17.0"):
        directory = trusting_release(PAYLOADS / f"demo-{version}", tmp_path / version, {"k": key.public},
                                     [f"file://{store}"])
        images[version] = build_release(directory, f"oci:{tmp_path / 'images'}:{version}", options).pull_spec
    sign(images["4.16.3"].rpartition("@")[2], "oci:images", key.uid, store, gnupg_home=key.home)

    async def body() -> None:
        cluster, clock = new_cluster()
        a = Harness(cluster, clock, "a", own="")
        a.own = images["4.16.0"]  # cvo run --release IMAGE
        a.releases = Releases(Catalogue(None), default_loader(), Retriever(options, own_image=a.own))
        task = asyncio.create_task(a.replica.run())
        await until(completed(cluster, "4.16.0"), 3600)
        cv = await cluster.get(cv_ref())
        assert cv is not None and cv["status"]["desired"]["image"] == images["4.16.0"]

        await set_desired(cluster, version="4.16.3", image=images["4.16.3"])
        await until(completed(cluster, "4.16.3"), 3 * 3600)
        head = (await cluster.get(cv_ref()) or {})["status"]["history"][0]
        assert (head["image"], head["verified"]) == (images["4.16.3"], True)

        await set_desired(cluster, version="4.17.0", image=images["4.17.0"])

        async def refused() -> bool:
            return condition(await cluster.get(cv_ref()), "ReleaseAccepted").get("status") == "False"

        await until(refused, 600)
        cv = await cluster.get(cv_ref())
        accepted = condition(cv, "ReleaseAccepted")
        assert accepted["reason"] == "RetrievePayload"
        assert "failure=The update cannot be verified: unable to verify sha256:" in accepted["message"]
        assert cv is not None and cv["status"]["desired"]["version"] == "4.16.3"  # the cluster keeps its release
        assert not task.done()

        await set_desired(cluster, version="4.17.0", image=images["4.17.0"], force=True)
        await until(completed(cluster, "4.17.0"), 3 * 3600)
        head = (await cluster.get(cv_ref()) or {})["status"]["history"][0]
        assert head["verified"] is False
        assert "cannot be verified, but continuing anyway because the update was forced" in head["acceptedRisks"]
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    run_virtual(body)


@pytest.fixture(autouse=True)
def _no_user_keyring(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Verification never reads the user's keyring: GNUPGHOME points at an empty directory."""
    home = tmp_path / "user-gnupg"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("GNUPGHOME", str(home))
