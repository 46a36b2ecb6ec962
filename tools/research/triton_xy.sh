# Sourced by the device runners with xy set (30, 31 or 35: the upstream wheel packed in .whl/tXY0.part.* by
# ../shared/tools/triton_parts.sh, unpacked into /tmp/tvXY and put first on PYTHONPATH; 36: the machine's own Triton).
if [ "$xy" != 36 ]; then T=/tmp/tv$xy; rm -rf $T; mkdir -p $T && (cat .whl/t${xy}0.part.* | xz -d | tar -x -C $T)
  export PYTHONPATH=$T; [ "$xy" = 35 ] && cp -r tools/research/amd_backend_stub $T/triton/backends/amd; fi
