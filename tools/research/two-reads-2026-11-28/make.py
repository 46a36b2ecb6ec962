"""Lab copies: the solution with two-reads routes added (and a portable ladder, where wanted)."""
import sys
from pathlib import Path
ROOT = Path(__file__).resolve().parents[3]  # the checkout this file is in (it named /work/main at first)
sys.path.insert(0, str(ROOT / "tools"))
from solution_copies import PORTABLE, MTHREADS_SETTINGS  # noqa
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
text = (ROOT / "solution.py").read_text()
extra = '''
# two_reads lab routes
for _r in (
    Route("native_two_reads", native_math=True, sigmoid_table=False, two_pass=True, one_launch=True, threads=256,
          chunk=16, y_chunk=16),
    Route("native_two_reads_512", native_math=True, sigmoid_table=False, two_pass=True, one_launch=True,
          threads=512, chunk=32, y_chunk=32),
    Route("plain_two_reads", native_math=False, sigmoid_table=False, two_pass=True, one_launch=True, threads=512,
          chunk=32, y_chunk=32),
):
    ROUTE_TABLE[_r.name] = _r
ROUTES = tuple(ROUTE_TABLE)
'''
(out / "tr.py").write_text(text + extra)
(out / "tr_portable.py").write_text(text + PORTABLE + extra)
