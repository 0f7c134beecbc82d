"""Kernel level: x86-64-v3 (AVX2 + FMA). Chosen by dperm._core."""
