for f in solution.py .lab/yabl/nosig.py .lab/yabl/noquant.py .lab/yabl/nosig_noquant.py .lab/yabl/none.py; do
  echo "== $f"
  timeout 100 python3 tools/research/two_pass_kernels.py --solution $f --shapes 8192x4096 --maths native --grad 16,1,4 --y 32,1,4 16,1,2 64,1,4 2>&1 | grep -v "^8192" | grep -v Warn
done
