"""The headless operations that both front ends (`hub` and `hub-tui`) call.

Each operation takes a typed request, reports logs and progress through the context's event
sink, returns a typed result, and can be stopped from another thread with a `Cancellation`.
The front ends only parse, call and print (or render); nothing here prints.
"""
