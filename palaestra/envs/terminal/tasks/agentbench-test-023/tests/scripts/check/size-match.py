import sys

UNITS = {
    "B": 1,
    "Byte": 1,
    "K": 1024,
    "KB": 1024,
    "M": 1024**2,
    "MB": 1024**2,
    "G": 1024**3,
    "GB": 1024**3,
    "T": 1024**4,
    "TB": 1024**4,
    "P": 1024**5,
    "PB": 1024**5,
}


def analysis_size(size_str: str) -> float:
    size_str = size_str.strip()
    for size_unit, factor in UNITS.items():
        if size_str.endswith(size_unit):
            # float rather than int: du -h prints sizes such as 4.0K
            return float(size_str[: -len(size_unit)]) * factor
    return float(size_str)


sys.exit(0 if analysis_size(sys.argv[1]) == analysis_size(sys.argv[2]) else 1)
