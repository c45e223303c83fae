"""Re-export of `edgehub.events` (the log/event sink) under the core namespace."""

from edgehub.events import EventSink, LogEvent, current_sink, use_sink

__all__ = ["EventSink", "LogEvent", "current_sink", "use_sink"]
