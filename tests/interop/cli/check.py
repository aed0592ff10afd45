"""`check.py STDOUT STDERR EXPR`: exits 0 when the Python expression EXPR holds, with `out` and
`err` the command's output and error text and `j` its output as JSON (None when it is not JSON);
otherwise prints what it saw. Used by tests/interop/cli.sh."""
import json
import sys

out = open(sys.argv[1], encoding="utf-8").read()
err = open(sys.argv[2], encoding="utf-8").read()
try:
    j = json.loads(out)
except ValueError:
    j = None
try:
    ok = eval(sys.argv[3], {"json": json}, {"out": out, "err": err, "j": j})
except Exception as e:  # a KeyError on an unexpected shape is a failure, not a crash
    ok = False
    print(f"    {type(e).__name__}: {e}", file=sys.stderr)
if not ok:
    print(f"    expected: {sys.argv[3]}", file=sys.stderr)
    sys.exit(1)
