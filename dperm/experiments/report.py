"""(being written: see the open issue on the rest of the paper)"""
