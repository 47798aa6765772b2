"""Validation packs: manifests, fetch (HTTP on 127.0.0.1 and --from copies), the cache's integrity."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.validation_fixtures import REVISION, annomi, file_server, mentalalign, sha256
from tide_bench.cli.main import cli
from tide_bench.core.errors import ConfigError, DataError, TideBenchError
from tide_bench.validation import available_packs, fetch_pack, load_fetched, load_pack
from tide_bench.validation.manifest import PACKS_ENV
from tide_bench.validation.store import PACK_RECORD, pack_root


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    manifests, cache = tmp_path / "manifests", tmp_path / "cache"
    monkeypatch.setenv(PACKS_ENV, str(manifests))
    monkeypatch.setenv("TIDE_BENCH_CACHE", str(cache))
    return {"root": tmp_path, "manifests": manifests, "cache": cache}


@pytest.fixture
def annomi_pack(env: dict[str, Path]) -> Path:
    upstream = env["root"] / "upstream-annomi"
    annomi(upstream, env["manifests"])
    return upstream


def _nothing_written(env: dict[str, Path], name: str) -> None:
    folder = env["cache"] / "validation" / name
    leftovers = sorted(p.name for p in folder.iterdir()) if folder.exists() else []
    assert leftovers == [], f"left behind: {leftovers}"


def test_shipped_manifests_pin_every_file_and_map_their_attributes() -> None:
    assert {"mentalalign", "annomi", "counselbench"} <= set(available_packs())
    for name in ("mentalalign", "annomi"):
        pack = load_pack(name)
        assert pack.pinned_revision and all(f.pinned for f in pack.files)
        assert any(d.judge_factor for d in pack.dimensions)
    assert load_pack("annomi").epsilon == 0.2 and load_pack("annomi").redistribution == "none"
    assert not load_pack("counselbench").pinned_revision  # the Hub copy could not be inspected: said, not hidden


def test_fetch_over_http_checks_every_file(env: dict[str, Path], annomi_pack: Path) -> None:
    with file_server(annomi_pack) as (base, hits):
        fetched = fetch_pack("fx-annomi", accept_licence=True, base_url=base)
    assert {h.rsplit("/", 1)[1] for h in hits} == {"README.md", "AnnoMI-full.csv"}
    assert all(f"/fixture/AnnoMI/{REVISION}/" in h for h in hits)  # the pinned revision, not a branch
    assert fetched.record["files"]["AnnoMI-full.csv"] == sha256(annomi_pack / "AnnoMI-full.csv")
    assert load_fetched("fx-annomi").root == pack_root(load_pack("fx-annomi"))


def test_no_licence_acceptance_downloads_nothing(env: dict[str, Path], annomi_pack: Path) -> None:
    notices: list[str] = []
    with file_server(annomi_pack) as (base, hits), pytest.raises(ConfigError, match="accept its licence"):
        fetch_pack("fx-annomi", base_url=base, notice=notices.append)
    assert hits == [] and "none stated" in notices[0]
    _nothing_written(env, "fx-annomi")


@pytest.mark.parametrize(("mode", "message"), [("corrupt", "sha256 mismatch"), ("truncate", "truncated")])
def test_wrong_hash_or_truncated_download_leaves_nothing(
    env: dict[str, Path], annomi_pack: Path, mode: str, message: str
) -> None:
    with file_server(annomi_pack, {"AnnoMI-full.csv": mode}) as (base, _), pytest.raises(DataError, match=message):
        fetch_pack("fx-annomi", accept_licence=True, base_url=base)
    _nothing_written(env, "fx-annomi")


def test_a_failed_refetch_keeps_the_good_copy(env: dict[str, Path], annomi_pack: Path) -> None:
    with file_server(annomi_pack) as (base, _):
        fetch_pack("fx-annomi", accept_licence=True, base_url=base)
    with file_server(annomi_pack, {"AnnoMI-full.csv": "corrupt"}) as (base, _), pytest.raises(DataError):
        fetch_pack("fx-annomi", accept_licence=True, base_url=base, force=True)
    assert load_fetched("fx-annomi").record["files"]
    assert sorted(p.name for p in (env["cache"] / "validation" / "fx-annomi").iterdir()) == [REVISION]


def test_unknown_pack_is_named_with_the_available_ones(env: dict[str, Path]) -> None:
    with pytest.raises(ConfigError, match="unknown validation pack 'nope'") as err:
        fetch_pack("nope", accept_licence=True)
    assert "mentalalign" in str(err.value)
    with pytest.raises(ConfigError, match="unknown"):
        load_pack("../annomi")


def test_from_folder_archive_and_git_clone(env: dict[str, Path], annomi_pack: Path) -> None:
    nested = env["root"] / "download" / "AnnoMI-main"  # a repository download: one top-level folder
    shutil.copytree(annomi_pack, nested)
    assert fetch_pack("fx-annomi", accept_licence=True, source=nested.parent).record["files"]
    archive = env["root"] / "AnnoMI-main.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for f in annomi_pack.iterdir():
            z.write(f, f"AnnoMI-main/{f.name}")
    assert "archive" in fetch_pack("fx-annomi", accept_licence=True, source=archive, force=True).record["fetched_from"]
    tar = env["root"] / "AnnoMI.tar.gz"
    with tarfile.open(tar, "w:gz") as t:
        for f in annomi_pack.iterdir():
            t.add(f, f.name)
    assert fetch_pack("fx-annomi", accept_licence=True, source=tar, force=True).record["files"]


def test_from_git_clone_reads_the_pinned_revision(env: dict[str, Path], annomi_pack: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = env["root"] / "clone"
    shutil.copytree(annomi_pack, repo)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "fixture"], check=True)
    revision = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    manifest = env["manifests"] / "fx-annomi.yaml"
    raw = yaml.safe_load(manifest.read_text())
    raw["source"]["revision"] = revision
    manifest.write_text(yaml.safe_dump(raw))
    (repo / "AnnoMI-full.csv").write_text("changed in the working tree after the commit\n")
    fetched = fetch_pack("fx-annomi", accept_licence=True, source=repo)  # git objects at the revision, not the tree
    assert fetched.record["files"]["AnnoMI-full.csv"] == sha256(annomi_pack / "AnnoMI-full.csv")
    raw["source"]["revision"] = "f" * 40
    manifest.write_text(yaml.safe_dump(raw))
    with pytest.raises(DataError, match="does not hold the pinned revision"):
        fetch_pack("fx-annomi", accept_licence=True, source=repo, force=True)


def test_from_the_wrong_layout_is_refused(env: dict[str, Path], annomi_pack: Path) -> None:
    wrong = env["root"] / "wrong"
    wrong.mkdir()
    (wrong / "data.csv").write_text("a,b\n")
    with pytest.raises(DataError, match="does not look like fixture/AnnoMI"):
        fetch_pack("fx-annomi", accept_licence=True, source=wrong)
    _nothing_written(env, "fx-annomi")
    with pytest.raises(DataError, match="no such file"):
        fetch_pack("fx-annomi", accept_licence=True, source=env["root"] / "absent")


def test_an_optional_file_may_be_missing_and_says_so(env: dict[str, Path]) -> None:
    upstream = env["root"] / "ma"
    mentalalign(upstream, env["manifests"])
    (upstream / "MentalBench-100k/MentalBench-100k.zip").unlink()
    fetched = fetch_pack("fx-mentalalign", accept_licence=True, source=upstream)
    assert fetched.record["missing"] == ["MentalBench-100k/MentalBench-100k.zip"]
    assert fetched.path("replies") is None and fetched.path("human_ratings") is not None


def test_a_changed_cache_file_is_refused(env: dict[str, Path], annomi_pack: Path) -> None:
    fetched = fetch_pack("fx-annomi", accept_licence=True, source=annomi_pack)
    (fetched.root / "AnnoMI-full.csv").write_text("tampered\n")
    with pytest.raises(DataError, match="changed since it was fetched"):
        load_fetched("fx-annomi")


def test_unpinned_files_need_consent_and_are_recorded(env: dict[str, Path], annomi_pack: Path) -> None:
    manifest = env["manifests"] / "fx-annomi.yaml"
    raw = yaml.safe_load(manifest.read_text())
    for f in raw["files"]:
        f.pop("sha256")
        f["unpinned"] = True
    manifest.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match="no pinned hash"):
        fetch_pack("fx-annomi", accept_licence=True, source=annomi_pack)
    _nothing_written(env, "fx-annomi")
    fetched = fetch_pack("fx-annomi", accept_licence=True, source=annomi_pack, allow_unpinned=True)
    assert fetched.record["unpinned"] == ["README.md", "AnnoMI-full.csv"]


def test_cli_fetch_and_list(env: dict[str, Path], annomi_pack: Path) -> None:
    runner = CliRunner()
    refused = runner.invoke(cli, ["validation", "fetch", "fx-annomi", "--from", str(annomi_pack)])
    assert refused.exit_code == 2 and "--accept-licence" in refused.output
    done = runner.invoke(cli, ["validation", "fetch", "fx-annomi", "--accept-licence", "--from", str(annomi_pack)])
    assert done.exit_code == 0, done.output
    assert (pack_root(load_pack("fx-annomi")) / PACK_RECORD).is_file()
    listed = runner.invoke(cli, ["validation", "list"])
    assert listed.exit_code == 0 and "--map reflection_exists=supportive_reflection" in listed.output
    unknown = runner.invoke(cli, ["validation", "fetch", "nope", "--accept-licence"])
    assert unknown.exit_code == 2 and "unknown validation pack" in unknown.output


@settings(max_examples=25, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    payload=st.binary(max_size=300),
    member=st.sampled_from(
        ["AnnoMI-full.csv", "x/AnnoMI-full.csv", "../AnnoMI-full.csv", "/abs", "a/b/AnnoMI-full.csv"]
    ),
)
def test_fuzz_archives_give_a_clear_error_and_touch_nothing_outside(
    tmp_path_factory: pytest.TempPathFactory, payload: bytes, member: str
) -> None:
    root = tmp_path_factory.mktemp("fuzz")
    manifests, cache = root / "m", root / "cache"
    upstream = root / "up"
    annomi(upstream, manifests)
    archive = root / "copy.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("README.md", (upstream / "README.md").read_bytes())
        z.writestr(member, payload)
    mp = pytest.MonkeyPatch()
    mp.setenv(PACKS_ENV, str(manifests))
    mp.setenv("TIDE_BENCH_CACHE", str(cache))
    before = sorted(p.relative_to(root) for p in root.rglob("*") if "cache" not in p.parts)
    try:
        with pytest.raises(TideBenchError):
            fetch_pack("fx-annomi", accept_licence=True, source=archive)
    finally:
        mp.undo()
    assert sorted(p.relative_to(root) for p in root.rglob("*") if "cache" not in p.parts) == before
    assert not (cache / "validation" / "fx-annomi").exists() or not any((cache / "validation" / "fx-annomi").iterdir())
