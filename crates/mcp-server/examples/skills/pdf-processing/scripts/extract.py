import sys

print("fields of", sys.argv[1])
