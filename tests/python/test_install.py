"""The install, launch and replay commands of docs/pytorch.md, read from the page and run as
written, in a scratch folder holding a copy of python/, the CMake sources and docs/ (pip
builds the C library and the tool from them: python/pyproject.toml, scikit-build-core).

Which commands depends on the torch of the Python that runs this test (CTest runs it once
under each, docs/pytorch.md names both):
- torch 2.x (the virtual environment of ci/python-envs.sh): the page's venv line, verbatim
  (a new venv, `pip install torch==2.13.0 ./python`), then `reduce_verify.digest` of four ones
  in it, which must print what `xxh128sum` prints for those 16 bytes; the environment's
  torchrun line and the replay lines, verbatim: their first token must be the manifest's
  result_digest, and `reduce-verify replay` must verify the recording; then the page's
  `pip wheel` line, and that wheel installed into a second venv in another folder, with no
  source tree anywhere near, where the quick start runs again;
- torch 1.x (Debian's python3-torch): the page's system line, into a --target folder instead
  of /usr/local, and torch's own `torchrun` over it.

pip reaches the machine's registries for the build requirements (scikit-build-core) and
torch's wheel on disk. The copy of the sources and the CMake build folder live at one place in
the build tree (an install-test folder beside the library CTest names), kept from run to
run and shared by both torches' runs (a CTest resource lock keeps them apart): the C++ is
compiled once, not once per pip command. The installed package carries its own libreduce_verify_c.so and
reduce-verify and works with nothing else from the source tree."""

import os
import pathlib
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unittest

try:
    import torch
except ImportError:
    print("torch is not installed (Debian: python3-torch): skipped")
    sys.exit(77)

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "pytorch.md"
SYSTEM_ONLY = "--break-system-packages"
MODERN_TORCH = int(torch.__version__.split(".")[0]) >= 2
# What a build needs of the repository (pip builds from python/ with the root CMakeLists.txt).
SOURCES = ("CMakeLists.txt", "cmake", "core", "verify", "capi", "python", "LICENSE")
QUICK_START = "import reduce_verify, torch; print(reduce_verify.digest(torch.ones(4)))"


def page_commands():
    """Every line of the page's ```sh blocks."""
    blocks = re.findall(r"```sh\n(.*?)```", PAGE.read_text(), flags=re.S)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def one(commands, pattern):
    found = [c for c in commands if re.search(pattern, c)]
    assert len(found) == 1, f"docs/pytorch.md: {len(found)} commands match {pattern!r}: {found}"
    return found[0]


def digests_printed(output):
    return set(re.findall(r"rank \d+: \S+ parameters ([0-9a-f]{32})", output))


