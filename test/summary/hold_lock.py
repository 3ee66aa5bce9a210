#!/usr/bin/env python3
"""hold_lock.py LOCKFILE SLOT READY RELEASE: holds slot SLOT of a maprect output directory's lock file (a POSIX
record lock on its 256 bytes, as maprect takes it) with a holder record, as a run's writer that is still alive
would; creates READY once held, and lets go when RELEASE appears."""
import fcntl
import os
import socket
import sys
import time

path, slot, ready, release = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 256, 256 * slot)
record = "chain %d's writer, host %s pid %d, since test" % (slot, socket.gethostname(), os.getpid())
os.pwrite(fd, (record.ljust(255) + "\n").encode(), 256 * slot)
open(ready, "w").close()
while not os.path.exists(release):
    time.sleep(0.02)
