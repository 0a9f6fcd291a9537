"""Exit codes of the `agentls` command (docs/HEADLESS.md has the same table)."""

OK = 0
BACKEND_ERROR = 1  # the backend answered with an error
# The run finished but its changes could not be written (a file changed on disk meanwhile, or
# a write failed and everything was restored): nothing was written.
CHANGES_NOT_WRITTEN = 1
NO_BACKEND = 2  # no usable backend: missing, unauthenticated or unreachable
NO_PROGRESS = 3
MAX_ITERATIONS = 4
USAGE = 64  # bad command-line arguments (argparse's own exits use 2 before we run)
INVALID_JSON = 65  # `loop --completion json`: the output held no valid status object
PROMPT_NOT_FOUND = 66
SESSION_BUSY = 69  # another process runs the session (`--wait` queues behind it)
ARTIFACTS_UNWRITABLE = 73  # run artifacts (or the session store) could not be written
TIMEOUT = 75
CONFIG_ERROR = 78  # the configuration is invalid: the message names the key or file
INTERRUPTED = 130