class PageCommands(unittest.TestCase):
    def setUp(self):
        library = os.environ.get("REDUCE_VERIFY_LIB")
        self.assertTrue(library, "CTest sets REDUCE_VERIFY_LIB (build/capi/…)")
        self.place = pathlib.Path(library).resolve().parents[1] / "tests" / "python" / "install-test"
        self.scratch = pathlib.Path(tempfile.mkdtemp(prefix="rv-install-"))
        self.tree = self.place / "repository"  # a fixed path: the CMake tree's source
        shutil.rmtree(self.tree, ignore_errors=True)
        self.tree.mkdir(parents=True)
        # Copies, so that no build folder lands in the source tree.
        for name in SOURCES:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, self.tree / name, ignore=shutil.ignore_patterns(
                    "*.egg-info", "__pycache__", "_lib", "_bin"))
            else:
                shutil.copy2(source, self.tree / name)
        (self.tree / "docs").mkdir()
        shutil.copy2(PAGE, self.tree / "docs" / "pytorch.md")
        # Nothing of the source tree or of CTest's environment reaches the commands.
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("REDUCE_VERIFY_LIB", "REDUCE_VERIFY", "PYTHONPATH")}
        self.env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        # One CMake tree for every pip command of this run (scikit-build-core's build-dir).
        self.build_env = dict(self.env, SKBUILD_BUILD_DIR=str(self.place / "cmake-tree"))

    def tearDown(self):
        shutil.rmtree(self.scratch, ignore_errors=True)
        shutil.rmtree(self.tree, ignore_errors=True)

    def shell(self, command, cwd, env, timeout=900):
        print(f"$ {command}", file=sys.stderr, flush=True)
        begun = time.monotonic()
        done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=timeout)
        print(f"  [{time.monotonic() - begun:.1f} s]", file=sys.stderr, flush=True)
        self.assertEqual(done.returncode, 0, f"{command}\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def expected_digest_of_four_ones(self):
        ones = self.scratch / "ones.f32"
        ones.write_bytes(struct.pack("<4f", 1.0, 1.0, 1.0, 1.0))  # torch.ones(4)'s bytes
        printed = subprocess.run(["xxh128sum", str(ones)], capture_output=True, text=True,
                                 check=True).stdout
        return printed.split()[0]

    def check_installed(self, site):
        self.assertTrue((site / "reduce_verify" / "_lib" / "libreduce_verify_c.so").is_file())
        self.assertTrue((site / "reduce_verify" / "_bin" / "reduce-verify").is_file())
        self.assertTrue((site / "reduce_verify" / "py.typed").is_file())

    @unittest.skipUnless(MODERN_TORCH, "the venv, wheel and replay lines run under torch 2.x")
    def test_venv_wheel_and_replay_as_written(self):
        commands = page_commands()
        expected = self.expected_digest_of_four_ones()

        venv = one(commands, r"^python3 -m venv \.venv && ")
        self.shell(venv, self.tree, self.build_env)
        site = next((self.tree / ".venv" / "lib").glob("python3*/site-packages"))
        self.check_installed(site)
        self.assertTrue((self.tree / ".venv" / "bin" / "reduce-verify").is_file())
        printed = self.shell(f'.venv/bin/python -c "{QUICK_START}"', self.tree, self.env)
        self.assertEqual(printed.split()[-1], expected)

        venv_run = one(commands, r"^\.venv/bin/python -m torch\.distributed\.run ")
        printed = self.shell(venv_run, self.tree, self.env)
        self.assertEqual(len(digests_printed(printed)), 1, printed)

        # The recording the environment's run made, replayed by the page's lines.
        import reduce_verify  # the source tree's, only to read the manifest
        entries = reduce_verify.read_manifest(self.tree / "recording")
        self.assertEqual([(e["step"], e["bucket"]) for e in entries], [(2, 0)])
        replays = [c for c in commands if re.search(r"reduce-verify (digest|run) ", c)]
        self.assertEqual(len(replays), 2, replays)
        for replay in replays:
            printed = self.shell(replay, self.tree, self.env)
            self.assertEqual(printed.split()[0], entries[0]["result_digest"], replay)
        printed = self.shell(one(commands, r"reduce-verify replay "), self.tree, self.env)
        self.assertEqual(printed, "step 2 bucket 0: OK\n1 verified, 0 failed\n")
        # python -m reduce_verify runs the same packaged tool.
        printed = self.shell(".venv/bin/python -m reduce_verify digest --op mean --inputs "
                             "recording/step000002/bucket000/rank*.f32", self.tree, self.env)
        self.assertEqual(printed.split()[0], entries[0]["result_digest"])

        # The page's wheel, installed where no source tree is, and the quick start there.
        self.shell(one(commands, r"pip wheel "), self.tree, self.build_env)
        wheels = list((self.tree / "dist").glob("reduce_verify-*.whl"))
        self.assertEqual(len(wheels), 1, wheels)
        elsewhere = self.scratch / "elsewhere"
        elsewhere.mkdir()
        shutil.copy2(wheels[0], elsewhere)
        shutil.rmtree(self.tree)  # nothing of the sources is left to find
        # The second environment borrows this test's torch (a .pth naming its site-packages)
        # rather than unpacking torch's wheel again: a minute of CI saved, nothing of
        # reduce_verify's borrowed.
        self.shell(f"python3 -m venv v && v/bin/pip install -q --no-deps {wheels[0].name}",
                   elsewhere, self.env)
        torch_site = pathlib.Path(torch.__file__).resolve().parents[1]
        (next((elsewhere / "v" / "lib").glob("python3*/site-packages")) / "borrowed-torch.pth"
         ).write_text(f"{torch_site}\n")
        printed = self.shell(f'v/bin/python -c "{QUICK_START}"', elsewhere, self.env)
        self.assertEqual(printed.split()[-1], expected)
        ones = self.scratch / "ones.f32"
        printed = self.shell(f"v/bin/reduce-verify digest --inputs {ones}", elsewhere, self.env)
        self.assertEqual(printed.split()[0], expected)

    @unittest.skipIf(MODERN_TORCH, "the system line is for Debian's python3-torch 1.13")
    def test_system_install_as_written(self):
        commands = page_commands()
        system = one(commands, r"^/usr/bin/python3 -m pip install ")
        self.assertIn(SYSTEM_ONLY, system)
        site = self.scratch / "site"
        self.shell(system.replace(SYSTEM_ONLY, f"--no-deps --target {site}"), self.tree,
                   self.build_env)
        self.check_installed(site)
        self.assertTrue((site / "bin" / "reduce-verify").is_file())
        printed = self.shell(f'/usr/bin/python3 -c "{QUICK_START}"', self.scratch,
                             dict(self.env, PYTHONPATH=str(site)))
        self.assertEqual(printed.split()[-1], self.expected_digest_of_four_ones())

        # torch's torchrun (torch 1.13's refuses --nproc-per-node) over the installed package.
        torchrun = one(commands, r"^torchrun ")
        system_run = self.scratch / "system-run"
        system_run.mkdir()
        printed = self.shell(torchrun, system_run, dict(self.env, PYTHONPATH=str(site)))
        self.assertEqual(len(digests_printed(printed)), 1, printed)


if __name__ == "__main__":
    unittest.main(verbosity=2)
