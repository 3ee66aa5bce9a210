"""What the check_plan*.py scripts share: the plan's JSON document, and checks that collect their failures."""
import json
import os
import sys


def load(path):
    """The `maprect plan --json` document at `path`."""
    with open(path) as f:
        return json.load(f)


class Checks:
    """Records each failed check; stop_if_failed() exits naming them all, after the script's name."""

    def __init__(self):
        self.failures = []
        self.script = os.path.basename(sys.argv[0])

    def __call__(self, ok, what):
        if not ok:
            self.failures.append(what)

    def stop_if_failed(self):
        if self.failures:
            sys.exit(f"{self.script}: " + "; ".join(self.failures))
