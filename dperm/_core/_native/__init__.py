"""Kernel level: built for the building CPU (-march=native). Chosen by dperm._core."""
