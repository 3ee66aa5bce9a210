#!/bin/bash
# expect_error.sh PATTERN COMMAND...: COMMAND must exit non-zero and print exactly one line starting with
# "maprect: error:", which must match the extended regular expression PATTERN.
pattern=$1
shift
output=$("$@" 2>&1)
rc=$?
lines=$(grep -c '^maprect: error:' <<<"$output")
if ((rc == 0)); then echo "FAIL: exit 0, expected non-zero"; echo "$output"; exit 1; fi
if ((lines != 1)); then echo "FAIL: $lines 'maprect: error:' lines, expected 1"; echo "$output"; exit 1; fi
if ! grep '^maprect: error:' <<<"$output" | grep -Eq -- "$pattern"; then
  echo "FAIL: the error line does not match /$pattern/"; echo "$output"; exit 1
fi
echo "ok: exit $rc, $(grep '^maprect: error:' <<<"$output")"
