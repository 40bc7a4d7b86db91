"""What the fork server of a ``--workers`` run does on starting (engine/workers.py), and only it.

A SIGTERM to the run's whole process group (a batch scheduler ending a job, ``kill -- -PGID``)
killed the fork server at once, and with it every worker (their parent-death signal), instead of
letting them stop as they do on the run's own SIGTERM: in-flight replies lost, paid for again. It
ignores SIGTERM, and ends with the run as before (its liveness pipe); each worker it forks takes
SIGTERM back before its run starts. A closed terminal's SIGHUP, sent to the whole foreground
process group, did the same: it and the workers ignore it, and the run stops them as on SIGTERM.

SIGTERM is also blocked here, so each worker starts with it blocked (a fork keeps the mask) and
unblocks it once its handler is in place (engine/workers.py): one sent in a worker's first
moments, ignored as the fork server ignores it, was lost, and the worker ran its whole share.
"""

import signal

signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
signal.signal(signal.SIGHUP, signal.SIG_IGN)  # a closed terminal's, to its process group too
