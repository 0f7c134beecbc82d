"""Kernel level: x86-64-v4 (AVX-512). Chosen by dperm._core."""
