"""The `dperm` command line (also `python -m dperm`): `main` runs it, `parser` builds the
arguments, one module per sub-command (`fit`, `predict`, `reproduce`), what they share in
`_common`, CSV reading and model files in `_io`, streamed fits in `_stream`."""
from dperm.cli.main import build_parser, main

__all__ = ["main", "build_parser"]
