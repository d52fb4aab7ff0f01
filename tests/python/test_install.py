"""`pip install ./python` as the README says, offline and with no build dependency to fetch
(--no-build-isolation --no-index), into a scratch folder (--target) instead of the system:
the installed package carries its own copy of libreduce_verify_c.so and works with nothing
else from the source tree."""

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

try:
    import torch  # noqa: F401
except ImportError:
    print("torch is not installed (Debian: python3-torch): skipped")
    sys.exit(77)

SOURCE = pathlib.Path(__file__).resolve().parents[2] / "python"


class PipInstall(unittest.TestCase):
    def test_the_installed_package_works_alone(self):
        library = os.environ.get("REDUCE_VERIFY_LIB")
        self.assertTrue(library, "REDUCE_VERIFY_LIB names the built library (CTest sets it)")
        with tempfile.TemporaryDirectory(prefix="rv-pip-") as scratch:
            # A copy, so that setuptools' build folders never land in the source tree.
            source = pathlib.Path(scratch) / "python"
            shutil.copytree(SOURCE, source, ignore=shutil.ignore_patterns(
                "build", "*.egg-info", "__pycache__", "_lib"))
            target = pathlib.Path(scratch) / "site"
            subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",
                            "--no-build-isolation", "--no-index", "--no-deps",
                            "--target", str(target), str(source)],
                           check=True, env=dict(os.environ, REDUCE_VERIFY_LIB=library))
            env = {k: v for k, v in os.environ.items() if k != "REDUCE_VERIFY_LIB"}
            env["PYTHONPATH"] = str(target)
            code = ("import reduce_verify, torch\n"
                    "print(reduce_verify.library_path())\n"
                    "print(reduce_verify.digest(torch.arange(10, dtype=torch.float32)))\n")
            done = subprocess.run([sys.executable, "-c", code], env=env, cwd=scratch,
                                  capture_output=True, text=True, check=True)
            path, digest = done.stdout.split()
            self.assertTrue(path.startswith(str(target)), path)
            self.assertEqual(digest, "1b47c5ba539d8b7c8ee234ebc22ff21d")


if __name__ == "__main__":
    unittest.main(verbosity=2)
