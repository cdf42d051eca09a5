"""A minimal chat-bot command handler on the campusid bridge SDK (see README.md)."""
