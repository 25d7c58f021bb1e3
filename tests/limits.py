"""How long a test waits for a child process: a guard against a hang, never a time limit.

Issue 30: a test must not fail because the machine is busy. A child that takes seconds on a quiet
machine can take minutes at load 12 (a new user's ``pytest -n 2`` took 35 minutes there, and
``compare.py --quick`` hit the 600 s limit its test gave it). Every ``subprocess.run`` of a
script, a study's quick mode or the CLI therefore waits ``HANG_GUARD`` seconds: one hour, over
60 times the slowest child measured on a quiet machine (``compare.py --quick``, about 40 s), and
still under CI's 90-minute limit, so that a child that truly hangs still ends the run with its
output rather than a silent stall.
"""

HANG_GUARD = 3600  # seconds

#: How long a test waits for a state it polls for (a server up, a page rendered, a retry loop) or
#: for a socket's answer: again a guard against a hang, never a limit. The literal 10-60 s waits
#: these replaced held on a quiet machine and could expire at load 12, where a server's start
#: alone was seen to take tens of seconds. Ten minutes: a wait that long is a hang.
WAIT_GUARD = 600  # seconds


def run_script(script, *args) -> str:
    """Run ``python script *args`` under :data:`HANG_GUARD`; its stdout, after asserting that it
    exited 0 (the assertion message is the tail of its output)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, str(script), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout
