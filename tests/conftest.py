"""Tests run on CPU through the Triton interpreter; set it before anything imports triton."""
import os
import sys
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
