"""Retrieving a release image as the CVO's RetrievePayload does: verified against the running release's keys,
refused when it cannot be (unless forced), pulled and loaded — with real images, real GnuPG keys and
signatures written by ``cvo.verify.sign``."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

import pytest

from cvo.images.build import build_release
from cvo.images.pull import PullOptions
from cvo.payload.loader import Release, load_release
from cvo.runner.decide import decide
from cvo.runner.releases import Catalogue, Desired, Releases, RetrieveFailed, default_loader
from cvo.runner.retrieve import RetrieveError, Retriever, Trust, check_signature
from cvo.verify.config import VerifierConfig, find_verifier_config
from cvo.verify.sign import sign
from tests.support.helpers import PAYLOADS
from tests.support.signing import Key, make_key, trusting_release


@dataclass
class World:
    root: Path
    key: Key
    other: Key
    store: Path
    options: PullOptions
    current: Release  # 4.16.0, trusting `key` and the file store
    images: dict[str, str]  # version → pull spec by digest (4.16.3 signed by `key`, 4.17.0 unsigned)

    def trust(self, **changes: object) -> Trust:
        config = find_verifier_config(m.obj for m in self.current.manifests)
        assert config is not None
        return Trust(config, **changes)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("retrieve")
    key, other = make_key(root / "gnupg-key", "release key <k@test.invalid>"), make_key(
        root / "gnupg-other", "someone else <o@test.invalid>")
    store = root / "signatures"
    options = PullOptions(cache_dir=root / "cache")
    images = {}
    for version in ("4.16.0", "4.16.3", "4.17.0"):
        directory = trusting_release(PAYLOADS / f"demo-{version}", root / version, {"k1": key.public},
                                     [f"file://{store}"])
        images[version] = build_release(directory, f"oci:{root / 'images'}:{version}", options).pull_spec
    digest = images["4.16.3"].rpartition("@")[2]
    sign(digest, "oci:images", key.uid, store, gnupg_home=key.home)
    current = load_release(root / "4.16.0", release_image=images["4.16.0"])
    return World(root, key, other, store, options, current, images)


def releases(world: World, trust: Trust | None) -> Releases:
    found = Releases(Catalogue(None), default_loader(), Retriever(world.options))
    found.trust = trust
    return found


def test_a_signed_image_is_verified_pulled_and_loaded(world: World) -> None:
    found = releases(world, world.trust())
    release = found.resolve(Desired("4.16.3", world.images["4.16.3"]))
    assert (release.version, release.image) == ("4.16.3", world.images["4.16.3"])
    retrieved = found.retrieved[world.images["4.16.3"]]
    assert retrieved.verified and not retrieved.accepted_risks
    assert (retrieved.directory / "release-manifests" / "release-metadata").is_file()


def test_an_unsigned_image_is_refused_with_the_cvos_message(world: World) -> None:
    image = world.images["4.17.0"]
    digest = image.rpartition("@")[2]
    with pytest.raises(RetrieveFailed) as refused:
        releases(world, world.trust()).resolve(Desired("4.17.0", image))
    assert refused.value.reason == "RetrievePayload"
    assert refused.value.message.startswith(
        f'Retrieving payload failed version="4.17.0" image="{image}" failure=The update cannot be verified: '
        f"unable to verify {digest} against keyrings: verifier-public-key-k1 (file://{world.store}: no signature "
        f"for {digest} (")


def test_forced_it_goes_on_and_the_failure_is_the_accepted_risk(world: World) -> None:
    image = world.images["4.17.0"]
    found = releases(world, world.trust())
    found.resolve(Desired("4.17.0", image, force=True))
    retrieved = found.retrieved[image]
    assert not retrieved.verified
    assert retrieved.accepted_risks.startswith(
        f'Target release version="4.17.0" image="{image}" cannot be verified, but continuing anyway because the '
        f"update was forced: unable to verify ")


def test_the_decision_carries_verified_and_the_accepted_risk(world: World) -> None:
    cv = {"spec": {"desiredUpdate": {"version": "4.16.3", "image": world.images["4.16.3"]}},
          "status": {"desired": {"version": "4.16.0", "image": world.images["4.16.0"]},
                     "history": [{"state": "Completed", "version": "4.16.0", "image": world.images["4.16.0"]}]}}
    plan = decide(cv, releases(world, world.trust()))
    assert plan is not None and (plan.state, plan.verified, plan.accepted_risks) == ("Updating", True, "")
    cv["spec"]["desiredUpdate"] = {"version": "4.17.0", "image": world.images["4.17.0"], "force": True}
    plan = decide(cv, releases(world, world.trust()))
    assert plan is not None and not plan.verified and "because the update was forced" in plan.accepted_risks


def test_a_tag_cannot_be_verified(world: World) -> None:
    with pytest.raises(RetrieveFailed, match="release images that are not accessed via digest cannot be verified"):
        releases(world, world.trust()).resolve(Desired("4.16.3", f"oci:{world.root / 'images'}:4.16.3"))


def test_a_signature_by_another_key_or_for_another_digest_does_not_verify(world: World, tmp_path: Path) -> None:
    store = tmp_path / "store"
    digest = world.images["4.17.0"].rpartition("@")[2]
    sign(digest, "oci:images", world.other.uid, store, gnupg_home=world.other.home)  # unknown key
    # a good signature of 4.16.3, filed under 4.17.0's digest
    signed = sign(world.images["4.16.3"].rpartition("@")[2], "oci:images", world.key.uid, tmp_path / "s2",
                  gnupg_home=world.key.home)
    (store / f"sha256={digest[7:]}" / "signature-2").write_bytes(signed.read_bytes())
    with pytest.raises(RetrieveError) as refused:
        check_signature(world.images["4.17.0"], "4.17.0", False, world.trust(signature_stores=(f"file://{store}",)))
    message = str(refused.value)
    assert "signature-1: invalid signature: signed by key" in message and "which is in no keyring" in message
    assert "signature-2: signature digest does not match" in message


def test_every_keyring_must_verify(world: World) -> None:
    config = find_verifier_config(m.obj for m in world.current.manifests)
    assert config is not None
    two = VerifierConfig({**config.keyrings, "verifier-public-key-k2": world.other.public}, config.stores, "cm")
    with pytest.raises(RetrieveError, match="against keyrings: verifier-public-key-k2"):
        check_signature(world.images["4.16.3"], "4.16.3", False, Trust(two))


def test_signatures_from_configmaps_and_signature_stores_replacing_the_releases(world: World, tmp_path: Path) -> None:
    image = world.images["4.17.0"]
    digest = image.rpartition("@")[2]
    signed = sign(digest, "oci:images", world.key.uid, tmp_path / "elsewhere", gnupg_home=world.key.home)
    # spec.signatureStores: the release's own store (which lacks it) is not read; the new one is
    assert check_signature(image, "4.17.0", False,
                           world.trust(signature_stores=(f"file://{tmp_path / 'elsewhere'}",))) == (True, "")
    # a signature ConfigMap of openshift-config-managed (binaryData sha256-HEX-N)
    cm = {"metadata": {"namespace": "openshift-config-managed", "name": "sigs",
                       "labels": {"release.openshift.io/verification-signatures": ""}},
          "binaryData": {f"sha256-{digest[7:]}-1": base64.b64encode(signed.read_bytes()).decode()}}
    assert check_signature(image, "4.17.0", False, world.trust(signature_configmaps=(cm,),
                                                              signature_stores=(f"file://{tmp_path / 'none'}",))
                           ) == (True, "")


def test_without_a_verifier_nothing_is_verified_or_refused(world: World) -> None:
    found = releases(world, Trust())
    found.resolve(Desired("4.17.0", world.images["4.17.0"]))
    assert not found.retrieved[world.images["4.17.0"]].verified
