"""The `dperm` command line (also `python -m dperm`): `main` and the parser in `main`,
CSV reading and model files in `_io`, streamed fits in `_stream`."""
from dperm.cli.main import build_parser, main

__all__ = ["main", "build_parser"]
