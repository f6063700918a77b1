import sys


def norm_newline(s: str) -> str:
    return s.replace("\r\n", "\n").replace("\r", "\n")


sys.exit(
    0 if norm_newline(sys.argv[1]).strip() == norm_newline(sys.argv[2]).strip() else 1
)
