"""`phi run`'s machinery around the agent: what gets in, when scheduled jobs are due, and
the control API.

`ratelimit` screens notifications (own, allow and deny lists, a per-author limit);
`schedules` says which scheduled jobs are due and checks the configured services;
`control` serves pause, resume and "do it now" over HTTP. All take the clock as an
argument and hold no agent code.
"""
