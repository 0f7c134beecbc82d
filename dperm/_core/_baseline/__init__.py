"""Kernel level: x86-64 baseline (scalar kernels, SSE2). Chosen by dperm._core."""
