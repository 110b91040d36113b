"""The HTTP front door: request info, filters, handlers, Status responses, the CLI."""
