"""phi running: the loop around the agent, and what `phi run` and `phi sandbox run` start.

`poller` is the loop (notification batches, scheduled jobs, what the control API drives);
`inbox` says which notifications a tick runs on and marks them seen; `pending` keeps those
a failed run left unanswered for a later tick (or sets them aside); `ratelimit` screens
notifications (own, allow and deny lists, a per-author limit);
`schedules` says which scheduled jobs are due and checks the configured services;
`control` serves pause, resume and "do it now" over HTTP; `app` assembles a runtime from
settings; `main` and `sandbox_run` are the two main jobs; `timing` tells the model's time
apart from phi's own.
"""
