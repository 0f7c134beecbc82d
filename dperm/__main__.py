"""`python -m dperm`: the dperm command line."""
import sys

from dperm.cli import main

if __name__ == "__main__":
    sys.exit(main())
