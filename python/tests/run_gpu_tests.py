#!/usr/bin/env python3
"""ctest's python_gpu: runs tests/test_gpu.py; exits 77 (ctest: skipped)
when torch or a CUDA device is missing, 0 when every test passed, 1
otherwise.  A skip says why on stdout."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.pop("MLATUNE_SKIP_GPU_TESTS", None)

try:
    import torch
except ImportError:
    print("python_gpu skipped: torch is not installed")
    sys.exit(77)
if not torch.cuda.is_available():
    print(f"python_gpu skipped: torch {torch.__version__} reports no CUDA device")
    sys.exit(77)

result = unittest.TextTestRunner(verbosity=2).run(unittest.defaultTestLoader.loadTestsFromName("test_gpu"))
sys.exit(0 if result.wasSuccessful() else 1)
