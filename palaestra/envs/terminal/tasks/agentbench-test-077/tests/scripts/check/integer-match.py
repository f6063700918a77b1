import sys

sys.exit(0 if int(sys.argv[1]) == int(sys.argv[2]) else 1)
