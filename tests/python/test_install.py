"""The install, launch and replay commands of docs/pytorch.md, read from the page and run as
written, offline (PIP_NO_INDEX) in a scratch folder holding a copy of python/ and docs/:

- the system install (the pip half of the quick path; the build half is python/build_clib.sh,
  which CI's own build stands in for) into a --target folder instead of /usr/local;
- `torchrun … -m reduce_verify.example` (torch's own torchrun) over that folder;
- the virtual environment line, verbatim, then the environment's torchrun line, verbatim;
- the replay lines, verbatim: their first token must be the manifest's result_digest, and
  `reduce-verify replay` of the recording must verify it.

The installed package carries its own libreduce_verify_c.so and reduce-verify and works with
nothing else from the source tree ($REDUCE_VERIFY_LIB and $REDUCE_VERIFY only tell setup.py
which built files to copy)."""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

try:
    import torch  # noqa: F401
except ImportError:
    print("torch is not installed (Debian: python3-torch): skipped")
    sys.exit(77)

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "pytorch.md"
QUICK = "python/build_clib.sh && "
SYSTEM_ONLY = "--break-system-packages"


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
        self.library = os.environ.get("REDUCE_VERIFY_LIB")
        self.tool = os.environ.get("REDUCE_VERIFY")
        self.assertTrue(self.library and self.tool, "CTest sets REDUCE_VERIFY_LIB, REDUCE_VERIFY")
        self.scratch = pathlib.Path(tempfile.mkdtemp(prefix="rv-install-"))
        # Copies, so that setuptools' build folders never land in the source tree.
        shutil.copytree(ROOT / "python", self.scratch / "python", ignore=shutil.ignore_patterns(
            "build", "*.egg-info", "__pycache__", "_lib", "_bin"))
        (self.scratch / "docs").mkdir()
        shutil.copy2(PAGE, self.scratch / "docs" / "pytorch.md")
        # Nothing of the source tree or of CTest's environment reaches the commands.
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("REDUCE_VERIFY_LIB", "REDUCE_VERIFY", "PYTHONPATH")}
        self.env["PIP_NO_INDEX"] = "1"
        self.env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        self.build_env = dict(self.env, REDUCE_VERIFY_LIB=self.library,
                              REDUCE_VERIFY_BIN=self.tool)

    def tearDown(self):
        shutil.rmtree(self.scratch, ignore_errors=True)

    def shell(self, command, cwd, env, timeout=120):
        print(f"$ {command}", file=sys.stderr, flush=True)
        begun = time.monotonic()
        done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=timeout)
        print(f"  [{time.monotonic() - begun:.1f} s]", file=sys.stderr, flush=True)
        self.assertEqual(done.returncode, 0, f"{command}\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def test_the_pages_commands_work_as_written(self):
        commands = page_commands()
        quick = one(commands, r"build_clib\.sh && .*pip install")
        self.assertTrue(quick.startswith(QUICK), quick)
        self.assertIn(SYSTEM_ONLY, quick)
        site = self.scratch / "site"
        system_install = quick[len(QUICK):].replace(SYSTEM_ONLY, f"--no-deps --target {site}")
        self.shell(system_install, self.scratch, self.build_env)
        self.assertTrue((site / "reduce_verify" / "_lib" / "libreduce_verify_c.so").is_file())
        self.assertTrue((site / "reduce_verify" / "_bin" / "reduce-verify").is_file())
        self.assertTrue((site / "reduce_verify" / "py.typed").is_file())
        self.assertTrue((site / "bin" / "reduce-verify").is_file())

        # torch's torchrun (torch 1.13's refuses --nproc-per-node) over the installed package.
        torchrun = one(commands, r"^torchrun ")
        system_run = self.scratch / "system-run"
        system_run.mkdir()
        printed = self.shell(torchrun, system_run, dict(self.env, PYTHONPATH=str(site)))
        system_digests = digests_printed(printed)
        self.assertEqual(len(system_digests), 1, printed)

        venv = one(commands, r"^/usr/bin/python3 -m venv ")
        self.shell(venv, self.scratch, self.build_env)
        self.assertTrue((self.scratch / ".venv" / "bin" / "reduce-verify").is_file())
        venv_run = one(commands, r"^\.venv/bin/python -m torch\.distributed\.run ")
        printed = self.shell(venv_run, self.scratch, self.env)
        self.assertEqual(digests_printed(printed), system_digests, printed)

        # The recording the environment's run made, replayed by the page's lines.
        import reduce_verify  # the source tree's, only to read the manifest
        entries = reduce_verify.read_manifest(self.scratch / "recording")
        self.assertEqual([(e["step"], e["bucket"]) for e in entries], [(2, 0)])
        replays = [c for c in commands if re.search(r"reduce-verify (digest|run) ", c)]
        self.assertEqual(len(replays), 2, replays)
        for replay in replays:
            printed = self.shell(replay, self.scratch, self.env)
            self.assertEqual(printed.split()[0], entries[0]["result_digest"], replay)
        # The whole recording verifies itself, by the page's line.
        printed = self.shell(one(commands, r"reduce-verify replay "), self.scratch, self.env)
        self.assertEqual(printed, "step 2 bucket 0: OK\n1 verified, 0 failed\n")
        # python -m reduce_verify runs the same packaged tool.
        printed = self.shell(".venv/bin/python -m reduce_verify digest --op mean --inputs "
                             "recording/step000002/bucket000/rank*.f32", self.scratch, self.env)
        self.assertEqual(printed.split()[0], entries[0]["result_digest"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
