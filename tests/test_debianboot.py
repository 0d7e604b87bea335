# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests of the boot leaves of 'lab check' (Debian's own config,
booted): the config steps of build's debian variant, and the verdict path
(console -> rows -> the leaf's verdict -> exit status), each with a
failure planted where it could hide."""

import re

import pytest

from lab.commands import check as checkcmd, debianboot
from lab.core import config
from lab.core.tally import Tally
from lab.guest import image, run, suites
from lab.kernel import build, check as kcheck, debian

from test_cache import PLAN, fake_boot

OK = "LAB-READY: 6.12\n# lab: start sanity:\nok 1 sanity\nLAB-EXIT: 0\n"


def test_changes_lists_every_option_that_differs(tmp_path):
    deb = tmp_path / "debian"
    deb.write_text("# comment\nCONFIG_A=y\nCONFIG_B=m\n# CONFIG_C is not set\n"
                   "CONFIG_D=\"x\"\n")

    def changes(final_text):
        final = tmp_path / ".config"
        final.write_text(final_text)
        return debian.changes(build.parse_fragment(deb), build.parse_dotconfig(final))

    assert changes("CONFIG_A=y\nCONFIG_B=y\nCONFIG_C=y\nCONFIG_D=\"y\"\nCONFIG_NEW=y\n") == [
        ("CONFIG_B", "m", "y"), ("CONFIG_C", "n", "y"), ("CONFIG_D", '"x"', '"y"'),
        ("CONFIG_NEW", "absent", "y")]
    # an option Debian's config does not know and the build leaves unset
    # is no change; one Debian sets and the build drops is
    assert changes("CONFIG_A=y\nCONFIG_B=m\nCONFIG_D=\"x\"\n# CONFIG_NEW is not set\n") == []
    assert changes("CONFIG_B=m\nCONFIG_D=\"x\"\n") == [("CONFIG_A", "y", "n")]


def test_the_debian_variant_merges_the_boot_fragments_and_hashes_debians_config(
        tmp_path, monkeypatch):
    assert build.fragments("x86_64", "debian", "stock") == [debian.FRAGMENT]
    assert build.fragments("arm64", "debian", "stock")[-1].name == "debian-boot-arm64.config"
    assert build.fragments("arm64", "debian", "patched")[-1].name == "patched.config"
    deb = tmp_path / "config.amd64_none_amd64"
    deb.write_text("CONFIG_A=y\n")
    monkeypatch.setattr(debian, "config_path", lambda deb_arch: deb)
    before = build.config_hash("x86_64", "debian", "stock")
    deb.write_text("CONFIG_A=n\n")
    assert build.config_hash("x86_64", "debian", "stock") != before


def test_the_boot_fragment_turns_no_built_in_option_off():
    """What the variant sets on Debian's config may add (a module built
    in, a test's option), never take a built-in option away."""
    for arch_name in config.ARCHES:
        for frag in debian.fragments(arch_name):
            for opt, val in build.parse_fragment(frag).items():
                assert val != "n" or opt.startswith("CONFIG_DEBUG_INFO"), (frag, opt)


@pytest.fixture
def boots(monkeypatch, tmp_path):
    """rows_of() with builds and the image faked, the plan one program
    long and each flavour's console given by the test (consoles[flavour])."""
    consoles = {"stock": OK, "patched": OK}
    monkeypatch.setattr(build, "build", lambda *a, **kw: tmp_path / "bzImage")
    monkeypatch.setattr(image, "build", lambda *a, **kw: None)
    monkeypatch.setattr(suites, "test_plan", lambda *a, **kw: PLAN)
    monkeypatch.setattr(debianboot, "changes", lambda arch_name, fl: ["CONFIG_X m y"])

    def boot(arch_name, flavour, variant, plan, tag, **kw):
        assert variant == "debian"
        text = consoles[flavour]
        b = fake_boot(tmp_path, text, name=f"{flavour}-{tag}")
        m = re.search(r"^LAB-EXIT: (\d+)", text, re.M)
        return run.Boot(b.console, int(m.group(1)) if m else None, "LAB-READY" in text,
                        False, 174.0, b.cmdline, plan=plan)
    monkeypatch.setattr(debianboot, "boot_and_parse", boot)
    return consoles


def test_a_clean_pair_of_boots_passes(boots):
    status, detail, error = debianboot.leaf("x86_64")
    assert status == "pass", error
    assert detail.startswith("1 stock and 1 patched test rows passed")
    assert "differs from Debian's in 1 options (stock), 1 (patched)" in detail


@pytest.mark.parametrize("flavour", ["stock", "patched"])
@pytest.mark.parametrize("console, why", [
    (OK.replace("ok 1 sanity", "not ok 1 sanity"), "sanity"),
    (OK.replace("LAB-EXIT: 0\n", ""), "completed"),
    (OK.replace("LAB-EXIT: 0", "LAB-EXIT: 1"), "completed"),
    (OK.replace("LAB-EXIT", "[   12.500000] WARNING: CPU: 1 PID: 9 at mm/rmap.c:1 "
                "x+0x1/0x2\nLAB-EXIT"),
     "console"),
    ("LAB-READY: 6.12\nLAB-EXIT: 0\n", "completed"),
    ("", "boot"),
])
def test_a_failure_on_either_kernel_fails_the_leaf(boots, flavour, console, why):
    boots[flavour] = console
    status, detail, error = debianboot.leaf("x86_64")
    assert status == "fail"
    assert f"x86_64/debian/{flavour}/" in error and why in error


def test_arm64_patched_needs_the_series_cpu_features(boots):
    status, _, error = debianboot.leaf("arm64")
    assert status == "fail" and "cpu-features" in error
    boots["patched"] = "CPU features: detected: TLB range maintenance instructions\n" \
        "CPU features: detected: Hardware dirty bit management\n" + OK
    assert debianboot.leaf("arm64")[0] == "pass"


def test_a_failed_boot_leaf_ends_lab_check_non_zero(monkeypatch, tmp_path):
    v = kcheck.select(["debian-amd64-boot"])[0]
    monkeypatch.setattr(config, "WORK", tmp_path)
    monkeypatch.setattr(kcheck, "stamp_inputs", lambda *a, **kw: {"x": 1})
    monkeypatch.setattr(debianboot, "stamp_inputs", lambda arch_name: {"y": 1})
    monkeypatch.setattr(kcheck, "needs", lambda v, t: [])
    monkeypatch.setattr(debianboot, "leaf",
                        lambda arch_name: ("fail", "1 failed: x", "x86_64/debian/patched/x"))
    tally = Tally()
    checkcmd.check(v, tally)
    assert ("fail", "check/x86_64/debian-amd64-boot", "1 failed: x") in tally.rows
    assert tally.exit_status() == 1
    # and the verdict is stored under its key: the same inputs read it back
    tally = Tally()
    monkeypatch.setattr(debianboot, "leaf", lambda arch_name: pytest.fail("not cached"))
    checkcmd.check(v, tally)
    assert tally.rows[0][0] == "fail" and tally.rows[0][2].endswith("cached")


POOL = "http://deb.example/pool/updates/main/l/linux-6.12"


class _Apt:
    """run() and urlopen() as apt and the pool would answer: apt's index
    lists the versions in listed (and prints the pool URI of the newest
    linux-source-6.12 unless uris is False); the pool serves body (None:
    404; an exception: raised while reading)."""

    def __init__(self, listed, body=b"pool deb", uris=True):
        self.listed, self.body, self.uris, self.calls, self.urls = listed, body, uris, [], []

    def run(self, cmd, cwd=None, capture=False, check=True, **kw):
        import subprocess
        self.calls.append(cmd)
        out, rc = "", 0
        if cmd[:2] == ["apt-cache", "madison"]:
            out = "".join(f" {cmd[2]} | {v} | http://deb.example bookworm-security/main "
                          "arm64 Packages\n" for v in self.listed)
        elif "--print-uris" in cmd:
            out = (f"'{POOL}/linux-source-6.12_6.12.118-1%7edeb12u1_all.deb' x 1 "
                   "SHA256:0\n") if self.uris else ""
            rc = 0 if self.uris else 100
        elif cmd[:2] == ["apt-get", "download"]:
            pkg, version = cmd[2].split("=", 1)
            pkg, _, arch = pkg.partition(":")
            (cwd / f"{pkg}_{version.replace(':', '%3a')}_{arch or 'all'}.deb").write_bytes(
                b"apt")
        return subprocess.CompletedProcess(cmd, rc, out, "")

    def urlopen(self, url, timeout=None):
        import io
        import urllib.error
        self.urls.append(url)
        if self.body is None:
            raise urllib.error.HTTPError(url, 404, "Not Found", {}, None)
        body = self.body

        class Body(io.BytesIO):
            def read(self, n=-1):
                if isinstance(body, BaseException):
                    raise body
                return super().read(n)
        return Body(body if isinstance(body, bytes) else b"")


def _pin(monkeypatch, version=config.SOURCE_VERSION, body=b"pool deb"):
    import hashlib
    monkeypatch.setitem(config.CONFIG_DEB_SHA256, version,
                        {"arm64": hashlib.sha256(body).hexdigest()})


def _download(monkeypatch, tmp_path, apt, version=config.SOURCE_VERSION):
    from lab.kernel import source
    monkeypatch.setattr(debian, "run", apt.run)
    monkeypatch.setattr(source, "run", apt.run)
    monkeypatch.setattr(source.urllib.request, "urlopen", apt.urlopen)
    deb = tmp_path / f"linux-config-6.12_{version.replace(':', '%3a')}_arm64.deb"
    debian.download_config("arm64", version, deb)
    return deb


def test_a_listed_config_comes_from_apt(monkeypatch, tmp_path):
    """While apt's index lists the version, apt-get downloads it (apt
    checks it against the signed index) and the pool is not asked."""
    apt = _Apt([config.SOURCE_VERSION])
    _download(monkeypatch, tmp_path, apt)
    assert ["apt-get", "download", f"linux-config-6.12:arm64={config.SOURCE_VERSION}"] \
        in apt.calls
    assert not apt.urls


def test_an_unlisted_pinned_config_comes_from_the_pool_with_its_sha256(monkeypatch,
                                                                       tmp_path):
    """Once the index lists only a newer version, the pinned .deb comes from
    the source package's directory of the pool, as apt reaches it, and is
    kept."""
    _pin(monkeypatch)
    apt = _Apt(["6.12.118-1~deb12u1"])
    deb = _download(monkeypatch, tmp_path, apt)
    assert deb.read_bytes() == b"pool deb"
    assert apt.urls == [f"{POOL}/linux-config-6.12_6.12.117-1~deb12u1_arm64.deb"]
    assert not any(c[:2] == ["apt-get", "download"] and "--print-uris" not in c
                   for c in apt.calls)
    assert [p.name for p in tmp_path.iterdir()] == [deb.name]


def test_the_pool_is_the_pinned_one_when_apt_prints_none(monkeypatch, tmp_path):
    _pin(monkeypatch)
    apt = _Apt([], uris=False)
    _download(monkeypatch, tmp_path, apt)
    assert apt.urls == [f"{config.SOURCE_POOL}/linux-config-6.12_6.12.117-1~deb12u1_arm64.deb"]


def test_a_pool_file_name_has_no_epoch(monkeypatch, tmp_path):
    """Pool file names drop a version's epoch; the local name keeps it as
    apt writes it (%3a)."""
    _pin(monkeypatch, "1:6.12.117-1~deb12u1")
    apt = _Apt([])
    deb = _download(monkeypatch, tmp_path, apt, version="1:6.12.117-1~deb12u1")
    assert apt.urls == [f"{POOL}/linux-config-6.12_6.12.117-1~deb12u1_arm64.deb"]
    assert deb.name == "linux-config-6.12_1%3a6.12.117-1~deb12u1_arm64.deb" and deb.exists()


def test_a_pool_download_with_another_sha256_is_refused(monkeypatch, tmp_path):
    """A .deb from the pool whose sha256 is not the pinned one is an error,
    and nothing is left where the lab would take it next time."""
    _pin(monkeypatch)
    apt = _Apt([], body=b"something else")
    with pytest.raises(debian.LabError, match="not the pinned"):
        _download(monkeypatch, tmp_path, apt)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("error", [
    __import__("http.client").client.IncompleteRead(b"pool", 1000),
    ConnectionResetError("reset"), KeyboardInterrupt()])
def test_a_download_cut_short_leaves_nothing(monkeypatch, tmp_path, error):
    """A connection that ends early is a LabError, not a traceback, and an
    interrupt goes through; neither leaves a file behind."""
    _pin(monkeypatch)
    apt = _Apt([], body=error)
    want = KeyboardInterrupt if isinstance(error, KeyboardInterrupt) else debian.LabError
    with pytest.raises(want):
        _download(monkeypatch, tmp_path, apt)
    assert not list(tmp_path.iterdir())


def test_a_config_in_neither_index_nor_pool_is_an_error(monkeypatch, tmp_path):
    _pin(monkeypatch)
    apt = _Apt([], body=None)
    with pytest.raises(debian.LabError, match="neither apt's index nor the archive's pool"):
        _download(monkeypatch, tmp_path, apt)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("version,pins", [
    ("6.12.119-1~deb12u1", {}),                          # a version not pinned
    (config.SOURCE_VERSION, {"amd64": "0" * 64}),        # pinned, not for this arch
])
def test_an_unlisted_config_without_a_pin_is_an_error(monkeypatch, tmp_path, version, pins):
    """A config the index does not list and the lab pins no sha256 of (a
    newer source taken when the pinned one went, an arch not pinned) is
    not downloaded blind."""
    monkeypatch.setitem(config.CONFIG_DEB_SHA256, version, pins)
    apt = _Apt(["6.12.118-1~deb12u1"])
    with pytest.raises(debian.LabError, match="pins no sha256"):
        _download(monkeypatch, tmp_path, apt, version=version)
    assert not apt.urls


def _source_download(monkeypatch, work, apt):
    from lab.kernel import source
    monkeypatch.setattr(source, "available_versions", lambda: apt.listed)
    monkeypatch.setattr(source, "run", apt.run)
    monkeypatch.setattr(source.urllib.request, "urlopen", apt.urlopen)
    return source.download()


def test_the_pinned_source_comes_from_the_pool_once_unlisted(monkeypatch, work_in_tmp):
    """The pinned linux-source-6.12 that apt's index no longer lists comes
    from the pool with its pinned sha256, not the newest one apt lists."""
    import hashlib
    monkeypatch.setattr(config, "SOURCE_DEB_SHA256", hashlib.sha256(b"pool deb").hexdigest())
    apt = _Apt(["6.12.118-1~deb12u1"])
    deb, version = _source_download(monkeypatch, work_in_tmp, apt)
    assert version == config.SOURCE_VERSION and deb.read_bytes() == b"pool deb"
    assert apt.urls == [f"{POOL}/linux-source-6.12_6.12.117-1~deb12u1_all.deb"]
    assert not any(c[:2] == ["apt-get", "download"] and "--print-uris" not in c
                   for c in apt.calls)
    # the next fetch takes the file it kept, without asking apt or the pool
    assert _source_download(monkeypatch, work_in_tmp, _Apt([])) == (deb, version)


def test_a_pool_source_with_another_sha256_is_refused(monkeypatch, work_in_tmp):
    apt = _Apt(["6.12.118-1~deb12u1"], body=b"something else")
    with pytest.raises(debian.LabError, match="not the pinned"):
        _source_download(monkeypatch, work_in_tmp, apt)
    assert not list((work_in_tmp / "dl").glob("linux-source-*"))


def test_a_source_gone_from_the_pool_too_is_the_newest_with_a_warning(monkeypatch,
                                                                     work_in_tmp, capsys):
    """Only when the pool answers 404 does the lab take the newest 6.12 apt
    lists, and says its results are not comparable."""
    apt = _Apt(["6.12.118-1~deb12u1"], body=None)
    deb, version = _source_download(monkeypatch, work_in_tmp, apt)
    assert version == "6.12.118-1~deb12u1"
    assert ["apt-get", "download", "linux-source-6.12=6.12.118-1~deb12u1"] in apt.calls
    assert "NOT comparable" in capsys.readouterr().err
