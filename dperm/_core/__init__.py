"""Compiled kernels of dperm: arithmetic only, no validation or policy."""
