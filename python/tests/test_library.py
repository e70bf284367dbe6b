"""Importing the package and finding the library.

Each case runs in a fresh interpreter (subprocess) with a controlled
environment, since discovery reads MLATUNE_LIBRARY and caches what it
loaded.
"""

import os
import shutil
import subprocess
import sys
import textwrap
import unittest

import support

import mlatune


def run_python(code, env_changes=None, pythonpath=support.PYTHON_DIR):
    env = {k: v for k, v in os.environ.items() if k not in ("MLATUNE_LIBRARY", "LD_LIBRARY_PATH")}
    env["PYTHONPATH"] = pythonpath
    env.update(env_changes or {})
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                       cwd=support.temp_dir())
    return r.returncode, r.stdout + r.stderr


class ImportTest(unittest.TestCase):

    def test_import_needs_neither_torch_nor_the_library(self):
        code, out = run_python("""
            import sys
            sys.modules["torch"] = None  # any 'import torch' now fails
            import mlatune
            print("imported", mlatune.__version__, mlatune.LENGTHS_UNKNOWN, mlatune.MLT_LENGTHS_UNKNOWN)
            """)
        self.assertEqual(code, 0, out)
        self.assertIn("imported 0.2.0 -1 -1", out)

    def test_python_3_9_syntax(self):
        # the package must run on 3.9: compile every file with the 3.9 grammar
        import ast
        pkg = os.path.join(support.PYTHON_DIR, "mlatune")
        for name in sorted(os.listdir(pkg)):
            if name.endswith(".py"):
                with open(os.path.join(pkg, name)) as f:
                    ast.parse(f.read(), filename=name, feature_version=(3, 9))


class DiscoveryTest(unittest.TestCase):

    def test_not_found_names_every_path_tried(self):
        code, out = run_python("""
            import mlatune
            try:
                mlatune.Runtime()
            except mlatune.LibraryNotFound as e:
                assert isinstance(e, mlatune.Error) and isinstance(e, OSError)
                print("tried:", [p for p, _ in e.tried])
                print(e)
            """)
        self.assertEqual(code, 0, out)
        self.assertIn(mlatune.INSTALLED_PATH, out)
        self.assertIn("libmlatune.so.0: cannot open shared object file", out)
        self.assertIn("Set MLATUNE_LIBRARY", out)

    def test_a_wrong_mlatune_library_is_the_only_path_tried(self):
        code, out = run_python("""
            import mlatune
            try:
                mlatune.load_library()
            except mlatune.LibraryNotFound as e:
                print(len(e.tried), e)
            """, {"MLATUNE_LIBRARY": "/nonexistent/libmlatune.so"})
        self.assertEqual(code, 0, out)
        self.assertIn("1 libmlatune not found", out)
        self.assertIn("/nonexistent/libmlatune.so: cannot open shared object file: No such file or directory "
                      "(from MLATUNE_LIBRARY)", out)

    def test_a_library_that_is_not_libmlatune(self):
        libm = None
        for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/lib64", "/lib"):
            if os.path.exists(os.path.join(d, "libm.so.6")):
                libm = os.path.join(d, "libm.so.6")
                break
        if libm is None:
            self.skipTest("no libm.so.6 found to stand for a foreign library")
        with self.assertRaises(mlatune.LibraryNotFound) as cm:
            mlatune.load_library(libm)
        self.assertIn(f"{libm} lacks mlt_status_string", str(cm.exception))

    def test_installed_layout(self):
        # <prefix>/lib/python/mlatune/ finds <prefix>/lib/libmlatune.so.0 with no environment
        stub = support.stub_library()
        if stub is None:
            self.skipTest("no C compiler or mlatune.h: cannot build the stub library")
        prefix = os.path.join(support.temp_dir(), "prefix")
        shutil.rmtree(prefix, ignore_errors=True)
        libdir = os.path.join(prefix, "lib")
        shutil.copytree(os.path.join(support.PYTHON_DIR, "mlatune"), os.path.join(libdir, "python", "mlatune"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(stub.path, os.path.join(libdir, "libmlatune.so.0"))
        code, out = run_python("""
            import mlatune
            rt = mlatune.Runtime()
            print("loaded", rt.library.path, rt.arch)
            """, pythonpath=os.path.join(libdir, "python"))
        self.assertEqual(code, 0, out)
        self.assertIn(f"loaded {os.path.join(libdir, 'libmlatune.so.0')} stub_00", out)

    def test_same_path_loads_once(self):
        stub = support.stub_library()
        if stub is None:
            self.skipTest("no C compiler or mlatune.h: cannot build the stub library")
        self.assertIs(mlatune.load_library(stub.path), stub)
        self.assertEqual(stub.version, mlatune.HEADER_VERSION)
        self.assertTrue(stub.supports_split_q)

    def test_versions(self):
        # mlt_api_version's answer; none (a 0.1 library); a newer one is refused: its mlt_decode_args may
        # have grown past what the package packs
        if support.stub_library() is None:
            self.skipTest("no C compiler or mlatune.h: cannot build the stub library")
        self.assertEqual(support.stub_library().version, (0, 3))
        self.assertEqual(support.stub_library(api_0_1=True).version, (0, 1))
        path = support.compile_c(os.path.join(support.HERE, "stub", "stub_mlatune.c"),
                                 os.path.join(support.temp_dir(), "libmlatune_stub_0_4.so"), shared=True,
                                 defines=["MLT_VERSION_MINOR_OVERRIDE=4"])
        with self.assertRaises(mlatune.LibraryNotFound) as cm:
            mlatune.load_library(path)
        self.assertIn(f"{path} has C API 0.4, newer than this mlatune package's mirrors (0.3)", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
